package e2b

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/route"
)

// envd's file system over Paddock's: uploads and downloads are package
// files' push and pull (a push's checks and bounds hold); stat, list,
// make a folder, move and remove run find(1), mkdir, mv and rm in the
// box as the request's user, so that what that user may not read or
// change is refused as it would be in a shell; a watch is package
// watch's.

// Homes are where a relative path starts, by user: the box's user's
// home is reached at E2B's /home/user in a box made through E2B (its
// create links it there).
var homes = map[string]string{"": "/home/user", "root": "/root"}

// abs is p made absolute from the user's home.
func abs(p, user string) string {
	if p == "" {
		return homes[user]
	}
	if !path.IsAbs(p) {
		p = path.Join(homes[user], p)
	}
	return path.Clean(p)
}

// linkHome makes what code written for E2B expects of a box: E2B's home
// of its user, /home/user, a link to the box user's own home; and
// /workspace, the box user's, where agent frameworks (the OpenAI Agents
// SDK's E2B client) make their workspace.
const linkHome = `[ -e /home/user ] || [ -L /home/user ] || { mkdir -p /home && ln -s "$(getent passwd 1000 | cut -d: -f6)" /home/user; }
[ -e /workspace ] || [ -L /workspace ] || install -d -o 1000 -g "$(id -g 1000)" /workspace`

func (e *E2B) healthRoute(w http.ResponseWriter, r *http.Request) error {
	id := sandboxOf(r)
	if err := e.box(r.Context(), id, caller.AccessViewer); err != nil {
		return err
	}
	if _, err := e.core.RunningBox(id); err != nil {
		return &api.Error{Code: api.CodeGone, Message: fmt.Sprintf("sandbox %s is not running: %v", id, err)}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// filesUser is who a /files request acts as: the username parameter.
func filesUser(r *http.Request) (string, error) {
	switch u := r.URL.Query().Get("username"); u {
	case "", "user", "paddock":
		return "", nil
	case "root":
		return "root", nil
	default:
		return "", api.Invalid("username", "user %q: a sandbox has the user \"user\" (the box's user) and \"root\"", u)
	}
}

func (e *E2B) downloadRoute(w http.ResponseWriter, r *http.Request) error {
	box, err := e.envdBox(r, caller.AccessViewer)
	if err != nil {
		return err
	}
	user, err := filesUser(r)
	if err != nil {
		return err
	}
	p := abs(r.URL.Query().Get("path"), user)
	audit.From(r.Context()).Note("path", p)
	rc, err := e.files.Pull(r.Context(), box, p)
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil {
		return fmt.Errorf("reading %s from sandbox %s: %w", p, box, err)
	}
	if h.Typeflag != tar.TypeReg {
		return api.Invalid("path", "%s in sandbox %s is not a file", p, box)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(h.Size, 10))
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	w.WriteHeader(http.StatusOK)
	n, err := io.Copy(w, tr)
	audit.From(r.Context()).Note("bytes", n)
	if err != nil {
		panic(http.ErrAbortHandler) // cut short: the client must not read it as whole
	}
	return nil
}

type writeInfo struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
}

func (e *E2B) uploadRoute(w http.ResponseWriter, r *http.Request) error {
	box, err := e.envdBox(r, caller.AccessMember)
	if err != nil {
		return err
	}
	user, err := filesUser(r)
	if err != nil {
		return err
	}
	if user == "root" {
		return api.Invalid("username", "files are written as the box's user through E2B's API: write as user \"user\", or run a command as root")
	}
	body := io.Reader(r.Body)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return api.Invalid("body", "the body is not gzip: %v", err)
		}
		body = zr
	}
	q := r.URL.Query().Get("path")
	var out []writeInfo
	put := func(p string, data io.Reader) error {
		if p == "" {
			return api.Invalid("path", "no path: give the file's path")
		}
		p = abs(p, user)
		if err := e.putFile(r.Context(), box, p, data); err != nil {
			return err
		}
		out = append(out, writeInfo{Name: path.Base(p), Type: "file", Path: p})
		return nil
	}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case mt == "multipart/form-data" && q != "" && body == io.Reader(r.Body) && r.ContentLength > streamFrom:
		// One large file (the SDKs name its path for one only): streamed.
		p := abs(q, user)
		if err := e.putOnePart(r.Context(), box, p, r.Body, r.ContentLength, params["boundary"]); err != nil {
			return err
		}
		out = append(out, writeInfo{Name: path.Base(p), Type: "file", Path: p})
	case mt != "multipart/form-data" && q != "" && body == io.Reader(r.Body) && r.ContentLength > streamFrom:
		p := abs(q, user)
		if err := e.pushFile(r.Context(), box, p, r.Body, r.ContentLength); err != nil {
			return err
		}
		out = append(out, writeInfo{Name: path.Base(p), Type: "file", Path: p})
	case mt == "multipart/form-data":
		mr := multipart.NewReader(body, params["boundary"])
		for {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return api.Invalid("body", "reading the form: %v", err)
			}
			if part.FormName() != "file" {
				continue
			}
			// The file's path is its name (FileName keeps only its base).
			_, cd, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			p := cd["filename"]
			if q != "" {
				p = q
			}
			if err := put(p, part); err != nil {
				return err
			}
		}
	default:
		if err := put(q, body); err != nil {
			return err
		}
	}
	audit.From(r.Context()).Note("files", len(out))
	if len(out) == 0 {
		return api.Invalid("file", "no file in the request")
	}
	return route.WriteJSON(w, http.StatusOK, out)
}

// Files of a known size over streamFrom bytes are streamed into the
// box; smaller ones, and those whose size an upload does not say, are
// read first (into memory up to streamFrom, then to a file).
const streamFrom = 8 << 20

// putFile writes data to p in a box, as its user, through package
// files' push (an archive of the one file): read first, since an archive
// says each file's size before it.
func (e *E2B) putFile(ctx context.Context, box, p string, data io.Reader) error {
	head := make([]byte, streamFrom+1)
	n, err := io.ReadFull(data, head)
	switch {
	case err == nil: // more than streamFrom: to a file
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return e.pushFile(ctx, box, p, bytes.NewReader(head[:n]), int64(n))
	default:
		return api.Invalid("body", "reading the file: %v", err)
	}
	f, err := os.CreateTemp("", "paddock-e2b-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	size, err := io.Copy(f, io.MultiReader(bytes.NewReader(head), data))
	if err != nil {
		return api.Invalid("body", "reading the file: %v", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return e.pushFile(ctx, box, p, f, size)
}

// pushFile writes size bytes of data to p in a box, as its user, through
// package files' push (an archive of the one file): whole or not at all
// (an archive cut short is refused whole).
func (e *E2B) pushFile(ctx context.Context, box, p string, data io.Reader, size int64) error {
	// The archive is its header, the data and the end, read in turn: no
	// copy through a pipe, whose handing over of each piece the push's
	// small reads made cost more than the copy (255 ms for 100 MB here,
	// 105 ms read straight).
	var head bytes.Buffer
	if err := tar.NewWriter(&head).WriteHeader(&tar.Header{Name: path.Base(p), Mode: 0o644, Size: size, ModTime: e.core.Time(), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	end := make([]byte, (512-size%512)%512+1024) // padding to a block, then two empty blocks
	return e.files.Push(ctx, box, path.Dir(p), io.MultiReader(&head, &exactly{r: data, n: size}, bytes.NewReader(end)))
}

// exactly reads n bytes of r: fewer is io.ErrUnexpectedEOF.
type exactly struct {
	r io.Reader
	n int64
}

func (x *exactly) Read(p []byte) (int, error) {
	if x.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > x.n {
		p = p[:x.n]
	}
	n, err := x.r.Read(p)
	x.n -= int64(n)
	if errors.Is(err, io.EOF) && x.n > 0 {
		return n, io.ErrUnexpectedEOF
	}
	if x.n == 0 && errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// putOnePart writes the one file of a multipart body of length n to p,
// streamed: its size is what the body's length leaves after the part's
// head and the closing boundary (as the SDKs send one file: the part,
// then "\r\n--BOUNDARY--\r\n"). The file goes to a name of its own
// beside p first, and to p once the body ended as it should; a body of
// another shape leaves p as it was.
func (e *E2B) putOnePart(ctx context.Context, box, p string, body io.Reader, n int64, boundary string) error {
	bad := func(why string) error {
		return api.Invalid("body", "the upload is not one file of a multipart form as E2B's SDKs send it: %s", why)
	}
	c := &route.Counted{R: body}
	br := bufio.NewReaderSize(c, 64<<10)
	if line, err := br.ReadString('\n'); err != nil || line != "--"+boundary+"\r\n" {
		return bad("it does not begin with its boundary")
	}
	h, err := textproto.NewReader(br).ReadMIMEHeader()
	if err != nil {
		return bad(err.Error())
	}
	if _, cd, _ := mime.ParseMediaType(h.Get("Content-Disposition")); cd["name"] != "file" {
		return bad("its part is not named file")
	}
	tail := "\r\n--" + boundary + "--\r\n"
	size := n - (c.N - int64(br.Buffered())) - int64(len(tail))
	if size < 0 {
		return bad("it is shorter than its head")
	}
	part := path.Join(path.Dir(p), ".e2b-upload-"+auth.RandomHex(6))
	scan := &delimScan{r: br, delim: []byte("\r\n--" + boundary)}
	if err := e.pushFile(ctx, box, part, scan, size); err != nil {
		return err
	}
	rest, _ := io.ReadAll(io.LimitReader(br, int64(len(tail))+1))
	whole := string(rest) == tail && !scan.found
	script := `mv -f -- "$1" "$2"`
	if !whole {
		script = `rm -f -- "$1"`
	}
	// As the box's user, as the file was pushed: no further than it may write.
	if _, err := e.sh(ctx, box, "", script, part, p); err != nil {
		return err
	}
	if !whole {
		return bad("more follows the file than its closing boundary")
	}
	return nil
}

// delimScan reads r and notes whether delim passed through it (a part's
// end inside what was taken for one file's contents).
type delimScan struct {
	r     io.Reader
	delim []byte
	carry []byte // the last len(delim)-1 bytes read
	found bool
}

func (d *delimScan) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if n > 0 && !d.found {
		k := len(d.delim) - 1
		// Where the last read and this one meet, then this one.
		joint := append(append([]byte(nil), d.carry...), p[:min(n, k)]...)
		d.found = bytes.Contains(joint, d.delim) || bytes.Contains(p[:n], d.delim)
		// The last k bytes read: of this read, or of the joint when it
		// is shorter (the joint is then the carry and all of it).
		tail := p[:n]
		if n < k {
			tail = joint
		}
		d.carry = append(d.carry[:0], tail[max(0, len(tail)-k):]...)
	}
	return n, err
}

// entryInfo is envd's EntryInfo.
type entryInfo struct {
	Name          string  `json:"name"`
	Type          string  `json:"type"`
	Path          string  `json:"path"`
	Size          string  `json:"size"`
	Mode          uint32  `json:"mode"`
	Permissions   string  `json:"permissions"`
	Owner         string  `json:"owner"`
	Group         string  `json:"group"`
	ModifiedTime  string  `json:"modifiedTime"`
	SymlinkTarget *string `json:"symlinkTarget,omitempty"`
}

// statScript prints $1's entry (depth 0) or its entries to depth $2,
// each as nine NUL-ended fields; it exits 2 when $1 is not there, 3
// when a listing's $1 is not a folder.
const statScript = `p=$1; d=$2
if [ ! -e "$p" ] && [ ! -L "$p" ]; then echo "no such file or directory: $p" >&2; exit 2; fi
f='%y\0%s\0%m\0%M\0%u\0%g\0%T@\0%p\0%l\0'
if [ "$d" = 0 ]; then exec find "$p" -maxdepth 0 -printf "$f"; fi
[ -d "$p" ] || { echo "not a directory: $p" >&2; exit 3; }
exec find -H "$p" -mindepth 1 -maxdepth "$d" -printf "$f" | head -z -n ` + "450000"

var fileTypes = map[string]string{"f": "FILE_TYPE_FILE", "d": "FILE_TYPE_DIRECTORY", "l": "FILE_TYPE_SYMLINK"}

// MaxEntries bounds a listing.
const MaxEntries = 50000

func parseEntries(out []byte) []entryInfo {
	fs := strings.Split(string(out), "\x00")
	var es []entryInfo
	for i := 0; i+9 <= len(fs) && len(es) < MaxEntries; i += 9 {
		f := fs[i : i+9]
		t := fileTypes[f[0]]
		if t == "" {
			t = "FILE_TYPE_UNSPECIFIED"
		}
		mode, _ := strconv.ParseUint(f[2], 8, 32)
		secs, _ := strconv.ParseFloat(f[6], 64)
		e := entryInfo{Name: path.Base(f[7]), Type: t, Path: f[7], Size: f[1], Mode: uint32(mode), Permissions: f[3], Owner: f[4], Group: f[5],
			ModifiedTime: time.Unix(0, int64(secs*1e9)).UTC().Format(time.RFC3339Nano)}
		if f[0] == "l" {
			target := f[8]
			e.SymlinkTarget = &target
		}
		es = append(es, e)
	}
	return es
}

// sh runs a script in a box as user and returns its output; its exit
// codes 2, 3 and 4 are not found, not a folder and already there.
func (e *E2B) sh(ctx context.Context, box, user, script string, args ...string) ([]byte, error) {
	used, _, err := e.core.Use(ctx, box)
	if err != nil {
		return nil, err
	}
	defer used()
	b, err := e.core.RunningBox(box)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var out, stderr bytes.Buffer
	code, err := e.drv.Exec(ctx, b.Key(), driver.ExecSpec{Cmd: append([]string{"sh", "-c", script, "e2b"}, args...), User: user, Stdout: &out, Stderr: &stderr})
	if err != nil {
		return nil, err
	}
	msg := strings.TrimSpace(stderr.String())
	switch {
	case code == 0:
		return out.Bytes(), nil
	case code == 2 || strings.Contains(msg, "No such file"):
		return nil, notFound("%s", msg)
	case code == 3:
		return nil, api.Invalid("path", "%s", msg)
	case code == 4:
		return nil, api.Conflict("%s", msg)
	case strings.Contains(msg, "Permission denied"):
		return nil, &api.Error{Code: api.CodeForbidden, Message: msg}
	}
	return nil, fmt.Errorf("exit code %d: %s", code, msg)
}

// stat is one entry.
func (e *E2B) stat(ctx context.Context, box, user, p string) (entryInfo, error) {
	out, err := e.sh(ctx, box, user, statScript, p, "0")
	if err != nil {
		return entryInfo{}, err
	}
	es := parseEntries(out)
	if len(es) != 1 {
		return entryInfo{}, fmt.Errorf("stat of %s said nothing", p)
	}
	return es[0], nil
}

type pathRequest struct {
	Path  string `json:"path"`
	Depth uint32 `json:"depth"`
}

type entryResponse struct {
	Entry entryInfo `json:"entry"`
}

func (e *E2B) filesystemMethods() map[string]route.Handler {
	// fsCall reads the request's box and user (need: the access it
	// takes), then calls.
	fsCall := func(need string, call func(r *http.Request, box, user string) (any, error)) func(r *http.Request) (any, error) {
		return func(r *http.Request) (any, error) {
			box, err := e.envdBox(r, need)
			if err != nil {
				return nil, err
			}
			user, err := userOf(r)
			if err != nil {
				return nil, err
			}
			return call(r, box, user)
		}
	}
	return map[string]route.Handler{
		"Stat": unary(func(r *http.Request, in *pathRequest) (*any, error) {
			v, err := fsCall(caller.AccessViewer, func(r *http.Request, box, user string) (any, error) {
				en, err := e.stat(r.Context(), box, user, abs(in.Path, user))
				return entryResponse{Entry: en}, err
			})(r)
			return &v, err
		}),
		"ListDir": unary(func(r *http.Request, in *pathRequest) (*any, error) {
			v, err := fsCall(caller.AccessViewer, func(r *http.Request, box, user string) (any, error) {
				depth := max(in.Depth, 1)
				out, err := e.sh(r.Context(), box, user, statScript, abs(in.Path, user), strconv.Itoa(int(depth)))
				if err != nil {
					return nil, err
				}
				es := parseEntries(out)
				if es == nil {
					es = []entryInfo{}
				}
				return map[string]any{"entries": es}, nil
			})(r)
			return &v, err
		}),
		"MakeDir": unary(func(r *http.Request, in *pathRequest) (*any, error) {
			v, err := fsCall(caller.AccessMember, func(r *http.Request, box, user string) (any, error) {
				p := abs(in.Path, user)
				audit.From(r.Context()).Note("path", p)
				if _, err := e.sh(r.Context(), box, user, `[ -e "$1" ] && { echo "$1 exists" >&2; exit 4; }; mkdir -p -- "$1"`, p); err != nil {
					return nil, err
				}
				en, err := e.stat(r.Context(), box, user, p)
				return entryResponse{Entry: en}, err
			})(r)
			return &v, err
		}),
		"Move": unary(func(r *http.Request, in *struct {
			Source      string `json:"source"`
			Destination string `json:"destination"`
		}) (*any, error) {
			v, err := fsCall(caller.AccessMember, func(r *http.Request, box, user string) (any, error) {
				src, dst := abs(in.Source, user), abs(in.Destination, user)
				audit.From(r.Context()).Note("path", src)
				audit.From(r.Context()).Note("to", dst)
				if _, err := e.sh(r.Context(), box, user, `[ -e "$1" ] || [ -L "$1" ] || { echo "no such file or directory: $1" >&2; exit 2; }; mkdir -p -- "$(dirname -- "$2")" && mv -T -- "$1" "$2"`, src, dst); err != nil {
					return nil, err
				}
				en, err := e.stat(r.Context(), box, user, dst)
				return entryResponse{Entry: en}, err
			})(r)
			return &v, err
		}),
		"Remove": unary(func(r *http.Request, in *pathRequest) (*any, error) {
			v, err := fsCall(caller.AccessMember, func(r *http.Request, box, user string) (any, error) {
				p := abs(in.Path, user)
				audit.From(r.Context()).Note("path", p)
				if p == "/" {
					return nil, api.Invalid("request", "removing / is refused")
				}
				_, err := e.sh(r.Context(), box, user, `[ -e "$1" ] || [ -L "$1" ] || { echo "no such file or directory: $1" >&2; exit 2; }; rm -rf -- "$1"`, p)
				return empty{}, err
			})(r)
			return &v, err
		}),
		"WatchDir": serverStream(e.watchDir),
		"CreateWatcher": unary(func(r *http.Request, in *pathRequest) (*empty, error) {
			return nil, unsupported("polled watchers are not supported by Paddock: watch a folder with WatchDir (files.watchDir)")
		}),
		"GetWatcherEvents": unary(func(r *http.Request, in *pathRequest) (*empty, error) {
			return nil, unsupported("polled watchers are not supported by Paddock: watch a folder with WatchDir (files.watchDir)")
		}),
		"RemoveWatcher": unary(func(r *http.Request, in *pathRequest) (*empty, error) {
			return nil, unsupported("polled watchers are not supported by Paddock: watch a folder with WatchDir (files.watchDir)")
		}),
	}
}

var eventTypes = map[string]string{"created": "EVENT_TYPE_CREATE", "modified": "EVENT_TYPE_WRITE", "removed": "EVENT_TYPE_REMOVE", "renamed": "EVENT_TYPE_RENAME"}

// watchDir streams a watch of package watch: its start once the watches
// are set, then each event with its path relative to the folder.
func (e *E2B) watchDir(r *http.Request, in *struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}, s *stream) error {
	box, err := e.envdBox(r, caller.AccessViewer)
	if err != nil {
		return err
	}
	user, err := userOf(r)
	if err != nil {
		return err
	}
	p := abs(in.Path, user)
	if _, err := e.stat(r.Context(), box, user, p); err != nil {
		return err
	}
	events, end, err := e.watch.WatchDir(r.Context(), box, p, in.Recursive)
	if err != nil {
		return err
	}
	defer end()
	every := keepaliveEvery
	if n, err := strconv.Atoi(r.Header.Get("Keepalive-Ping-Interval")); err == nil && n > 0 && time.Duration(n)*time.Second < every {
		every = time.Duration(n) * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return r.Context().Err()
		case <-tick.C:
			if err := s.send(map[string]any{"keepalive": empty{}}); err != nil {
				return err
			}
		case ev, ok := <-events:
			if !ok {
				return end()
			}
			var msg map[string]any
			switch ev.Type {
			case "ready":
				msg = map[string]any{"start": empty{}}
			case "error":
				return errors.New(ev.Message)
			default:
				t := eventTypes[ev.Type]
				if t == "" {
					continue
				}
				name := strings.TrimPrefix(strings.TrimPrefix(ev.Path, p), "/")
				msg = map[string]any{"filesystem": map[string]string{"name": name, "type": t}}
			}
			if err := s.send(msg); err != nil {
				return err
			}
		}
	}
}
