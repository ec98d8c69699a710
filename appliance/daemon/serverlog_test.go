package daemon

import (
	"bytes"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/paddock-dev/paddock/caddy"
	"github.com/paddock-dev/paddock/testbed/harness"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freeAddr(t *testing.T) string {
	a, err := harness.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestHandlerPanicIsLogged: with the front door running (its Caddy takes
// over the standard library's log, and would have written the panic as
// a JSON line at INFO among its own), a panic in a handler of paddockd's
// server (apiServer, the one serve runs) is in paddockd's log as an
// error, with what it said. net/http recovers such a panic and closes
// the connection; an exec's client only reads EOF.
func TestHandlerPanicIsLogged(t *testing.T) {
	dir := t.TempDir()
	f := &caddy.Front{}
	if err := f.Apply(caddy.Site{Hostname: "paddock.test", HTTPSListen: freeAddr(t), HTTPListen: freeAddr(t), TLS: "internal",
		StorageDir: filepath.Join(dir, "caddy"), Upstream: "unix/" + filepath.Join(dir, "none.sock"), AskURL: "http://127.0.0.1:1/ask"}); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()

	var out lockedBuffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := apiServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("the handler broke here")
	}), log)
	go srv.Serve(l)
	defer srv.Close()
	if resp, err := http.Get("http://" + l.Addr().String() + "/"); err == nil {
		resp.Body.Close()
		t.Fatalf("a request whose handler panicked was answered: %s", resp.Status)
	}
	if got := out.String(); !strings.Contains(got, "the handler broke here") || !strings.Contains(got, "level=ERROR") {
		t.Fatalf("paddockd's log does not have the handler's panic as an error:\n%s", got)
	}
}
