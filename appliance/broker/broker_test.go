package broker

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseHeader(t *testing.T) {
	for spec, want := range map[string]Header{
		"x-api-key":              {Name: "X-Api-Key"},
		"Bearer":                 {Name: "Authorization", Prefix: "Bearer "},
		"token":                  {Name: "Authorization", Prefix: "token "},
		"X-Goog-Api-Key":         {Name: "X-Goog-Api-Key"},
		"Authorization: Basic":   {Name: "Authorization", Prefix: "Basic "},
		"private-token":          {Name: "Private-Token"},
		" x-api-key ":            {Name: "X-Api-Key"},
		"Authorization:   Token": {Name: "Authorization", Prefix: "Token "},
	} {
		h, err := ParseHeader(spec)
		if err != nil || h != want {
			t.Errorf("%q: %+v %v, want %+v", spec, h, err, want)
		}
		if back, err := ParseHeader(h.String()); err != nil || back != h {
			t.Errorf("%q: %q reads back as %+v %v", spec, h.String(), back, err)
		}
	}
	for _, bad := range []string{"", "a b", "x:", "Host", "content-length", "X: a\nb", strings.Repeat("x", 70)} {
		if _, err := ParseHeader(bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}

func TestCheckHostsAndLimits(t *testing.T) {
	if err := CheckHosts([]string{"api.anthropic.com", "api.model.test:8443"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{nil, {"localhost"}, {"API.example.com"}, {"1.2.3.4"}, {"a.b:0"}, {"a.b:99999"}, {"a.b/c"}, {"http://a.b"}, {"-a.b"}} {
		if err := CheckHosts(bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
	for s, want := range map[string]Limit{"": {}, "60/min": {60, time.Minute}, "5/s": {5, time.Second}, "1000/h": {1000, time.Hour}, "9/day": {9, 24 * time.Hour}, "10 / Minute": {10, time.Minute}} {
		l, err := ParseLimit(s)
		if err != nil || l != want {
			t.Errorf("%q: %+v %v", s, l, err)
		}
		if back, _ := ParseLimit(l.String()); back != l {
			t.Errorf("%q: %q reads back as %+v", s, l.String(), back)
		}
	}
	for _, bad := range []string{"0/min", "x/min", "5/week", "5", "-1/s"} {
		if _, err := ParseLimit(bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}

// A broker in front of a TLS test server: the stand-in is swapped for
// the secret in its header only, the API's answer and status come back
// and are counted; a stand-in of another box, another host, another
// header, a rate, a refused address and an untrusted certificate are
// each turned away with their reason, and the secret is never in an
// answer to the box.
func TestBroker(t *testing.T) {
	var mu sync.Mutex
	var got []http.Header
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Path", r.URL.RawPath+"|"+r.URL.Path+"?"+r.URL.RawQuery)
		w.WriteHeader(201)
		io.WriteString(w, "got "+string(body))
	}))
	defer api.Close()
	_, port, _ := net.SplitHostPort(api.Listener.Addr().String())
	host := "example.com:" + port // the name of httptest's certificate
	key := []byte("k")
	set := time.Unix(1000, 0)
	box := netip.MustParseAddr("127.0.0.1")
	mine := StandIn(key, "uid-a", 1, "API_KEY", set)
	grant := Grant{Box: "a", StandIn: mine, Value: []byte("sk-real"), Header: Header{Name: "X-Api-Key"}, Hosts: []string{host}, Limit: Limit{N: 3, Per: time.Hour}}
	dones := make(chan Done, 100)
	var refuseAll atomic.Bool
	pool := api.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	b := &Broker{
		Grant: func(ctx context.Context, addr netip.Addr, secret string, user int64) (Grant, error) {
			if addr != box || secret != "API_KEY" {
				return Grant{}, &Refusal{Status: 403, Reason: "no such secret " + secret}
			}
			if user == 7 {
				// A user's secret whom the box is shared with.
				g := grant
				g.User, g.StandIn, g.Value = "seven", UserStandIn(key, "uid-a", 7, 7, "API_KEY", set), []byte("sk-seven")
				return g, nil
			} else if user != 0 {
				return Grant{Box: "a"}, &Refusal{Status: 403, Reason: "no such user"}
			}
			return grant, nil
		},
		Done:    func(d Done) { dones <- d },
		RootCAs: pool,
		Resolver: &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			return nil, io.EOF
		}},
		Refuse: func(ip netip.Addr) bool { return refuseAll.Load() },
	}
	// The test API's name is looked up in /etc/hosts' stead: the broker
	// dials what its Resolver answers, so the test gives it a dialer.
	b.init()
	b.proxy.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if refuseAll.Load() {
			return nil, io.ErrUnexpectedEOF
		}
		return (&net.Dialer{}).DialContext(ctx, network, api.Listener.Addr().String())
	}
	srv := httptest.NewServer(b)
	defer srv.Close()
	send := func(path, header, value string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader("hello"))
		if header != "" {
			req.Header.Set(header, value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if strings.Contains(string(body), "sk-real") {
			t.Fatalf("the secret came back to the box: %s", body)
		}
		return resp.StatusCode, resp.Header.Get("X-Path") + " " + string(body)
	}
	next := func() Done {
		t.Helper()
		select {
		case d := <-dones:
			return d
		case <-time.After(10 * time.Second):
			t.Fatal("no Done")
		}
		return Done{}
	}

	code, body := send("/"+host+"/v1/a%2Fb?x=1", "X-Api-Key", mine)
	if code != 201 || body != "/v1/a%2Fb|/v1/a/b?x=1 got hello" {
		t.Fatalf("forwarded: %d %q", code, body)
	}
	if h := got[0]; h.Get("X-Api-Key") != "sk-real" || h.Get("X-Forwarded-For") != "" {
		t.Fatalf("the API got %v", h)
	}
	if d := next(); d.Box != "a" || d.Secret != "API_KEY" || d.Status != 201 || d.Up != 5 || d.Down != int64(len("got hello")) || d.Refused != "" {
		t.Fatalf("counted: %+v", d)
	}

	// A user's stand-in spends their secret, and says so.
	code, _ = send("/"+host+"/v1", "X-Api-Key", UserStandIn(key, "uid-a", 7, 7, "API_KEY", set))
	if code != 201 || got[1].Get("X-Api-Key") != "sk-seven" {
		t.Fatalf("a user's stand-in: %d, the API got %v", code, got[1])
	}
	if d := next(); d.User != "seven" || d.Secret != "API_KEY" || d.Refused != "" {
		t.Fatalf("counted: %+v", d)
	}
	got = got[:1]

	for _, c := range []struct {
		path, header, value string
		code                int
		reason              string
	}{
		{"/" + host + "/", "X-Api-Key", "plain-key", 401, "no stand-in"},
		{"/" + host + "/", "X-Api-Key", UserStandIn(key, "uid-a", 8, 7, "API_KEY", set), 403, "no such user"},
		{"/" + host + "/", "X-Api-Key", strings.Replace(UserStandIn(key, "uid-a", 7, 7, "API_KEY", set), "-u7-", "-u9-", 1), 403, "no such user"},
		{"/" + host + "/", "X-Api-Key", mine[:len(mine)-40] + UserStandIn(key, "uid-a", 7, 7, "API_KEY", set)[len(mine)-40+3:], 403, "is not box a's"},
		{"/" + host + "/", "X-Api-Key", StandIn(key, "uid-b", 1, "API_KEY", set), 403, "is not box a's"},
		{"/" + host + "/", "X-Api-Key", StandIn(key, "uid-a", 1, "API_KEY", set.Add(time.Second)), 403, "is not box a's"},
		{"/" + host + "/", "X-Api-Key", StandIn(key, "uid-a", 1, "OTHER", set), 403, "no such secret OTHER"},
		{"/other.example.test/", "X-Api-Key", mine, 403, "is not sent to other.example.test"},
		{"/" + host + "/", "Authorization", "Bearer " + mine, 400, `goes in the header "X-Api-Key"`},
		{"/localhost/", "X-Api-Key", mine, 400, "ask for http://BROKER/HOST/PATH"},
	} {
		code, body := send(c.path, c.header, c.value)
		d := next()
		if code != c.code || !strings.Contains(body, c.reason) || !strings.Contains(d.Refused, c.reason) || d.Status != c.code {
			t.Errorf("%s %s: %d %q (%+v), want %d %q", c.path, c.value, code, body, d, c.code, c.reason)
		}
	}
	if len(got) != 1 {
		t.Fatalf("refused requests reached the API: %d", len(got))
	}

	// The rate: 3 an hour, the first of which was sent above.
	for i, want := range []int{201, 201, 429, 429} {
		code, body := send("/"+host+"/", "X-Api-Key", mine)
		d := next()
		if code != want || (want == 429 && d.FirstLimited != (i == 2)) {
			t.Fatalf("request %d: %d %s %+v", i+2, code, body, d)
		}
	}

	// An address the broker may not dial, and a certificate it does not
	// trust, are the API's failure (502), not the box's.
	grant.Limit = Limit{}
	refuseAll.Store(true)
	b.proxy.Transport.(*http.Transport).CloseIdleConnections()
	if code, body := send("/"+host+"/", "X-Api-Key", mine); code != 502 {
		t.Fatalf("refused address: %d %s", code, body)
	}
	next()
	refuseAll.Store(false)
	b.proxy.Transport.(*http.Transport).TLSClientConfig.RootCAs = nil
	b.proxy.Transport.(*http.Transport).CloseIdleConnections()
	if code, body := send("/"+host+"/", "X-Api-Key", mine); code != 502 || !strings.Contains(body, "certificate") {
		t.Fatalf("untrusted certificate: %d %s", code, body)
	}
	next()
}

// The dialler refuses what Refuse says, whatever the name resolves to.
func TestDialRefuses(t *testing.T) {
	b := &Broker{Refuse: func(ip netip.Addr) bool { return ip.IsLoopback() }}
	_, err := b.dial(context.Background(), "tcp", "localhost:443")
	if err == nil || !strings.Contains(err.Error(), "never sends a secret") {
		t.Fatalf("localhost: %v", err)
	}
}

// A streamed answer (server-sent events, as the model APIs send) reaches
// the box as it is written, not when it ends.
func TestBrokerStreams(t *testing.T) {
	release := make(chan struct{})
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "data: last\n\n")
	}))
	defer api.Close()
	defer close(release)
	_, port, _ := net.SplitHostPort(api.Listener.Addr().String())
	host := "example.com:" + port
	key := []byte("k")
	mine := StandIn(key, "uid", 1, "K", time.Unix(1, 0))
	b := &Broker{
		Grant: func(context.Context, netip.Addr, string, int64) (Grant, error) {
			return Grant{Box: "a", StandIn: mine, Value: []byte("v"), Header: Header{Name: "Authorization", Prefix: "Bearer "}, Hosts: []string{host}}, nil
		},
		RootCAs: api.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
	}
	b.init()
	b.proxy.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, api.Listener.Addr().String())
	}
	srv := httptest.NewServer(b)
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/"+host+"/stream", nil)
	req.Header.Set("Authorization", "Bearer "+mine)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 64)
		n, _ := io.ReadAtLeast(resp.Body, buf, len("data: first\n\n"))
		got <- string(buf[:n])
	}()
	// The first event arrives while the API still holds the rest back.
	if first := <-got; first != "data: first\n\n" {
		t.Fatalf("first read: %q", first)
	}
}
