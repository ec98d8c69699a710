package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/access"
	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/dashboard"
	"github.com/paddock-dev/paddock/appliance/jobs"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/appliance/service/coretest"
	"github.com/paddock-dev/paddock/appliance/store"
)

// newBare serves the API over a real store and the fake driver, with no
// users yet.
func newBare(t *testing.T) (*httptest.Server, *service.Service, string) {
	svc, _ := coretest.New(t)
	dir := svc.Cfg.StateDir
	sealer, err := auth.LoadSealer(filepath.Join(dir, "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	svc.Sealer = sealer
	svc.Audit = &service.Auditor{Key: audit.Key("a key of thirty-two bytes, for t")}
	pages := dashboard.New(svc, svc.Store, svc.Log, "", false)
	ts := httptest.NewServer((&Server{Svc: svc, Store: svc.Store, Log: svc.Log, Name: "test", Pages: pages}).Handler())
	t.Cleanup(ts.Close)
	return ts, svc, dir
}

// newServer is newBare with an owner, and the owner's API token.
func newServer(t *testing.T) (*httptest.Server, string, string) {
	ts, svc, dir := newBare(t)
	return ts, addOwner(t, svc), dir
}

// accessOf is the users' verbs over svc (what lives in the store, as
// links and invitations do, is the server's too).
func accessOf(svc *service.Service) *access.Access {
	return access.New(svc, svc.Store, &svc.Cfg, svc.Log)
}

// jobsIn is the jobs among the server's capabilities (its Handler made
// them).
func jobsIn(srv *Server) *jobs.Jobs {
	for _, c := range srv.Capabilities {
		if j, ok := c.(*jobs.Jobs); ok {
			return j
		}
	}
	panic("the server has no jobs")
}

// addOwner makes the owner and returns an API token of theirs.
func addOwner(t *testing.T, svc *service.Service) string {
	u, err := svc.Store.CreateUser(store.User{Name: "boss", Role: store.RoleOwner, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tok, hash := auth.NewToken()
	if err := svc.Store.AddToken(store.Token{Hash: hash, Name: "test", UserID: u.ID, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return tok
}

func call(t *testing.T, ts *httptest.Server, tok, method, path, body string) (int, api.Error) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e api.Error
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &e)
	return resp.StatusCode, e
}

func TestErrorsMapToStatusAndField(t *testing.T) {
	ts, tok, _ := newServer(t)
	tests := []struct {
		name, tok, method, path, body string
		status                        int
		code, field, msg              string
	}{
		{"no token", "", "GET", "/v1/boxes", "", 401, "unauthorized", "", "no token"},
		{"wrong token", "pdk_nope", "GET", "/v1/boxes", "", 401, "unauthorized", "", "invalid token"},
		{"unknown route still needs a token", "", "GET", "/v1/nothing", "", 401, "unauthorized", "", ""},
		{"unknown route", tok, "GET", "/v1/nothing", "", 404, "not_found", "", "no route"},
		{"unknown box", tok, "GET", "/v1/boxes/nope", "", 404, "not_found", "", `no box named "nope"`},
		{"bad type", tok, "POST", "/v1/boxes", `{"type":"huge"}`, 400, "invalid", "type", "unknown box type"},
		{"bad name", tok, "POST", "/v1/boxes", `{"name":"Nope!"}`, 400, "invalid", "name", "invalid box name"},
		{"bad ttl", tok, "POST", "/v1/boxes", `{"ttl":"soon"}`, 400, "invalid", "ttl", "bad ttl"},
		{"unknown field", tok, "POST", "/v1/boxes", `{"nmae":"x"}`, 400, "invalid", "nmae", "unknown field"},
		{"wrong json type", tok, "POST", "/v1/boxes", `{"ttl":5}`, 400, "invalid", "ttl", "expected string"},
		{"missing image", tok, "POST", "/v1/boxes", `{"image":"other"}`, 400, "invalid", "image", "not on the server"},
		{"mount outside /mnt", tok, "POST", "/v1/boxes", `{"mounts":[{"drive":"d","path":"/etc"}]}`, 400, "invalid", "mounts", "under /mnt"},
		{"undeclared drive", tok, "POST", "/v1/boxes", `{"mounts":[{"drive":"d","path":"/mnt/d"}]}`, 400, "invalid", "mounts", `no drive named "d"`},
		{"exec of a missing box", tok, "POST", "/v1/boxes/nope/exec", `{"cmd":["true"]}`, 404, "not_found", "", `no box named "nope"`},
		{"push to unknown box", tok, "PUT", "/v1/boxes/nope/files?path=/x", "", 404, "not_found", "", "no box"},
		{"rm unknown drive", tok, "DELETE", "/v1/drives/nope", "", 404, "not_found", "", `no drive named "nope"`},
		{"desktop ticket needs a token", "", "POST", "/v1/boxes/web/desktop", "", 401, "unauthorized", "", "no token"},
		{"desktop ticket for an unknown box", tok, "POST", "/v1/boxes/nope/desktop", "", 404, "not_found", "", `no box named "nope"`},
		{"a CIDR with host bits", tok, "POST", "/v1/policies", `{"name":"p","allow_cidrs":["10.1.2.3/16"]}`, 400, "invalid", "policy.p.allow_cidrs", "host bits are set; did you mean 10.1.0.0/16?"},
		{"a JSON body over 1 MiB", tok, "POST", "/v1/boxes", `{"env":{"A":"` + strings.Repeat("x", 1<<20) + `"}}`, 400, "invalid", "", "over 1024 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, e := call(t, ts, tt.tok, tt.method, tt.path, tt.body)
			if status != tt.status || e.Code != tt.code || e.Field != tt.field || !strings.Contains(e.Message, tt.msg) {
				t.Errorf("got %d %+v, want %d %s field %q message containing %q", status, e, tt.status, tt.code, tt.field, tt.msg)
			}
		})
	}
	// Nothing of the above declared anything.
	if status, _ := call(t, ts, tok, "GET", "/v1/boxes", ""); status != 200 {
		t.Fatal(status)
	}
	if status, e := call(t, ts, tok, "GET", "/v1/policies/p", ""); status != 404 && status != 405 {
		t.Fatalf("a refused policy: %d %+v", status, e)
	}
	// The positive control: the same CIDR without host bits.
	if status, e := call(t, ts, tok, "POST", "/v1/policies", `{"name":"p","allow_cidrs":["10.1.0.0/16"]}`); status != 201 {
		t.Fatalf("a canonical CIDR: %d %+v", status, e)
	}
}

func TestConflicts(t *testing.T) {
	ts, tok, _ := newServer(t)
	if status, e := call(t, ts, tok, "POST", "/v1/boxes", `{"name":"web"}`); status != 201 {
		t.Fatalf("create: %d %+v", status, e)
	}
	status, e := call(t, ts, tok, "POST", "/v1/boxes", `{"name":"web"}`)
	if status != 409 || e.Code != "conflict" || !strings.Contains(e.Message, `the box name "web" is taken`) {
		t.Fatalf("duplicate: %d %+v", status, e)
	}
	call(t, ts, tok, "POST", "/v1/drives", `{"name":"d"}`)
	call(t, ts, tok, "POST", "/v1/boxes", `{"name":"user","mounts":[{"drive":"d","path":"/mnt/d"}]}`)
	status, e = call(t, ts, tok, "DELETE", "/v1/drives/d", "")
	if status != 409 || !strings.Contains(e.Message, "mounted by user") {
		t.Fatalf("drive in use: %d %+v", status, e)
	}
	status, e = call(t, ts, tok, "POST", "/v1/boxes/web/restore", `{}`)
	if status != 409 || !strings.Contains(e.Message, "no snapshots") {
		t.Fatalf("restore without snapshots: %d %+v", status, e)
	}
}

func TestTokensAreStoredHashed(t *testing.T) {
	_, tok, dir := newServer(t)
	read := 0
	for _, f := range []string{"paddock.db", "paddock.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			continue
		}
		read++
		if !bytes.Contains(b, []byte(auth.Hash(tok))) && f == "paddock.db-wal" {
			t.Errorf("the token's hash is not in %s either: is this the right file?", f)
		}
		if bytes.Contains(b, []byte(tok)) || bytes.Contains(b, []byte(strings.TrimPrefix(tok, auth.Prefix))) {
			t.Fatalf("%s holds the token in clear", f)
		}
	}
	if read == 0 {
		t.Fatal("no database file to look into")
	}
}

// The desktop websocket opens only with a ticket, and a ticket only once.
func TestDesktopTickets(t *testing.T) {
	ts, tok, _ := newServer(t)
	get := func(path string) int {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/desktop/web/ws"); code != 401 {
		t.Fatalf("websocket without a ticket: %d", code)
	}
	if code := get("/desktop/web/ws?ticket=guess"); code != 401 {
		t.Fatalf("websocket with a made-up ticket: %d", code)
	}
	if code := get("/novnc/core/rfb.js"); code != 200 {
		t.Fatalf("noVNC not served: %d", code)
	}
	if code := get("/desktop/web/"); code != 200 {
		t.Fatalf("page not served: %d", code)
	}
	call(t, ts, tok, "POST", "/v1/boxes", `{"name":"web","desktop":false}`)
	status, e := call(t, ts, tok, "POST", "/v1/boxes/web/desktop", "")
	if status != 409 || !strings.Contains(e.Message, "has no desktop") {
		t.Fatalf("ticket for a box without a desktop: %d %+v", status, e)
	}
}

// Heavy routes are rate limited per user: past the burst a token gets
// 429 with Retry-After and nothing is made; a new token of the same user
// is held up as well (tokens are free to make); another user is not.
func TestHeavyRoutesAreLimitedPerUser(t *testing.T) {
	ts, srv, svc := wired(t)
	srv.Heavy.Burst, srv.Heavy.Every = 2, time.Hour
	routed := map[string]bool{}
	for _, r := range srv.Routes() {
		routed[r.Pattern] = true
	}
	for p := range heavy {
		if !routed[p] {
			t.Errorf("heavy route %q is not routed", p)
		}
	}
	owner := addOwner(t, svc)
	for i, want := range []int{201, 201, 429} {
		if code, e := call(t, ts, owner, "POST", "/v1/boxes", fmt.Sprintf(`{"name":"h%d"}`, i)); code != want {
			t.Fatalf("request %d: %d %+v", i, code, e)
		}
	}
	if _, err := svc.GetBox("h2"); err == nil {
		t.Fatal("the refused request made a box")
	}
	if code, _ := call(t, ts, owner, "GET", "/v1/boxes", ""); code != 200 {
		t.Fatalf("a light route after the limit: %d", code)
	}
	same, hash := auth.NewToken()
	u, _ := svc.Store.UserByName("boss")
	svc.Store.AddToken(store.Token{Hash: hash, Name: "second", UserID: u.ID, Created: time.Now()})
	if code, e := call(t, ts, same, "POST", "/v1/boxes", `{"name":"h3"}`); code != 429 {
		t.Fatalf("a second token of the same user: %d %+v", code, e)
	}
	mia, err := svc.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	other, hash := auth.NewToken()
	svc.Store.AddToken(store.Token{Hash: hash, Name: "hers", UserID: mia.ID, Created: time.Now()})
	if code, e := call(t, ts, other, "POST", "/v1/boxes", `{"name":"h4"}`); code != 201 {
		t.Fatalf("another user: %d %+v", code, e)
	}
}
