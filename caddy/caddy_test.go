package caddy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// caddyStorage is a folder for Caddy's storage that outlives the test's
// own temporary folder: Caddy cleans its storage and writes certificates
// in the background, and a write still under way when the test stops
// Caddy (a lock file, made after the removal) would fail t.TempDir's one
// removal. It is removed at the end, as far as it can be.
func caddyStorage(t *testing.T) string {
	dir, err := os.MkdirTemp("", "paddock-caddy-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("Caddy's storage %s left: %v", dir, err)
		}
	})
	return dir
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestConfigIsData(t *testing.T) {
	b, err := Config(Site{Hostname: "pd.example.org", HTTPSListen: ":443", HTTPListen: ":80", TLS: "acme", Email: "ops@example.org",
		StorageDir: "/var/lib/paddock/caddy", Upstream: "unix//run/paddock/paddock.sock", AskURL: "http://127.0.0.1:1/ask"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"admin":{"config":{"persist":false},"disabled":true}`, `"module":"acme"`, `"email":"ops@example.org"`,
		`"Location":["https://{http.request.host}{http.request.uri}"]`, `"dial":"unix//run/paddock/paddock.sock"`, `"on_demand":true`,
		`"pattern":"^([0-9]{1,5})-([a-z0-9][a-z0-9-]*)\\.pd\\.example\\.org(?::[0-9]+)?$"`} {
		if !strings.Contains(s, want) {
			t.Errorf("config lacks %s:\n%s", want, s)
		}
	}
	if strings.Contains(s, `"pki"`) {
		t.Error("an ACME site configures the internal CA")
	}
	if _, err := Config(Site{Hostname: "h.example", HTTPSListen: "443", HTTPListen: ":80", TLS: "acme", StorageDir: "/x", Upstream: "u"}); err == nil {
		t.Error("a listen address without a colon is accepted")
	}
	if _, err := Config(Site{Hostname: "h.example", HTTPSListen: ":443", HTTPListen: ":80", TLS: "self", StorageDir: "/x", Upstream: "u"}); err == nil {
		t.Error("an unknown tls mode is accepted")
	}
	re := regexp.MustCompile(PreviewPattern("pd.example.org"))
	for host, want := range map[string]bool{"8080-web.pd.example.org": true, "3000-web.pd.example.org:8443": true, "80-a-1.pd.example.org": true,
		"8080-we.b.pd.example.org": false, "web.pd.example.org": false, "8080-web.pd.example.org.evil": false, "8080-web.pdxexample.org": false,
		"123456-web.pd.example.org": false, "8080-Web.pd.example.org": false, "8080--web.pd.example.org": false} {
		if re.MatchString(host) != want {
			t.Errorf("preview pattern on %q: %v", host, !want)
		}
	}
}

// TestFrontDoor runs the embedded Caddy for real: HTTPS from the internal
// CA, the redirect, the proxy to a unix socket, previews with on-demand
// certificates gated by the ask endpoint, reloads, and a failed reload.
func TestFrontDoor(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "up.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "paddock-test" {
			// An upgraded stream, as exec and the desktop websocket are:
			// echo what comes until the client closes.
			w.Header().Set("Connection", "Upgrade")
			w.Header().Set("Upgrade", "paddock-test")
			w.WriteHeader(http.StatusSwitchingProtocols)
			c, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer c.Close()
			buf.Flush()
			io.Copy(c, buf)
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"host": r.Host, "path": r.URL.Path, "proto": r.Header.Get("X-Forwarded-Proto"), "for": r.Header.Get("X-Forwarded-For")})
	})}
	go up.Serve(ul)
	defer up.Close()

	asked := make(chan string, 10)
	al, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ask := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := r.URL.Query().Get("domain")
		asked <- d
		if d == "8080-web.paddock.test" || d == "80-api.paddock.test" {
			return
		}
		http.Error(w, "no", http.StatusNotFound)
	})}
	go ask.Serve(al)
	defer ask.Close()

	httpsAddr, httpAddr := freeAddr(t), freeAddr(t)
	site := Site{Hostname: "paddock.test", HTTPSListen: httpsAddr, HTTPListen: httpAddr, TLS: "internal",
		StorageDir: caddyStorage(t), Upstream: "unix/" + sock, AskURL: "http://" + al.Addr().String() + "/ask"}
	f := &Front{}
	if err := f.Apply(site); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()

	root, err := os.ReadFile(RootCA(site.StorageDir))
	if err != nil {
		t.Fatalf("internal CA root: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(root)
	_, httpsPort, _ := net.SplitHostPort(httpsAddr)
	_, httpPort, _ := net.SplitHostPort(httpAddr)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, p, _ := net.SplitHostPort(addr)
		return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1:"+p)
	}
	hc := &http.Client{
		Transport:     &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
	getJSON := func(u string) (map[string]string, error) {
		var err error
		for range 50 { // the first certificate is issued in the background
			var resp *http.Response
			resp, err = hc.Get(u)
			if err == nil {
				defer resp.Body.Close()
				if resp.StatusCode != 200 {
					b, _ := io.ReadAll(resp.Body)
					return nil, fmt.Errorf("%s: %s", resp.Status, b)
				}
				var m map[string]string
				return m, json.NewDecoder(resp.Body).Decode(&m)
			}
			// Retried: a first certificate still being issued, and a
			// kept-alive connection that a reload (or a refused one)
			// closed as it was reused, seen as EOF or as a reset (2 runs
			// in 60 without the retry, and once in CI).
			if !strings.Contains(err.Error(), "tls") && !strings.Contains(err.Error(), "certificate") &&
				!strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "connection reset") {
				return nil, err
			}
			time.Sleep(100 * time.Millisecond)
		}
		return nil, err
	}

	m, err := getJSON("https://paddock.test:" + httpsPort + "/v1/whoami")
	if err != nil {
		t.Fatal(err)
	}
	if m["host"] != "paddock.test:"+httpsPort || m["path"] != "/v1/whoami" || m["proto"] != "https" || m["for"] != "127.0.0.1" {
		t.Fatalf("upstream saw %v", m)
	}

	// An upgraded connection passes through both ways, unbuffered.
	upgrade := func() (net.Conn, *bufio.Reader) {
		tc, err := tls.Dial("tcp", "127.0.0.1:"+httpsPort, &tls.Config{RootCAs: pool, ServerName: "paddock.test", NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(tc, "GET /v1/boxes/x/exec HTTP/1.1\r\nHost: paddock.test:%s\r\nConnection: Upgrade\r\nUpgrade: paddock-test\r\n\r\n", httpsPort)
		br := bufio.NewReader(tc)
		uresp, err := http.ReadResponse(br, nil)
		if err != nil || uresp.StatusCode != 101 {
			t.Fatalf("upgrade through the front door: %v %v", uresp, err)
		}
		return tc, br
	}
	echo := func(tc net.Conn, br *bufio.Reader, msgs ...string) {
		t.Helper()
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		for _, msg := range msgs {
			io.WriteString(tc, msg)
			got, err := br.ReadString('\n')
			if err != nil || got != msg {
				t.Fatalf("echo through the upgrade: %q %v", got, err)
			}
		}
	}
	tc, br := upgrade()
	echo(tc, br, "ping\n", "second frame\n")
	tc.Close()
	// One stays open across the reloads below (a box made or removed
	// changes the configuration): an exec, a terminal or a desktop is not
	// cut by another user's new box.
	held, heldR := upgrade()
	defer held.Close()

	resp, err := hc.Get("http://paddock.test:" + httpPort + "/setup/x?y=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 308 || resp.Header.Get("Location") != "https://paddock.test:"+httpsPort+"/setup/x?y=1" {
		t.Fatalf("redirect: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}

	// A preview of an existing box gets a certificate on demand, after the
	// ask endpoint agreed.
	m, err = getJSON("https://8080-web.paddock.test:" + httpsPort + "/app")
	if err != nil {
		t.Fatal(err)
	}
	if m["host"] != "8080-web.paddock.test:"+httpsPort || m["path"] != "/app" {
		t.Fatalf("preview upstream saw %v", m)
	}
	if d := <-asked; d != "8080-web.paddock.test" {
		t.Fatalf("ask endpoint asked about %q", d)
	}
	// A name the ask endpoint refuses gets no certificate at all.
	if _, err := hc.Get("https://8080-nosuch.paddock.test:" + httpsPort + "/"); err == nil {
		t.Fatal("a certificate for a name the ask endpoint refused")
	}

	// A box made after the configuration was loaded is served without a
	// reload: the route matches any box name, paddockd answers for them.
	if m, err := getJSON("https://80-api.paddock.test:" + httpsPort + "/"); err != nil || m["host"] != "80-api.paddock.test:"+httpsPort {
		t.Fatalf("preview of a box the configuration does not name: %v %v", m, err)
	}
	// A configuration replaced (paddockd started again with another)
	// leaves an upgraded stream it carried open: the main site never
	// stops answering.
	site.Email = "ops@paddock.test"
	if err := f.Apply(site); err != nil {
		t.Fatal(err)
	}
	if m, err := getJSON("https://paddock.test:" + httpsPort + "/after"); err != nil || m["path"] != "/after" {
		t.Fatalf("after a reload: %v %v", m, err)
	}
	echo(held, heldR, "after a reload\n")

	// A configuration that cannot start (its HTTP port is taken) is
	// refused and the running one keeps serving.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	bad := site
	bad.HTTPListen = taken.Addr().String()
	if err := f.Apply(bad); err == nil || !strings.Contains(err.Error(), "keeps serving") {
		t.Fatalf("a configuration that cannot listen: %v", err)
	}
	if m, err := getJSON("https://paddock.test:" + httpsPort + "/still"); err != nil || m["path"] != "/still" {
		t.Fatalf("after a failed reload: %v %v", m, err)
	}
	resp, err = hc.Get("http://paddock.test:" + httpPort + "/r")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 308 {
		t.Fatalf("the old redirect listener after a failed reload: %d", resp.StatusCode)
	}
}
