package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/policies"
)

// Agent serves a node's driver, its egress rules and what it says of
// itself to the control plane.
type Agent struct {
	Driver driver.Driver
	// Firewall is the node's egress rules (nil: the node has none, and
	// says so when asked to apply them).
	Firewall Firewall
	// Info says what the node has (nil: only its name).
	Info func(ctx context.Context) (Info, error)
	Name string
	Log  *slog.Logger
	// Leave, when set, takes this server out of the cluster (its engine
	// out of the swarm, its rules and its join forgotten): called when the
	// control plane removes it ('paddock node rm'). Once it has answered,
	// Serve returns ErrLeft.
	Leave func(ctx context.Context) error

	leftOnce sync.Once
	left     chan struct{}
}

// ErrLeft is Serve's answer once the server has left the cluster.
var ErrLeft = errors.New("this server was removed from the cluster ('paddock node rm'): its engine left the swarm, and its join is forgotten; to join again, run the command a new 'paddock node add' prints")

// Firewall is a node's egress rules: policies.Manager.
type Firewall interface {
	SetFence(fence []netip.Prefix)
	Sync(boxes []policies.Box) error
	Report(box string) (policies.Report, error)
}

// rules is the body of a firewall sync: the node's boxes, and what none
// of them reaches (the other servers).
type rules struct {
	Boxes []policies.Box `json:"boxes"`
	Fence []netip.Prefix `json:"fence"`
}

// Info is what a node says of itself: what placement weighs, and what
// 'paddock nodes' shows.
type Info struct {
	Name        string  `json:"name"`
	CPUs        int     `json:"cpus"`
	MemoryBytes int64   `json:"memory_bytes"`
	MemoryFree  int64   `json:"memory_free"`
	DiskBytes   int64   `json:"disk_bytes"`
	DiskFree    int64   `json:"disk_free"`
	Load1       float64 `json:"load1"`
	Engine      string  `json:"engine"`
	// Routes are this server's routes that take addresses of its box
	// network away from its bridge, each as "ADDR goes by ROUTE": its
	// boxes there cannot be reached (policies.RouteConflicts). A start
	// is refused beside one; these are the ones that came after it (a
	// VPN connecting).
	Routes []string `json:"routes,omitempty"`
}

// Handler is the agent's routes. It trusts its caller: serve it only
// behind mutual TLS (Serve).
func (a *Agent) Handler() http.Handler {
	m := http.NewServeMux()
	call := func(pattern string, f func(r *http.Request) (any, error)) {
		m.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			v, err := f(r)
			if err != nil {
				writeError(w, err)
				return
			}
			writeJSON(w, v)
		})
	}
	d := a.Driver
	p := Prefix
	call("POST "+p+"prepare", func(r *http.Request) (any, error) { return nil, d.Prepare(r.Context()) })
	call("POST "+p+"image-exists", func(r *http.Request) (any, error) {
		var in struct{ Ref string }
		if err := readJSON(r, &in); err != nil {
			return nil, err
		}
		ok, err := d.ImageExists(r.Context(), in.Ref)
		return map[string]bool{"exists": ok}, err
	})
	call("GET "+p+"boxes", func(r *http.Request) (any, error) { return d.Boxes(r.Context()) })
	call("POST "+p+"boxes", func(r *http.Request) (any, error) {
		var spec driver.BoxSpec
		if err := readJSON(r, &spec); err != nil {
			return nil, err
		}
		return nil, d.CreateBox(r.Context(), spec)
	})
	call("POST "+p+"boxes/{name}/start", func(r *http.Request) (any, error) { return nil, d.StartBox(r.Context(), r.PathValue("name")) })
	call("POST "+p+"boxes/{name}/stop", func(r *http.Request) (any, error) { return nil, d.StopBox(r.Context(), r.PathValue("name")) })
	call("DELETE "+p+"boxes/{name}", func(r *http.Request) (any, error) { return nil, d.RemoveBox(r.Context(), r.PathValue("name")) })
	call("GET "+p+"snapshots", func(r *http.Request) (any, error) { return d.Snapshots(r.Context()) })
	call("POST "+p+"snapshots", func(r *http.Request) (any, error) {
		var in struct{ Box, ID string }
		if err := readJSON(r, &in); err != nil {
			return nil, err
		}
		return nil, d.Snapshot(r.Context(), in.Box, in.ID)
	})
	call("DELETE "+p+"snapshots/{id}", func(r *http.Request) (any, error) { return nil, d.RemoveSnapshot(r.Context(), r.PathValue("id")) })
	call("GET "+p+"volumes", func(r *http.Request) (any, error) { return d.Volumes(r.Context()) })
	call("POST "+p+"volumes", func(r *http.Request) (any, error) {
		var v driver.VolumeRef
		if err := readJSON(r, &v); err != nil {
			return nil, err
		}
		return nil, d.CreateVolume(r.Context(), v)
	})
	call("DELETE "+p+"volumes/{kind}/{name}", func(r *http.Request) (any, error) { return nil, d.RemoveVolume(r.Context(), volumeOf(r)) })
	call("POST "+p+"volumes/{kind}/{name}/clean", func(r *http.Request) (any, error) {
		return nil, d.CleanVolume(r.Context(), volumeOf(r), r.URL.Query().Get("image"))
	})

	call("GET "+p+"info", func(r *http.Request) (any, error) {
		if a.Info == nil {
			return Info{Name: a.Name}, nil
		}
		return a.Info(r.Context())
	})
	call("PUT "+p+"firewall", func(r *http.Request) (any, error) {
		if a.Firewall == nil {
			return nil, ErrUnsupported
		}
		var in rules
		if err := readJSON(r, &in); err != nil {
			return nil, err
		}
		a.Firewall.SetFence(in.Fence)
		return nil, a.Firewall.Sync(in.Boxes)
	})
	m.HandleFunc("POST "+p+"leave", func(w http.ResponseWriter, r *http.Request) {
		if a.Leave == nil {
			writeError(w, ErrUnsupported)
			return
		}
		if err := a.Leave(r.Context()); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, nil)
		if a.left != nil {
			a.leftOnce.Do(func() { close(a.left) })
		}
	})
	call("GET "+p+"firewall/{box}", func(r *http.Request) (any, error) {
		if a.Firewall == nil {
			return nil, ErrUnsupported
		}
		return a.Firewall.Report(r.PathValue("box"))
	})

	// A push and a pull done as the box's user (driver.UserFiles).
	// userFiles is the driver's UserFiles and the call's box user.
	userFiles := func(r *http.Request) (driver.UserFiles, int, error) {
		uf, ok := d.(driver.UserFiles)
		if !ok {
			return nil, 0, ErrUnsupported
		}
		uid, err := uidOf(r)
		return uf, uid, err
	}
	call("GET "+p+"boxes/{name}/user/folder", func(r *http.Request) (any, error) {
		uf, uid, err := userFiles(r)
		if err != nil {
			return nil, err
		}
		var out pushFolder
		out.Folder, out.NotFolder, out.Writable, err = uf.PushFolder(r.Context(), r.PathValue("name"), uid, r.URL.Query().Get("dir"))
		return out, err
	})
	m.HandleFunc("PUT "+p+"boxes/{name}/user/files", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		uf, uid, err := userFiles(r)
		var max int64
		if err == nil {
			max, err = strconv.ParseInt(q.Get("max"), 10, 64)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		blocked, left, err := uf.UnpackAsUser(r.Context(), r.PathValue("name"), uid, q.Get("stage"), q.Get("dir"), max, r.Body)
		if err != nil {
			if left {
				w.Header().Set(leftHeader, "1")
			}
			writeError(w, err)
			return
		}
		writeJSON(w, unpacked{Blocked: blocked, Left: left})
	})
	call("GET "+p+"boxes/{name}/user/unreadable", func(r *http.Request) (any, error) {
		uf, uid, err := userFiles(r)
		if err != nil {
			return nil, err
		}
		u, err := uf.Unreadable(r.Context(), r.PathValue("name"), uid, r.URL.Query().Get("path"))
		return map[string]string{"unreadable": u}, err
	})
	m.HandleFunc("GET "+p+"boxes/{name}/user/archive", func(w http.ResponseWriter, r *http.Request) {
		uf, uid, err := userFiles(r)
		var rc io.ReadCloser
		if err == nil {
			rc, err = uf.PackAsUser(r.Context(), r.PathValue("name"), uid, r.URL.Query().Get("path"))
		}
		stream(w, rc, err)
	})
	m.HandleFunc("GET "+p+"boxes/{name}/exec", a.serveExec)
	m.HandleFunc("PUT "+p+"boxes/{name}/files", func(w http.ResponseWriter, r *http.Request) {
		if err := d.CopyTo(r.Context(), r.PathValue("name"), r.URL.Query().Get("dir"), r.Body); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, nil)
	})
	m.HandleFunc("GET "+p+"boxes/{name}/files", func(w http.ResponseWriter, r *http.Request) {
		rc, err := d.CopyFrom(r.Context(), r.PathValue("name"), r.URL.Query().Get("path"))
		stream(w, rc, err)
	})
	m.HandleFunc("GET "+p+"volumes/{kind}/{name}/archive", func(w http.ResponseWriter, r *http.Request) {
		rc, err := d.ReadVolume(r.Context(), volumeOf(r), r.URL.Query().Get("image"))
		stream(w, rc, err)
	})
	m.HandleFunc("GET "+p+"snapshot-images", func(w http.ResponseWriter, r *http.Request) {
		sh, ok := d.(driver.SnapshotShipper)
		if !ok {
			writeError(w, ErrUnsupported)
			return
		}
		rc, err := sh.SaveSnapshots(r.Context(), r.URL.Query()["id"])
		stream(w, rc, err)
	})
	m.HandleFunc("PUT "+p+"snapshot-images", func(w http.ResponseWriter, r *http.Request) {
		sh, ok := d.(driver.SnapshotShipper)
		if !ok {
			writeError(w, ErrUnsupported)
			return
		}
		if err := sh.LoadSnapshots(r.Context(), r.URL.Query()["id"], r.Body); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, nil)
	})
	m.HandleFunc("PUT "+p+"volumes/{kind}/{name}/archive", func(w http.ResponseWriter, r *http.Request) {
		if err := d.WriteVolume(r.Context(), volumeOf(r), r.URL.Query().Get("image"), r.Body); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, nil)
	})

	// Every op of the driver seam (driver.Op: what the node's driver may
	// do besides its own methods), by name.
	call("POST "+p+"ops/{op}", func(r *http.Request) (any, error) {
		in, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, 1<<20))
		if err != nil {
			return nil, fmt.Errorf("the request's body: %w", err)
		}
		return driver.Serve(r.Context(), d, r.PathValue("op"), in)
	})
	return m
}

func volumeOf(r *http.Request) driver.VolumeRef {
	return driver.VolumeRef{Kind: r.PathValue("kind"), Name: r.PathValue("name")}
}

// stream answers with rc's bytes, and a trailer that says whether they
// are all of them.
func stream(w http.ResponseWriter, rc io.ReadCloser, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Trailer", streamTrailer)
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, rc); err != nil {
		w.Header().Set(streamTrailer, "cut: "+err.Error())
		return
	}
	w.Header().Set(streamTrailer, "complete")
}

// Serve serves the agent on l with cfg, which must require and verify
// client certificates (CA.ServerConfig makes one), until ctx ends.
func (a *Agent) Serve(ctx context.Context, l net.Listener, cfg *tls.Config) error {
	a.left = make(chan struct{})
	srv := &http.Server{Handler: a.Handler(), TLSConfig: cfg, ReadHeaderTimeout: 10 * time.Second}
	if a.Log != nil {
		// Its own errors (a handler's panic) in the agent's log, as
		// errors, not in the standard library's.
		srv.ErrorLog = slog.NewLogLogger(a.Log.Handler(), slog.LevelError)
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-a.left:
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	err := srv.Serve(tls.NewListener(l, cfg))
	select {
	case <-a.left:
		return ErrLeft
	default:
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}
