package server

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/dashboard"
	"github.com/paddock-dev/paddock/appliance/preview"
	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/install/clients"
)

// wired serves the whole route table as paddockd wires it: the API, the
// pages, the preview start page and the desktops.
func wired(t *testing.T) (*httptest.Server, *Server, *service.Service) {
	ts, svc, _ := newBare(t)
	ts.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pages := dashboard.New(svc, svc.Store, log, "", false)
	srv := &Server{Svc: svc, Store: svc.Store, Log: log, Name: "test", Pages: pages,
		Preview: &preview.Handler{Store: svc.Store, Pages: pages, Hostname: "pd.test", Scheme: "http"},
		CLI:     &clients.Handler{Dir: t.TempDir()}}
	full := httptest.NewServer(srv.Handler())
	t.Cleanup(full.Close)
	return full, srv, svc
}

var wildcard = regexp.MustCompile(`\{([a-z]+)(\.\.\.)?\}|\{\$\}`)

// request makes the request of a route's pattern, with each wildcard
// replaced by fill(segment before it, wildcard name).
func request(t *testing.T, base string, r route.Route, fill func(seg, name string) string) *http.Request {
	method, p, ok := strings.Cut(r.Pattern, " ")
	if !ok {
		method, p = "GET", r.Pattern
	}
	parts := strings.Split(p, "/")
	for i, part := range parts {
		if m := wildcard.FindStringSubmatch(part); m != nil {
			if m[0] == "{$}" {
				parts[i] = ""
				continue
			}
			parts[i] = fill(parts[i-1], m[1])
		}
	}
	if strings.HasSuffix(p, "/") && !strings.HasSuffix(r.Pattern, "{$}") {
		parts[len(parts)-1] = "no-such-page" // a subtree: a path under it
	}
	body := ""
	if method == "POST" || method == "PUT" {
		body = "{}"
	}
	req, err := http.NewRequest(method, base+strings.Join(parts, "/"), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

func do(t *testing.T, req *http.Request) (int, string, http.Header) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// Every route of the real table, called without credentials, is refused:
// 401 for the API and tickets, the login page for pages. Only the routes
// the table marks public answer.
func TestEveryRouteNeedsCredentials(t *testing.T) {
	ts, srv, _ := wired(t)
	counts := map[string]int{}
	for _, r := range srv.Routes() {
		counts[r.Access]++
		req := request(t, ts.URL, r, func(string, string) string { return "x" })
		code, body, h := do(t, req)
		switch r.Access {
		case route.Token, route.Ticket:
			// A Connect stream's refusal is its end, after a 200 (E2B's
			// envd): its code is Connect's 401.
			stream := h.Get("Content-Type") == "application/connect+json" && strings.Contains(body, `{"error":{"code":"unauthenticated"`)
			if code != http.StatusUnauthorized && !(code == http.StatusOK && stream) {
				t.Errorf("%s without credentials: %d %.200s", r.Pattern, code, body)
			}
		case route.Session:
			if loc := h.Get("Location"); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/login") {
				if code != http.StatusUnauthorized && code != http.StatusForbidden {
					t.Errorf("%s without a session: %d (Location %q) %.200s", r.Pattern, code, loc, body)
				}
			}
		case route.Public:
		default:
			t.Errorf("%s: unknown access %q", r.Pattern, r.Access)
		}
	}
	t.Logf("routes by access: %v", counts)
	if counts[route.Token] < 40 || counts[route.Session] < 3 || counts[route.Ticket] < 1 {
		t.Fatalf("the route table looks short: %v", counts)
	}
}

// Every route of the real table that names an object, called by a member
// about another user's object, answers exactly as for an object that does
// not exist; for boxes, jobs, drives and policies that is "not found".
// Nothing of the owner's is changed by the calls.
func TestMembersFindNothingOfOthers(t *testing.T) {
	ts, srv, svc := wired(t)
	owner := addOwner(t, svc)
	miaBrowser := invite(t, ts.URL, owner, "mia")
	mia := deviceLogin(t, ts.URL, miaBrowser)
	// A page takes the member's session cookie; the API, the member's token.
	asMia := func(req *http.Request, access string) {
		if access == route.Session {
			for _, c := range miaBrowser.Jar.Cookies(req.URL) {
				req.AddCookie(c)
			}
			return
		}
		req.Header.Set("Authorization", "Bearer "+mia)
	}
	ownerCall := func(method, path, body string) {
		t.Helper()
		if code, e := call(t, ts, owner, method, path, body); code >= 300 {
			t.Fatalf("owner %s %s: %d %+v", method, path, code, e)
		}
	}
	ownerCall("POST", "/v1/boxes", `{"name":"bossbox"}`)
	ownerCall("POST", "/v1/boxes/bossbox/snapshots", ``)
	ownerCall("POST", "/v1/drives", `{"name":"bossdrive"}`)
	ownerCall("POST", "/v1/policies", `{"name":"bosspol","allow_domains":["example.test"]}`)
	ownerCall("PUT", "/v1/secrets/BOSS_KEY", `boss-secret`)
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	k, _ := ssh.NewPublicKey(pub)
	ownerCall("POST", "/v1/keys", `{"name":"bosskey","key":"`+strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))+`"}`)
	job, err := jobsIn(srv).Start("bossbox", api.ExecPost{Cmd: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	boss, err := svc.Store.UserByName("boss")
	if err != nil {
		t.Fatal(err)
	}
	var bossInvite api.InviteCreated
	if bossInvite, err = accessOf(svc).Invite(caller.With(context.Background(), boss), api.InvitePost{}); err != nil {
		t.Fatal(err)
	}
	const bossImageID = "sha256:b0551111222233334444555566667777888899990000aaaabbbbccccddddeeee"
	if err := svc.Store.PutImage(store.Image{Owner: boss.ID, Name: "bossimg", Tag: "latest", ID: bossImageID, Built: time.Now()}); err != nil {
		t.Fatal(err)
	}
	theirs := map[string]string{
		"boxes": "bossbox", "jobs": job.ID, "drives": "bossdrive", "policies": "bosspol",
		"secrets": "BOSS_KEY", "tokens": "test", "keys": "bosskey", "users": "boss", "desktop": "bossbox", "screenshots": "1700000000000000000",
		"nodes":  "n2", // the servers are the owner's alone: a member is refused either way
		"grants": "boss",
		"groups": "eng", "members": "boss",
		"contexts": "python",
		"images":   "bossimg",
		"invites":  bossInvite.ID,
	}
	notFound := map[string]bool{"boxes": true, "jobs": true, "drives": true, "policies": true, "images": true}
	tried := 0
	for _, r := range srv.Routes() {
		if r.Access == route.Public || !wildcard.MatchString(strings.ReplaceAll(r.Pattern, "{$}", "")) {
			continue
		}
		strict := false
		fill := func(none bool) func(seg, name string) string {
			return func(seg, name string) string {
				v, ok := theirs[seg]
				if !ok {
					t.Fatalf("%s: no object of the owner's for {%s} after /%s/: add one to the test", r.Pattern, name, seg)
				}
				strict = strict || (notFound[seg] && r.Access != route.Ticket)
				if none {
					return "nosuch" + strings.ToLower(v)
				}
				return v
			}
		}
		tried++
		req := request(t, ts.URL, r, fill(false))
		asMia(req, r.Access)
		code, body, _ := do(t, req)
		req = request(t, ts.URL, r, fill(true))
		asMia(req, r.Access)
		ncode, nbody, _ := do(t, req)
		// The names differ; the rest must not. (Any other use of the
		// owner's names is replaced on both sides alike.)
		for _, v := range theirs {
			mine := regexp.MustCompile(`\b` + regexp.QuoteMeta(v) + `\b`)
			none := regexp.MustCompile(`\b` + regexp.QuoteMeta("nosuch"+strings.ToLower(v)) + `\b`)
			body = mine.ReplaceAllString(body, "<obj>")
			nbody = mine.ReplaceAllString(none.ReplaceAllString(nbody, "<obj>"), "<obj>")
		}
		if code != ncode || body != nbody {
			t.Errorf("%s: another user's object answers %d %.200s; one that does not exist %d %.200s", r.Pattern, code, body, ncode, nbody)
		}
		if strict && code != http.StatusNotFound {
			t.Errorf("%s: another user's object answers %d, want 404: %.200s", r.Pattern, code, body)
		}
	}
	t.Logf("%d routes name an object", tried)
	if tried < 25 {
		t.Fatalf("only %d routes name an object", tried)
	}
	// The owner's image by its other names (its server name, tag, id, an
	// id prefix) is no more there for the member than one that does not
	// exist: not listed, shown, removed, nor made a box from.
	for _, name := range []string{"bossimg:latest", "boss%2Fbossimg", "boss%2Fbossimg:latest", bossImageID, bossImageID[7:19], bossImageID[7:11]} {
		for _, m := range []string{"GET", "DELETE"} {
			if code, e := call(t, ts, mia, m, "/v1/images/"+name, ""); code != http.StatusNotFound {
				t.Errorf("member %s /v1/images/%s: %d %+v, want 404", m, name, code, e)
			}
		}
		ref, _ := url.PathUnescape(name)
		_, want := call(t, ts, mia, "POST", "/v1/boxes", `{"name":"mine","image":"nosuchimage"}`)
		_, got := call(t, ts, mia, "POST", "/v1/boxes", `{"name":"mine","image":"`+ref+`"}`)
		if strings.ReplaceAll(got.Message, ref, "<ref>") != strings.ReplaceAll(want.Message, "nosuchimage", "<ref>") || got.Code != want.Code {
			t.Errorf("member's box from the owner's image %s: %+v; from one that does not exist: %+v", ref, got, want)
		}
	}
	if code, _ := call(t, ts, mia, "GET", "/v1/images", ""); code != 200 {
		t.Errorf("member's image list: %d", code)
	}
	req, _ := http.NewRequest("GET", ts.URL+"/v1/images", nil)
	req.Header.Set("Authorization", "Bearer "+mia)
	if _, body, _ := do(t, req); strings.Contains(body, "bossimg") {
		t.Errorf("the member's image list has the owner's image: %s", body)
	}
	if _, err := svc.Store.GetImage(boss.ID, "bossimg", "latest"); err != nil {
		t.Errorf("after the member's calls, the owner's image: %v", err)
	}
	// Nothing of the owner's went.
	for _, p := range []string{"/v1/boxes/bossbox", "/v1/boxes/bossbox/jobs/" + job.ID} {
		if code, e := call(t, ts, owner, "GET", p, ""); code != 200 {
			t.Errorf("after the member's calls, owner's GET %s: %d %+v", p, code, e)
		}
	}
	for p, want := range map[string]string{"/v1/drives": "bossdrive", "/v1/policies": "bosspol", "/v1/secrets": "BOSS_KEY", "/v1/keys": "bosskey", "/v1/tokens": `"test"`, "/v1/users": "boss"} {
		req, _ := http.NewRequest("GET", ts.URL+p, nil)
		req.Header.Set("Authorization", "Bearer "+owner)
		if _, body, _ := do(t, req); !strings.Contains(body, want) {
			t.Errorf("after the member's calls, owner's %s lacks %s: %s", p, want, body)
		}
	}
	_ = context.Background
}

// userToken makes a user of role with an API token.
func userToken(t *testing.T, svc *service.Service, name, role string) string {
	t.Helper()
	u, err := svc.Store.CreateUser(store.User{Name: name, Role: role, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tok, hash := auth.NewToken()
	if err := svc.Store.AddToken(store.Token{Hash: hash, Name: "t", UserID: u.ID, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return tok
}

// A box shared as a viewer answers its viewer on exactly the routes of
// ViewerRoutes, and as a member on all box routes but OwnerRoutes; what
// is refused says how the box is shared. A user of the viewer role is a
// viewer whatever the share says, and is refused every route that
// changes something but their own tokens and sessions. Driven by the
// real route table; a stranger still finds nothing.
func TestSharedBoxesAllowWhatTheirShareSays(t *testing.T) {
	ts, srv, svc := wired(t)
	owner := addOwner(t, svc)
	vic := userToken(t, svc, "vic", store.RoleMember) // shared as a viewer
	mel := userToken(t, svc, "mel", store.RoleMember) // shared as a member
	val := userToken(t, svc, "val", store.RoleViewer) // a viewer, shared as a member
	stranger := userToken(t, svc, "sam", store.RoleMember)
	for _, c := range [][3]string{{"POST", "/v1/boxes", `{"name":"bossbox"}`}, {"PUT", "/v1/boxes/bossbox/grants/vic", `{"access":"viewer"}`},
		{"PUT", "/v1/boxes/bossbox/grants/mel", `{"access":"member"}`}, {"PUT", "/v1/boxes/bossbox/grants/val", `{"access":"member"}`}} {
		if code, e := call(t, ts, owner, c[0], c[1], c[2]); code >= 300 {
			t.Fatalf("owner %s %s: %d %+v", c[0], c[1], code, e)
		}
	}
	job, err := jobsIn(srv).Start("bossbox", api.ExecPost{Cmd: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	// Lists: the grantees see the box with their access, the stranger not.
	for tok, want := range map[string]string{vic: `"access":"viewer"`, mel: `"access":"member"`, val: `"access":"viewer"`, stranger: "[]"} {
		req, _ := http.NewRequest("GET", ts.URL+"/v1/boxes", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if _, body, _ := do(t, req); !strings.Contains(body, want) {
			t.Errorf("a grantee's list lacks %s: %s", want, body)
		}
	}
	// One box: a grantee's says their access; the owner's says none.
	for tok, want := range map[string]string{vic: `"access":"viewer"`, mel: `"access":"member"`, val: `"access":"viewer"`} {
		req, _ := http.NewRequest("GET", ts.URL+"/v1/boxes/bossbox", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if _, body, _ := do(t, req); !strings.Contains(body, want) {
			t.Errorf("a grantee's box lacks %s: %s", want, body)
		}
	}
	req, _ := http.NewRequest("GET", ts.URL+"/v1/boxes/bossbox", nil)
	req.Header.Set("Authorization", "Bearer "+owner)
	if _, body, _ := do(t, req); strings.Contains(body, `"access"`) {
		t.Errorf("the owner's box says an access: %s", body)
	}
	need := func(pattern string) string {
		switch {
		case ViewerRoutes[pattern]:
			return caller.AccessViewer
		case OwnerRoutes[pattern]:
			return caller.AccessAll
		}
		return caller.AccessMember
	}
	values := map[string]string{"boxes": "bossbox", "jobs": job.ID, "grants": "sam", "screenshots": "1700000000000000000", "contexts": "python"}
	tried := 0
	for _, r := range srv.Routes() {
		if !strings.Contains(r.Pattern, "/v1/boxes/{name}") || r.Access == route.Public {
			continue
		}
		tried++
		for _, who := range []struct {
			tok, access string
		}{{vic, caller.AccessViewer}, {val, caller.AccessViewer}, {mel, caller.AccessMember}, {stranger, caller.AccessNone}} {
			req := request(t, ts.URL, r, func(seg, name string) string { return values[seg] })
			req.Header.Set("Authorization", "Bearer "+who.tok)
			code, body, _ := do(t, req)
			refused := code == http.StatusForbidden && (strings.Contains(body, "is shared with you as a") || strings.Contains(body, "is a viewer"))
			absent := code == http.StatusNotFound && strings.Contains(body, `no box named \"bossbox\"`)
			switch {
			case who.access == caller.AccessNone:
				if !absent {
					t.Errorf("%s: a stranger got %d %.200s, want the box not found", r.Pattern, code, body)
				}
			case caller.AccessRank(who.access) >= caller.AccessRank(need(r.Pattern)):
				if refused || absent {
					t.Errorf("%s: a %s of the box is refused: %d %.200s", r.Pattern, who.access, code, body)
				}
			default:
				if !refused {
					t.Errorf("%s: a %s of the box got %d %.200s, want a refusal that says how it is shared", r.Pattern, who.access, code, body)
				}
			}
		}
	}
	if tried < 30 {
		t.Fatalf("only %d box routes", tried)
	}
	// A user of the viewer role changes nothing of their own either.
	for _, r := range srv.Routes() {
		m, p, _ := strings.Cut(r.Pattern, " ")
		if r.Access != route.Token || m == "GET" || !strings.HasPrefix(p, "/v1/") || strings.Contains(p, "/boxes/{name}") || ViewerRoleRoutes[r.Pattern] {
			continue
		}
		req := request(t, ts.URL, r, func(seg, name string) string { return "x" })
		req.Header.Set("Authorization", "Bearer "+val)
		if code, body, _ := do(t, req); code != http.StatusForbidden || !strings.Contains(body, "val is a viewer") {
			t.Errorf("%s by a viewer: %d %.200s", r.Pattern, code, body)
		}
	}
	if code, e := call(t, ts, val, "POST", "/v1/tokens", `{"name":"laptop"}`); code != http.StatusCreated {
		t.Errorf("a viewer's own token: %d %+v", code, e)
	}
	// Unshared: the box is gone for them.
	if code, _ := call(t, ts, owner, "DELETE", "/v1/boxes/bossbox/grants/vic", ""); code != http.StatusNoContent {
		t.Fatalf("unshare: %d", code)
	}
	if code, _ := call(t, ts, vic, "GET", "/v1/boxes/bossbox", ""); code != http.StatusNotFound {
		t.Errorf("an unshared box: %d", code)
	}
}
