package e2b

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/store"
)

// patterns are the routes Routes registers.
type patterns map[string]bool

func (p patterns) Handle(pattern string, _ route.Handler) { p[pattern] = true }

// The tables of E2B's routes (their audit actions, the heavy ones, those
// a viewer may call) name routes that are registered, and the paths say
// the same as the API's constants the CLI prints.
func TestTablesNameRoutes(t *testing.T) {
	ps := patterns{}
	(&E2B{}).Routes(ps)
	for p := range Actions {
		if !ps[p] {
			t.Errorf("Actions names %q, which is not registered", p)
		}
	}
	for _, p := range Heavy {
		if !ps[p] {
			t.Errorf("Heavy names %q, which is not registered", p)
		}
	}
	for p := range Reads {
		if !ps[p] {
			t.Errorf("Reads names %q, which is not registered", p)
		}
		if Actions[p] == "" {
			t.Errorf("%s reaches into a box and has no audit action", p)
		}
	}
	if Prefix+EnvdPath != api.E2BEnvdPath || Prefix != api.E2BPath {
		t.Errorf("the paths are %s and %s, the API's %s and %s", Prefix, Prefix+EnvdPath, api.E2BPath, api.E2BEnvdPath)
	}
}

func TestPidsNameJobs(t *testing.T) {
	for _, id := range []string{"j00000001", "j7f3a9c2e", "jffffffff"} {
		if got := jobOf(pidOf(id)); got != id {
			t.Errorf("job %s: pid %d names %s", id, pidOf(id), got)
		}
	}
}

// The SDKs encode a metadata filter's pairs, then the pairs as a query.
func TestMetadataQuery(t *testing.T) {
	got, err := metadataQuery("team=web%2520one&env=prod")
	if err != nil || len(got) != 2 || got["team"] != "web one" || got["env"] != "prod" {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := metadataQuery("nopair"); err == nil {
		t.Error("a filter without = was taken")
	}
}

// What Paddock does not do is refused by name, never dropped; templates
// name types, images or E2B's own.
func TestBoxPost(t *testing.T) {
	e := &E2B{}
	yes, no, ten := true, false, 10
	for _, tc := range []struct {
		b     createBody
		field string
	}{
		{createBody{MCP: json.RawMessage(`{"x":{}}`)}, "mcp"},
		{createBody{Network: json.RawMessage(`{"allowOut":["a"]}`)}, "network"},
		{createBody{VolumeMounts: json.RawMessage(`[{"name":"v","path":"/v"}]`)}, "volumeMounts"},
		{createBody{AutoPauseMemory: &yes}, "autoPauseMemory"},
		{createBody{AutoResume: json.RawMessage(`{"enabled":true}`)}, "autoResume"},
		{createBody{Metadata: map[string]string{"userId": "1"}}, "metadata"},
		{createBody{Timeout: &[]int{0}[0]}, "timeout"},
		{createBody{TemplateID: "no good"}, "templateID"},
	} {
		_, err := e.boxPost(tc.b)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Field != tc.field || ae.Code != api.CodeInvalid {
			t.Errorf("%+v: %v, want a refusal of %s", tc.b, err, tc.field)
		}
	}
	p, err := e.boxPost(createBody{TemplateID: "desktop", Timeout: &ten, AllowInternetAccess: &no, Metadata: map[string]string{"team": "web"}})
	if err != nil || p.Desktop == nil || *p.Desktop || p.TTL != "10s" || p.Policy != "deny-all" || p.Labels["team"] != "web" || p.Labels["e2b-template"] != "desktop" {
		t.Errorf("desktop: %+v %v", p, err)
	}
	if p, _ := e.boxPost(createBody{}); p.Desktop == nil || *p.Desktop || p.TTL != "300s" || p.Labels["e2b-template"] != "base" {
		t.Errorf("base: %+v", p)
	}
	if p, _ := e.boxPost(createBody{TemplateID: "large"}); p.Type != "large" || p.Image != "" {
		t.Errorf("a type: %+v", p)
	}
	if p, _ := e.boxPost(createBody{TemplateID: "mine:v1"}); p.Image != "mine:v1" || p.Type != "" {
		t.Errorf("an image: %+v", p)
	}
}

// Each route's errors reach its client in the shape it reads: E2B's on
// the control API, Connect's on envd's services, a stream's as its end
// after a 200.
func TestWriteErrorShapes(t *testing.T) {
	e := &E2B{}
	body := api.Error{Code: api.CodeNotFound, Message: "sandbox x not found"}
	write := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		e.WriteError(w, httptest.NewRequest("POST", path, nil), http.StatusNotFound, body)
		return w
	}
	w := write(Prefix + "/sandboxes/x")
	if w.Code != 404 || strings.TrimSpace(w.Body.String()) != `{"code":404,"message":"sandbox x not found"}` {
		t.Errorf("control: %d %s", w.Code, w.Body)
	}
	w = write(Prefix + EnvdPath + "/filesystem.Filesystem/Stat")
	if w.Code != 404 || strings.TrimSpace(w.Body.String()) != `{"code":"not_found","message":"sandbox x not found"}` {
		t.Errorf("unary: %d %s", w.Code, w.Body)
	}
	w = write(Prefix + EnvdPath + "/process.Process/Start")
	b := w.Body.Bytes()
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/connect+json" || len(b) < 5 || b[0] != flagEndStream ||
		int(binary.BigEndian.Uint32(b[1:5])) != len(b)-5 || string(b[5:]) != `{"error":{"code":"not_found","message":"sandbox x not found"}}` {
		t.Errorf("stream: %d %q", w.Code, b)
	}
	w = write(Prefix + EnvdPath + "/contexts/c1/restart")
	if w.Code != 404 || !strings.Contains(w.Body.String(), `"code":404`) {
		t.Errorf("interpreter: %d %s", w.Code, w.Body)
	}
}

// A stream reads its one request envelope and answers envelopes, ended
// by the call's error.
func TestServerStream(t *testing.T) {
	h := serverStream(func(r *http.Request, in *struct{ Path string }, s *stream) error {
		s.send(map[string]string{"got": in.Path})
		return &api.Error{Code: api.CodeInvalid, Message: "no"}
	})
	msg := []byte(`{"Path":"/x"}`)
	req := append([]byte{0, 0, 0, 0, byte(len(msg))}, msg...)
	w := httptest.NewRecorder()
	if err := h(w, httptest.NewRequest("POST", "/", bytes.NewReader(req))); err != nil {
		t.Fatal(err)
	}
	var got []string
	for b := w.Body.Bytes(); len(b) >= 5; {
		n := int(binary.BigEndian.Uint32(b[1:5]))
		got = append(got, string(b[0]+'0')+string(b[5:5+n]))
		b = b[5+n:]
	}
	want := []string{`0{"got":"/x"}`, `2{"error":{"code":"invalid_argument","message":"no"}}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	w = httptest.NewRecorder()
	if err := h(w, httptest.NewRequest("POST", "/", bytes.NewReader([]byte{1, 0, 0, 0, 2, '{', '}'}))); err == nil {
		t.Error("a compressed message was taken")
	}
}

// fakeCore is the core as putOnePart uses it (the rest panics).
type fakeCore struct{ Core }

func (fakeCore) Time() time.Time { return time.Unix(0, 0) }
func (fakeCore) Use(context.Context, string) (func(), bool, error) {
	return func() {}, false, nil
}
func (fakeCore) RunningBox(name string) (store.Box, error) { return store.Box{Name: name}, nil }

// pushes records what package files is asked to push.
type pushes struct {
	Files
	got []string // dir/name: content
}

func (p *pushes) Push(_ context.Context, _, dir string, body io.Reader) error {
	tr := tar.NewReader(body)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		p.got = append(p.got, dir+"/"+h.Name+": "+string(b))
	}
}

// One large file of a multipart body is streamed with the size its
// length leaves, to a name of its own, then moved onto its path; a body
// of another shape (two parts) leaves the path as it was, the partial
// file removed, and is refused.
func TestPutOnePart(t *testing.T) {
	drv := fake.New()
	var ran []string
	drv.ExecFunc = func(_ string, spec driver.ExecSpec) (int, error) {
		ran = append(ran, spec.User+" "+spec.Cmd[2])
		return 0, nil
	}
	files := &pushes{}
	e := &E2B{core: fakeCore{}, drv: drv, files: files}
	form := func(parts ...string) []byte {
		var b bytes.Buffer
		for _, p := range parts {
			fmt.Fprintf(&b, "--XB\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/home/user/f\"\r\nContent-Type: application/octet-stream\r\n\r\n%s\r\n", p)
		}
		b.WriteString("--XB--\r\n")
		return b.Bytes()
	}
	data := strings.Repeat("0123456789", 1<<20)
	body := form(data)
	if err := e.putOnePart(t.Context(), "b", "/home/user/f", bytes.NewReader(body), int64(len(body)), "XB"); err != nil {
		t.Fatal(err)
	}
	if len(files.got) != 1 || !strings.HasPrefix(files.got[0], "/home/user/.e2b-upload-") || !strings.HasSuffix(files.got[0], ": "+data) {
		t.Fatalf("pushed %.80q", files.got)
	}
	if len(ran) != 1 || !strings.HasPrefix(ran[0], ` mv -f -- "$1" "$2"`) {
		t.Fatalf("then ran %q (as the box's user)", ran)
	}
	files.got, ran = nil, nil
	body = form(data, "second")
	err := e.putOnePart(t.Context(), "b", "/home/user/f", bytes.NewReader(body), int64(len(body)), "XB")
	if err == nil || !strings.Contains(err.Error(), "more follows the file") {
		t.Fatalf("two parts: %v", err)
	}
	if len(ran) != 1 || !strings.HasPrefix(ran[0], ` rm -f -- "$1"`) {
		t.Fatalf("two parts: then ran %q", ran)
	}
}

// A part's boundary inside what was taken for one file is seen however
// the reads cut it, byte by byte too; a file without one passes clean.
func TestDelimScan(t *testing.T) {
	for _, c := range []struct {
		data string
		want bool
	}{
		{"abc\r\n--XBdef", true}, {"\r\n--XB", true}, {"abc\r\n--XAdef\r\n-", false}, {"plain", false},
	} {
		for _, r := range []io.Reader{strings.NewReader(c.data), iotest.OneByteReader(strings.NewReader(c.data)), iotest.HalfReader(strings.NewReader(c.data))} {
			d := &delimScan{r: r, delim: []byte("\r\n--XB")}
			if b, err := io.ReadAll(d); err != nil || string(b) != c.data || d.found != c.want {
				t.Errorf("%q through %T: found %v, want %v (%q, %v)", c.data, r, d.found, c.want, b, err)
			}
		}
	}
}
