package daemon

import (
	"bytes"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
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

// TestHandlerPanicIsLogged: a panic in a handler of paddockd's server
// (apiServer, the one serve runs) is in paddockd's log as an error, with
// what it said. net/http recovers such a panic and closes the connection;
// an exec's client only reads EOF. Without the server's ErrorLog the
// panic goes to the standard library's log, which in paddockd the front
// door's Caddy has taken over (a JSON line of its own at INFO on
// stderr). The test runs no front door: Caddy issues its certificate in
// the background, and a write in flight when the test stops it lands in
// the test's folder after its removal; the log's routing is the same
// without it.
func TestHandlerPanicIsLogged(t *testing.T) {
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
