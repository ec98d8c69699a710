package node

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/jsonhttp"
	"github.com/paddock-dev/paddock/policies"
)

// Remote is the driver of one node, through its agent.
type Remote struct {
	// Name is the node's name, in errors.
	Name string
	base string
	hc   *http.Client

	mu sync.Mutex
	// sever ends with Sever: every call in flight is tied to it.
	sever context.Context
	cut   context.CancelFunc
	fence []netip.Prefix // sent with every firewall Sync
}

// The driver's own methods, the streamed abilities, and every op
// (driver.Op), carried by Send.
var (
	_ driver.Driver          = (*Remote)(nil)
	_ driver.UserFiles       = (*Remote)(nil)
	_ driver.SnapshotShipper = (*Remote)(nil)
	_ driver.Sender          = (*Remote)(nil)
)

// NewRemote is the driver of the node called name whose agent is at addr
// (host:port), reached with cfg (CA.ClientConfig).
func NewRemote(name, addr string, cfg *tls.Config) *Remote {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	tr.ForceAttemptHTTP2 = false
	tr.WriteBufferSize, tr.ReadBufferSize = 256<<10, 256<<10
	r := &Remote{Name: name, base: "https://" + addr + Prefix, hc: &http.Client{Transport: tr}}
	r.sever, r.cut = context.WithCancel(context.Background())
	return r
}

// Sever ends every call in flight to the node, and its connections: the
// node is down (the swarm says so, or its agent stopped answering), and a
// call on a link that was cut would otherwise wait for TCP to give up.
// Later calls dial again.
func (r *Remote) Sever() {
	r.mu.Lock()
	r.cut()
	r.sever, r.cut = context.WithCancel(context.Background())
	r.mu.Unlock()
	r.hc.CloseIdleConnections()
}

// bound is ctx, ended too by Sever; stop releases it.
func (r *Remote) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	r.mu.Lock()
	sever := r.sever
	r.mu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(sever, func() { cancel(fmt.Errorf("node %s is down", r.Name)) })
	return ctx, func() { stop(); cancel(nil) }
}

func (r *Remote) url(p string) string { return r.base + p }

// Addr is the agent's address.
func (r *Remote) Addr() string {
	return strings.TrimSuffix(strings.TrimPrefix(r.base, "https://"), Prefix)
}

func pathEscape(s string) string { return url.PathEscape(s) }

func volPath(v driver.VolumeRef) string {
	return "volumes/" + pathEscape(v.Kind) + "/" + pathEscape(v.Name)
}

// do sends a call and decodes its JSON answer into out (when not nil).
func (r *Remote) do(ctx context.Context, method, p string, in, out any) error {
	ctx, stop := r.bound(ctx)
	defer stop()
	req, err := jsonhttp.NewRequest(ctx, method, r.url(p), in)
	if err != nil {
		return err
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return fmt.Errorf("node %s: %w", r.Name, err)
	}
	defer resp.Body.Close()
	return r.answer(resp, out)
}

func (r *Remote) answer(resp *http.Response, out any) error {
	if resp.StatusCode >= 300 {
		var w wireError
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&w); err != nil || w.Error == "" {
			return fmt.Errorf("node %s: %s", r.Name, resp.Status)
		}
		return fromWire(w)
	}
	if err := jsonhttp.Decode(resp.Body, out); err != nil {
		return fmt.Errorf("node %s: the answer: %w", r.Name, err)
	}
	return nil
}

// Prepare makes the node's shared objects.
func (r *Remote) Prepare(ctx context.Context) error { return r.do(ctx, "POST", "prepare", nil, nil) }

// ImageExists says whether the node has an image.
func (r *Remote) ImageExists(ctx context.Context, ref string) (bool, error) {
	var out struct{ Exists bool }
	err := r.do(ctx, "POST", "image-exists", map[string]string{"Ref": ref}, &out)
	return out.Exists, err
}

// Boxes lists the node's boxes.
func (r *Remote) Boxes(ctx context.Context) ([]driver.BoxState, error) {
	var out []driver.BoxState
	return out, r.do(ctx, "GET", "boxes", nil, &out)
}

// CreateBox makes a box on the node.
func (r *Remote) CreateBox(ctx context.Context, spec driver.BoxSpec) error {
	return r.do(ctx, "POST", "boxes", spec, nil)
}

// StartBox starts a box of the node.
func (r *Remote) StartBox(ctx context.Context, name string) error {
	return r.do(ctx, "POST", "boxes/"+pathEscape(name)+"/start", nil, nil)
}

// StopBox stops a box of the node.
func (r *Remote) StopBox(ctx context.Context, name string) error {
	return r.do(ctx, "POST", "boxes/"+pathEscape(name)+"/stop", nil, nil)
}

// RemoveBox removes a box of the node.
func (r *Remote) RemoveBox(ctx context.Context, name string) error {
	return r.do(ctx, "DELETE", "boxes/"+pathEscape(name), nil, nil)
}

// Snapshots lists the node's snapshots.
func (r *Remote) Snapshots(ctx context.Context) ([]driver.SnapshotState, error) {
	var out []driver.SnapshotState
	return out, r.do(ctx, "GET", "snapshots", nil, &out)
}

// Snapshot records a box's filesystem on its node.
func (r *Remote) Snapshot(ctx context.Context, box, id string) error {
	return r.do(ctx, "POST", "snapshots", map[string]string{"Box": box, "ID": id}, nil)
}

// RemoveSnapshot removes a snapshot of the node.
func (r *Remote) RemoveSnapshot(ctx context.Context, id string) error {
	return r.do(ctx, "DELETE", "snapshots/"+pathEscape(id), nil, nil)
}

// Volumes lists the node's volumes.
func (r *Remote) Volumes(ctx context.Context) ([]driver.VolumeRef, error) {
	var out []driver.VolumeRef
	return out, r.do(ctx, "GET", "volumes", nil, &out)
}

// CreateVolume makes a volume on the node.
func (r *Remote) CreateVolume(ctx context.Context, v driver.VolumeRef) error {
	return r.do(ctx, "POST", "volumes", v, nil)
}

// RemoveVolume removes a volume of the node.
func (r *Remote) RemoveVolume(ctx context.Context, v driver.VolumeRef) error {
	return r.do(ctx, "DELETE", volPath(v), nil, nil)
}

// CleanVolume removes what a cut-off WriteVolume left.
func (r *Remote) CleanVolume(ctx context.Context, v driver.VolumeRef, image string) error {
	return r.do(ctx, "POST", volPath(v)+"/clean?image="+url.QueryEscape(image), nil, nil)
}

// put sends body as a call's request body.
func (r *Remote) put(ctx context.Context, p string, body io.Reader) error {
	ctx, stop := r.bound(ctx)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, "PUT", r.url(p), io.NopCloser(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := r.hc.Do(req)
	if err != nil {
		return fmt.Errorf("node %s: %w", r.Name, err)
	}
	defer resp.Body.Close()
	return r.answer(resp, nil)
}

// get opens a streamed answer; reading it to its end fails unless the
// node said it was whole.
func (r *Remote) get(ctx context.Context, p string) (io.ReadCloser, error) {
	ctx, stop := r.bound(ctx)
	req, err := http.NewRequestWithContext(ctx, "GET", r.url(p), nil)
	if err != nil {
		stop()
		return nil, err
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		stop()
		return nil, fmt.Errorf("node %s: %w", r.Name, err)
	}
	if resp.StatusCode >= 300 {
		defer stop()
		defer resp.Body.Close()
		return nil, r.answer(resp, nil)
	}
	return &wholeReader{resp: resp, node: r.Name, stop: stop}, nil
}

// wholeReader is a streamed answer that ends in EOF only when the node's
// trailer says it is whole.
type wholeReader struct {
	resp *http.Response
	node string
	stop context.CancelFunc
}

func (w *wholeReader) Read(p []byte) (int, error) {
	n, err := w.resp.Body.Read(p)
	if errors.Is(err, io.EOF) {
		if t := w.resp.Trailer.Get(streamTrailer); t != "complete" {
			if t == "" {
				t = "no end"
			}
			return n, fmt.Errorf("node %s: the stream was cut short (%s)", w.node, strings.TrimPrefix(t, "cut: "))
		}
	}
	return n, err
}

func (w *wholeReader) Close() error {
	err := w.resp.Body.Close()
	w.stop()
	return err
}

func userPath(box, what string, uid int) string {
	return "boxes/" + pathEscape(box) + "/user/" + what + "?uid=" + strconv.Itoa(uid)
}

// PushFolder is where a push into dir stages, looked at on the node.
func (r *Remote) PushFolder(ctx context.Context, box string, uid int, dir string) (folder, notFolder string, writable bool, err error) {
	var out pushFolder
	err = r.do(ctx, "GET", userPath(box, "folder", uid)+"&dir="+url.QueryEscape(dir), nil, &out)
	return out.Folder, out.NotFolder, out.Writable, err
}

// UnpackAsUser sends a push to the node, which unpacks and merges it as
// the box's user.
func (r *Remote) UnpackAsUser(ctx context.Context, box string, uid int, stage, dir string, max int64, tar io.Reader) (blocked string, left bool, err error) {
	ctx, stop := r.bound(ctx)
	defer stop()
	p := userPath(box, "files", uid) + "&stage=" + url.QueryEscape(stage) + "&dir=" + url.QueryEscape(dir) + "&max=" + strconv.FormatInt(max, 10)
	req, err := http.NewRequestWithContext(ctx, "PUT", r.url(p), io.NopCloser(tar))
	if err != nil {
		return "", false, err
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := r.hc.Do(req)
	if err != nil {
		// Whether the node made the staging folder is not known.
		return "", true, fmt.Errorf("node %s: %w", r.Name, err)
	}
	defer resp.Body.Close()
	var out unpacked
	if err := r.answer(resp, &out); err != nil {
		return "", resp.Header.Get(leftHeader) != "", err
	}
	return out.Blocked, out.Left, nil
}

// Unreadable finds, on the node, what of p the box's user may not read.
func (r *Remote) Unreadable(ctx context.Context, box string, uid int, p string) (string, error) {
	var out struct{ Unreadable string }
	err := r.do(ctx, "GET", userPath(box, "unreadable", uid)+"&path="+url.QueryEscape(p), nil, &out)
	return out.Unreadable, err
}

// PackAsUser streams p from the node, packed there as the box's user.
func (r *Remote) PackAsUser(ctx context.Context, box string, uid int, p string) (io.ReadCloser, error) {
	return r.get(ctx, userPath(box, "archive", uid)+"&path="+url.QueryEscape(p))
}

// CopyTo extracts a tar stream into dir in a box of the node.
func (r *Remote) CopyTo(ctx context.Context, box, dir string, tar io.Reader) error {
	return r.put(ctx, "boxes/"+pathEscape(box)+"/files?dir="+url.QueryEscape(dir), tar)
}

// CopyFrom returns a tar stream of path in a box of the node.
func (r *Remote) CopyFrom(ctx context.Context, box, path string) (io.ReadCloser, error) {
	return r.get(ctx, "boxes/"+pathEscape(box)+"/files?path="+url.QueryEscape(path))
}

// ReadVolume returns a tar stream of a volume of the node.
func (r *Remote) ReadVolume(ctx context.Context, v driver.VolumeRef, image string) (io.ReadCloser, error) {
	return r.get(ctx, volPath(v)+"/archive?image="+url.QueryEscape(image))
}

// WriteVolume replaces a volume's contents with a tar stream's.
func (r *Remote) WriteVolume(ctx context.Context, v driver.VolumeRef, image string, tar io.Reader) error {
	return r.put(ctx, volPath(v)+"/archive?image="+url.QueryEscape(image), tar)
}

// SaveSnapshots streams snapshots' images from the node; reading it to
// its end fails unless the node sent all of it.
func (r *Remote) SaveSnapshots(ctx context.Context, ids []string) (io.ReadCloser, error) {
	return r.get(ctx, "snapshot-images?"+url.Values{"id": ids}.Encode())
}

// LoadSnapshots loads snapshots' images into the node.
func (r *Remote) LoadSnapshots(ctx context.Context, ids []string, img io.Reader) error {
	return r.put(ctx, "snapshot-images?"+url.Values{"id": ids}.Encode(), img)
}

// Send carries an op (driver.Op) to the node's agent.
func (r *Remote) Send(ctx context.Context, op, kind, name string, args, reply any) error {
	return r.do(ctx, "POST", "ops/"+pathEscape(op), args, reply)
}

// Info is what the node says of itself.
func (r *Remote) Info(ctx context.Context) (Info, error) {
	var in Info
	err := r.do(ctx, "GET", "info", nil, &in)
	return in, err
}

// Leave takes the node out of the cluster: its engine leaves the swarm,
// and it forgets its join and stops serving (Agent.Leave).
func (r *Remote) Leave(ctx context.Context) error {
	return r.do(ctx, "POST", "leave", nil, nil)
}

// SetFence sets what no box of the node reaches (policies.Network.Fence);
// it goes with the next Sync.
func (r *Remote) SetFence(fence []netip.Prefix) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fence = slices.Clone(fence)
}

// Sync applies the egress rules of the node's boxes (every box of the
// node: one left out loses its rules), with the fence last set.
func (r *Remote) Sync(boxes []policies.Box) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if boxes == nil {
		boxes = []policies.Box{}
	}
	r.mu.Lock()
	in := rules{Boxes: boxes, Fence: r.fence}
	r.mu.Unlock()
	return r.do(ctx, "PUT", "firewall", in, nil)
}

// Report is what a box's egress rules did on the node.
func (r *Remote) Report(box string) (policies.Report, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rep policies.Report
	err := r.do(ctx, "GET", "firewall/"+pathEscape(box), nil, &rep)
	return rep, err
}
