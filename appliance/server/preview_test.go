package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/dashboard"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
	"github.com/paddock-dev/paddock/appliance/preview"
	"github.com/paddock-dev/paddock/appliance/reconcile"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/testbed/forms"
)

// TestPreview serves preview hosts over plain HTTP with the host name
// "pd.test" (the front door adds TLS in front): a box's port is reached by
// its owner only, through a ticket and a cookie of the preview host, and
// neither the cookie nor a token reaches the box.
func TestPreview(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg, _ := config.Load(nil, []string{"PADDOCK_CONFIG=" + os.DevNull, "PADDOCK_STATE_DIR=" + dir, "PADDOCK_IMAGE=img"})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	drv := fake.New("img")
	svc := &service.Service{Store: st, Rec: &reconcile.Reconciler{Store: st, Driver: drv, Types: service.Types(cfg), Log: log},
		Driver: drv, Cfg: cfg, Log: log, Life: context.Background()}
	pages := dashboard.New(svc, st, log, "pd.test", false)

	// The "box": a web server on loopback, which records what it got.
	got := make(chan http.Header, 10)
	bl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	boxSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		h.Set("X-Got-Host", r.Host)
		h.Set("X-Got-Path", r.URL.RequestURI())
		got <- h
		// A box's own cookie is kept; one for the parent domain (which
		// would reach the dashboard and other boxes' previews) is not.
		w.Header().Add("Set-Cookie", "app2=set; Path=/")
		w.Header().Add("Set-Cookie", "paddock_session=planted; Domain=pd.test; Path=/")
		w.Header().Add("Set-Cookie", "__Host-paddock_session=planted2; Domain=.pd.test; Path=/; Secure")
		io.WriteString(w, "hello from the box")
	})}
	go boxSrv.Serve(bl)
	defer boxSrv.Close()
	_, boxPort, _ := net.SplitHostPort(bl.Addr().String())

	ts := httptest.NewUnstartedServer(nil)
	_, srvPort, _ := net.SplitHostPort(ts.Listener.Addr().String())
	prev := &preview.Handler{Store: st, Pages: pages, Hostname: "pd.test", Scheme: "http", Port: srvPort}
	ts.Config.Handler = (&Server{Svc: svc, Store: st, Log: log, Name: "test", Pages: pages, Preview: prev}).Handler()
	ts.Start()
	defer ts.Close()

	owner, _ := st.CreateUser(store.User{Name: "olga", Role: store.RoleOwner, Created: time.Now()})
	pw, _ := auth.HashPassword("a long password")
	mem, _ := st.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Password: pw, Created: time.Now()})
	other, _ := st.CreateUser(store.User{Name: "ole", Role: store.RoleMember, Password: pw, Created: time.Now()})
	_ = owner
	if _, err := svc.CreateBox(caller.With(context.Background(), mem), api.BoxPost{Name: "web"}); err != nil {
		t.Fatal(err)
	}
	st.Declare(func(tx *store.Tx) error {
		b, _ := tx.GetBox("web")
		b.IP = "127.0.0.1"
		return tx.UpdateBox(b)
	})
	st.SetObserved("web", "running", "")

	// Every name resolves to the test server, as DNS would to the host.
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, ts.Listener.Addr().String())
	}
	browserAs := func(name string) *http.Client {
		b := forms.Browser()
		b.Transport = &http.Transport{DialContext: dial}
		base := "http://pd.test:" + srvPort
		if code, _ := forms.Post(t, b, base, "/login", url.Values{"name": {name}, "password": {"a long password"}}); code != 200 {
			t.Fatalf("login %s: %d", name, code)
		}
		return b
	}
	previewURL := "http://" + boxPort + "-web.pd.test:" + srvPort + "/app?x=1"

	// Without a session, the preview sends the browser to log in.
	anon := forms.Browser()
	anon.Transport = &http.Transport{DialContext: dial}
	req, _ := http.NewRequest("GET", previewURL, nil)
	req.Header.Set("Accept", "text/html")
	resp, err := anon.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Request.URL.Host != "pd.test:"+srvPort || resp.Request.URL.Path != "/login" || strings.Contains(string(body), "hello from the box") {
		t.Fatalf("anonymous preview ended at %s: %s", resp.Request.URL, body)
	}

	// The box's owner gets through; the box sees the preview Host, and no
	// cookie or token of Paddock's.
	mb := browserAs("mia")
	pu, _ := url.Parse(previewURL)
	mb.Jar.SetCookies(pu, []*http.Cookie{{Name: "app", Value: "kept"}})
	req, _ = http.NewRequest("GET", previewURL, nil)
	req.Header.Set("Accept", "text/html")
	resp, err = mb.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello from the box" {
		t.Fatalf("owner's preview: %d %s", resp.StatusCode, body)
	}
	if sc := resp.Header.Values("Set-Cookie"); len(sc) != 1 || sc[0] != "app2=set; Path=/" {
		t.Fatalf("Set-Cookie headers of the box that reached the browser: %q", sc)
	}
	var h http.Header
	for len(got) > 0 {
		h = <-got
	}
	if h.Get("X-Got-Host") != boxPort+"-web.pd.test:"+srvPort || h.Get("X-Got-Path") != "/app?x=1" {
		t.Fatalf("the box got %v", h)
	}
	if c := h.Get("Cookie"); strings.Contains(c, "paddock_") || !strings.Contains(c, "app=kept") {
		t.Fatalf("cookies that reached the box: %q", c)
	}

	// A token works for API clients and is not passed on.
	tok, hash := auth.NewToken()
	st.AddToken(store.Token{Hash: hash, Name: "t", UserID: mem.ID, Created: time.Now()})
	hc := &http.Client{Transport: &http.Transport{DialContext: dial}}
	req, _ = http.NewRequest("GET", previewURL, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := <-got; resp.StatusCode != 200 || h.Get("Authorization") != "" {
		t.Fatalf("token preview: %d, box saw Authorization %q", resp.StatusCode, h.Get("Authorization"))
	}

	// Another member gets nothing: not from /preview, not with a token.
	ob := browserAs("ole")
	req, _ = http.NewRequest("GET", previewURL, nil)
	req.Header.Set("Accept", "text/html")
	resp, err = ob.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || strings.Contains(string(body), "hello") {
		t.Fatalf("another member's preview: %d %s", resp.StatusCode, body)
	}
	otok, ohash := auth.NewToken()
	st.AddToken(store.Token{Hash: ohash, Name: "t", UserID: other.ID, Created: time.Now()})
	req, _ = http.NewRequest("GET", previewURL, nil)
	req.Header.Set("Authorization", "Bearer "+otok)
	resp, _ = hc.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("another member's token on the preview: %d", resp.StatusCode)
	}

	// A ticket is single-use and for one host (and port).
	nb := browserAs("mia")
	nb.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, _ = nb.Get("http://pd.test:" + srvPort + "/preview?to=" + url.QueryEscape(previewURL))
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != 303 || loc.Path != preview.AuthPath {
		t.Fatalf("/preview: %d %s", resp.StatusCode, loc)
	}
	wrong := *loc
	wrong.Host = "1-web.pd.test:" + srvPort
	if resp, _ := hc.Get(wrong.String()); resp.StatusCode != 403 {
		t.Fatalf("a ticket on another preview host: %d", resp.StatusCode)
	}
	if resp, _ := hc.Get(loc.String()); resp.StatusCode != 403 {
		t.Fatalf("a used ticket: %d", resp.StatusCode)
	}
	// A ticket is for its host's port too: a preview URL on another port
	// of the name (where another program of this machine may listen, to
	// be sent the ticket) gets none, and a ticket taken there is refused.
	t.Run("AttackTicketOnAnotherPort", func(t *testing.T) {
		otherPort := boxPort + "-web.pd.test:1"
		if resp, _ := nb.Get("http://pd.test:" + srvPort + "/preview?to=" + url.QueryEscape("http://"+otherPort+"/")); resp.StatusCode != 400 {
			t.Fatalf("/preview to another port of the preview name: %d", resp.StatusCode)
		}
		resp, _ := nb.Get("http://pd.test:" + srvPort + "/preview?to=" + url.QueryEscape(previewURL))
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		stolen := *loc
		stolen.Host = otherPort
		if resp, _ := hc.Get(stolen.String()); resp.StatusCode != 403 {
			t.Fatalf("a ticket redeemed on another port of its name: %d", resp.StatusCode)
		}
	})

	// The ask endpoint approves the host name, and preview names of ports on
	// which a running box answers: not a port where nothing listens, not a
	// box that does not exist, not another domain.
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	_, closedPort, _ := net.SplitHostPort(closed.Addr().String())
	closed.Close()
	ask := func(d string) int {
		rec := httptest.NewRecorder()
		prev.Ask(rec, httptest.NewRequest("GET", "/ask?domain="+d, nil))
		return rec.Code
	}
	for d, want := range map[string]int{"pd.test": 200, boxPort + "-web.pd.test": 200, closedPort + "-web.pd.test": 404,
		"80-nosuch.pd.test": 404, "evil.test": 404} {
		if got := ask(d); got != want {
			t.Errorf("ask %s: %d, want %d", d, got, want)
		}
	}
	// New names are approved at most AskLimit an hour; a name approved
	// before still is.
	more := make([]string, 3)
	for i := range more {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		defer l.Close()
		_, p, _ := net.SplitHostPort(l.Addr().String())
		more[i] = p + "-web.pd.test"
	}
	prev.AskLimit = 3
	if ask(more[0]) != 200 || ask(more[1]) != 200 || ask(more[2]) != 429 || ask(boxPort+"-web.pd.test") != 200 {
		t.Errorf("the hourly limit of new preview names does not hold")
	}

	// A box's ports, through the API, carry their preview address: one on
	// every address has one, one on the box's loopback says why not.
	drv.ExecFunc = func(box string, spec driver.ExecSpec) (int, error) {
		io.WriteString(spec.Stdout, "  sl  local_address rem_address   st\n"+
			"   0: 00000000:1F90 00000000:0000 0A\n"+ // 0.0.0.0:8080
			"   1: 0100007F:1435 00000000:0000 0A\n") // 127.0.0.1:5173
		return 0, nil
	}
	resp, err = mb.Get("http://pd.test:" + srvPort + "/v1/boxes/web/ports")
	if err != nil {
		t.Fatal(err)
	}
	var ports []api.Port
	json.NewDecoder(resp.Body).Decode(&ports)
	resp.Body.Close()
	urls := map[int]string{}
	for _, p := range ports {
		urls[p.Port] = p.URL
	}
	if want := "http://8080-web.pd.test:" + srvPort + "/"; len(ports) != 2 || urls[8080] != want || urls[5173] != "" {
		t.Errorf("the box's ports through the API: %+v (want 8080 at %s, 5173 without)", ports, want)
	}
}

// Under HTTPS the session cookie has the __Host- prefix (Secure, Path=/,
// no Domain), so a preview host cannot set one the dashboard would read.
func TestSessionCookieIsHostOnly(t *testing.T) {
	ts, svc, _ := newBare(t)
	pw, _ := auth.HashPassword("a long password")
	svc.Store.CreateUser(store.User{Name: "olga", Role: store.RoleOwner, Password: pw, Created: time.Now()})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	secure := httptest.NewServer((&Server{Svc: svc, Store: svc.Store, Log: log, Name: "test", Pages: dashboard.New(svc, svc.Store, log, "", true)}).Handler())
	defer secure.Close()
	_ = ts
	b := forms.Browser()
	b.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, _ := http.NewRequest("POST", secure.URL+"/login", strings.NewReader(url.Values{"name": {"olga"}, "password": {"a long password"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", secure.URL)
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sc := resp.Header.Get("Set-Cookie")
	if !strings.HasPrefix(sc, "__Host-paddock_session=") || !strings.Contains(sc, "; Secure") || !strings.Contains(sc, "Path=/") || strings.Contains(sc, "Domain") {
		t.Fatalf("session cookie under HTTPS: %q (%d)", sc, resp.StatusCode)
	}
	// The plain name is not read: a planted paddock_session logs nobody in.
	tok := strings.SplitN(strings.TrimPrefix(sc, "__Host-paddock_session="), ";", 2)[0]
	for name, want := range map[string]int{"paddock_session": 401, "__Host-paddock_session": 200} {
		req, _ := http.NewRequest("GET", secure.URL+"/v1/whoami", nil)
		req.AddCookie(&http.Cookie{Name: name, Value: tok})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("whoami with cookie %s: %d, want %d", name, resp.StatusCode, want)
		}
	}
}
