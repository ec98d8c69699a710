package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
	"github.com/paddock-dev/paddock/testbed/forms"
)

// invite makes an invitation with the owner's token and redeems it in a
// browser, returning the new user's browser.
func invite(t *testing.T, base, owner, name string) *http.Client {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/users/invites", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+owner)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var inv api.InviteCreated
	json.NewDecoder(resp.Body).Decode(&inv)
	resp.Body.Close()
	if resp.StatusCode != 201 || inv.Role != "member" {
		t.Fatalf("invite: %d %+v", resp.StatusCode, inv)
	}
	b := forms.Browser()
	if code, body := forms.Get(t, b, base+"/invite/"+inv.Token); code != 200 || !strings.Contains(body, "Create your account") {
		t.Fatalf("invite page: %d %s", code, body)
	}
	code, body := forms.Post(t, b, base, "/invite/"+inv.Token, url.Values{"name": {name}, "password": {"a long password"}, "password2": {"a long password"}})
	if code != 201 || !strings.Contains(body, "member") {
		t.Fatalf("redeem invite: %d %s", code, body)
	}
	if code, _ := forms.Post(t, forms.Browser(), base, "/invite/"+inv.Token, url.Values{"name": {name + "2"}, "password": {"a long password"}, "password2": {"a long password"}}); code != http.StatusGone {
		t.Fatalf("an invitation worked twice: %d", code)
	}
	return b
}

// deviceLogin runs the CLI's side of a device login, approved in browser b.
func deviceLogin(t *testing.T, base string, b *http.Client) string {
	t.Helper()
	resp, err := http.Post(base+"/v1/login/device", "application/json", strings.NewReader(`{"name":"laptop"}`))
	if err != nil {
		t.Fatal(err)
	}
	var dc api.DeviceCode
	json.NewDecoder(resp.Body).Decode(&dc)
	resp.Body.Close()
	if dc.UserCode == "" || !strings.HasSuffix(dc.VerificationURIComplete, "/device") {
		t.Fatalf("device start: %+v", dc)
	}
	poll := func() (int, api.Error, string) {
		resp, err := http.Post(base+"/v1/login/device/token", "application/json", strings.NewReader(`{"device_code":"`+dc.DeviceCode+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var e api.Error
		var tok api.DeviceToken
		json.Unmarshal(raw, &e)
		json.Unmarshal(raw, &tok)
		return resp.StatusCode, e, tok.Token
	}
	if code, e, _ := poll(); code != 400 || e.Code != api.CodePending {
		t.Fatalf("poll before approval: %d %+v", code, e)
	}
	// The page takes no code from its address: a link someone else sends
	// cannot fill in their code.
	code, page := forms.Get(t, b, base+"/device?code="+url.QueryEscape(dc.UserCode))
	if code != 200 || strings.Contains(page, dc.UserCode) {
		t.Fatalf("device page: %d %s", code, page)
	}
	csrf := forms.CSRF(page)
	// Without the session's CSRF value, nothing is approved.
	if code, _ := forms.Post(t, b, base, "/device", url.Values{"code": {dc.UserCode}, "action": {"approve"}, "csrf": {"wrong"}}); code != 403 {
		t.Fatalf("approval without CSRF: %d", code)
	}
	// The typed code shows what would be approved, before any approval.
	code, page = forms.Post(t, b, base, "/device", url.Values{"code": {strings.ToLower(strings.ReplaceAll(dc.UserCode, "-", ""))}, "action": {"review"}, "csrf": {csrf}})
	if code != 200 || !strings.Contains(page, dc.UserCode) || !strings.Contains(page, ">laptop<") || !strings.Contains(page, ">127.0.0.1<") || !strings.Contains(page, `id="approve"`) {
		t.Fatalf("device confirmation: %d %s", code, page)
	}
	if code, e, tok := poll(); code != 400 || tok != "" {
		t.Fatalf("poll after the review alone: %d %+v", code, e)
	}
	if code, body := forms.Post(t, b, base, "/device", url.Values{"code": {dc.UserCode}, "action": {"approve"}, "csrf": {csrf}}); code != 200 || !strings.Contains(body, "Approved") {
		t.Fatalf("approval: %d %s", code, body)
	}
	code, e, tok := poll()
	if code != 200 || tok == "" {
		t.Fatalf("poll after approval: %d %+v", code, e)
	}
	if code, e, _ := poll(); code != 401 || e.Code != api.CodeExpiredToken {
		t.Fatalf("a device code gave a second token: %d %+v", code, e)
	}
	return tok
}

func TestMembersSeeOnlyTheirOwn(t *testing.T) {
	ts, owner, _ := newServer(t)
	mb := invite(t, ts.URL, owner, "mia")
	mia := deviceLogin(t, ts.URL, mb)

	if code, e := call(t, ts, mia, "POST", "/v1/boxes", `{"name":"mias"}`); code != 201 {
		t.Fatalf("member creates a box: %d %+v", code, e)
	}
	if code, e := call(t, ts, owner, "POST", "/v1/boxes", `{"name":"boss"}`); code != 201 {
		t.Fatalf("owner creates a box: %d %+v", code, e)
	}
	call(t, ts, owner, "POST", "/v1/drives", `{"name":"bossdrive"}`)
	list := func(tok string) []string {
		req, _ := http.NewRequest("GET", ts.URL+"/v1/boxes", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var bs []api.Box
		json.NewDecoder(resp.Body).Decode(&bs)
		var names []string
		for _, b := range bs {
			names = append(names, b.Name)
		}
		return names
	}
	if got := strings.Join(list(mia), ","); got != "mias" {
		t.Fatalf("member lists %q", got)
	}
	if got := strings.Join(list(owner), ","); got != "boss,mias" {
		t.Fatalf("owner lists %q", got)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/boxes/boss", ""},
		{"POST", "/v1/boxes/boss/stop", ""},
		{"DELETE", "/v1/boxes/boss", ""},
		{"POST", "/v1/boxes/boss/fork", `{}`},
		{"GET", "/v1/boxes/boss/files?path=/etc", ""},
		{"POST", "/v1/boxes/boss/desktop", ""},
		{"DELETE", "/v1/drives/bossdrive", ""},
		{"POST", "/v1/boxes", `{"name":"m2","mounts":[{"drive":"bossdrive","path":"/mnt/d"}]}`},
	} {
		code, e := call(t, ts, mia, c.method, c.path, c.body)
		if code != 404 && code != 400 {
			t.Errorf("member %s %s: %d %+v (want not found)", c.method, c.path, code, e)
		}
	}
	// Policies: the owner's is neither listed nor usable by the member.
	if code, e := call(t, ts, owner, "POST", "/v1/policies", `{"name":"bosspol","allow_domains":["example.com"]}`); code != 201 {
		t.Fatalf("owner's policy: %d %+v", code, e)
	}
	if code, e := call(t, ts, mia, "PUT", "/v1/boxes/mias/policy", `{"policy":"bosspol"}`); code != 400 || !strings.Contains(e.Message, `no policy named "bosspol"`) {
		t.Errorf("member uses the owner's policy: %d %+v", code, e)
	}
	if code, e := call(t, ts, mia, "DELETE", "/v1/policies/bosspol", ""); code != 404 {
		t.Errorf("member removes the owner's policy: %d %+v", code, e)
	}
	req, _ := http.NewRequest("GET", ts.URL+"/v1/policies", nil)
	req.Header.Set("Authorization", "Bearer "+mia)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(raw), "bosspol") {
		t.Errorf("member lists the owner's policy: %s", raw)
	}
	if code, _ := call(t, ts, mia, "PUT", "/v1/secrets/K", "v"); code != 204 {
		t.Errorf("member sets a secret of her own: %d", code)
	}
	if code, _ := call(t, ts, mia, "PUT", "/v1/secrets/K?shared=true", "v"); code != 403 {
		t.Errorf("member shares a secret: %d", code)
	}
	if code, _ := call(t, ts, mia, "POST", "/v1/users/invites", `{}`); code != 403 {
		t.Errorf("member invites: %d", code)
	}
	if code, _ := call(t, ts, owner, "GET", "/v1/boxes/mias", ""); code != 200 {
		t.Errorf("owner reads a member's box: %d", code)
	}
	// Removing the member ends their tokens.
	if code, e := call(t, ts, owner, "DELETE", "/v1/users/mia", ""); code != 204 {
		t.Fatalf("remove member: %d %+v", code, e)
	}
	if code, _ := call(t, ts, mia, "GET", "/v1/boxes", ""); code != 401 {
		t.Fatalf("a removed member's token works: %d", code)
	}
}

func TestSessionCookieNeedsCSRFAndOrigin(t *testing.T) {
	ts, owner, _ := newServer(t)
	b := invite(t, ts.URL, owner, "sam")
	u, _ := url.Parse(ts.URL)
	var sess *http.Cookie
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == "paddock_session" {
			sess = c
		}
	}
	if sess == nil {
		t.Fatal("no session cookie after redeeming an invitation")
	}
	// A read with the cookie works.
	if code, body := forms.Get(t, b, ts.URL+"/v1/whoami"); code != 200 || !strings.Contains(body, `"user":"sam"`) {
		t.Fatalf("whoami with the cookie: %d %s", code, body)
	}
	_, page := forms.Get(t, b, ts.URL+"/")
	csrf := forms.CSRF(page)
	try := func(origin, token string) int {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/boxes", strings.NewReader(`{"name":"x`+token[:2]+`"}`))
		req.Header.Set("Origin", origin)
		req.Header.Set("X-Paddock-CSRF", token)
		resp, err := b.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := try("https://evil.example", csrf); code != 401 {
		t.Errorf("cross-origin write with the cookie: %d", code)
	}
	if code := try(ts.URL, "wrongvalue"); code != 401 {
		t.Errorf("write with the cookie and a wrong CSRF value: %d", code)
	}
	if code := try(ts.URL, csrf); code != 201 {
		t.Errorf("write with the cookie, origin and CSRF value: %d", code)
	}
	// A form posted from elsewhere is refused before anything happens.
	req, _ := http.NewRequest("POST", ts.URL+"/login", strings.NewReader("name=sam&password=a+long+password"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	resp, _ := http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("cross-origin login form: %d", resp.StatusCode)
	}
	// DNS rebinding: another Host name gets nothing.
	req, _ = http.NewRequest("GET", ts.URL+"/login", nil)
	req.Host = "attacker.example"
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("page for a foreign Host: %d", resp.StatusCode)
	}
}

func TestLoginIsRateLimited(t *testing.T) {
	ts, owner, _ := newServer(t)
	invite(t, ts.URL, owner, "lee")
	codes := map[int]int{}
	for range 8 {
		code, _ := forms.Post(t, forms.Browser(), ts.URL, "/login", url.Values{"name": {"lee"}, "password": {"wrong password"}})
		codes[code]++
	}
	if codes[401] != 5 || codes[429] != 3 {
		t.Fatalf("8 wrong passwords for one name: %v (want 5 refused, then 3 limited)", codes)
	}
	// The right password is limited too while the bucket is empty...
	if code, _ := forms.Post(t, forms.Browser(), ts.URL, "/login", url.Values{"name": {"lee"}, "password": {"a long password"}}); code != 429 {
		t.Fatalf("login while limited: %d", code)
	}
}

func TestSetupLink(t *testing.T) {
	ts, svc, _ := newBare(t)
	first, err := accessOf(svc).SetupLink()
	if err != nil || first == "" {
		t.Fatalf("setup link: %q %v", first, err)
	}
	tok, _ := accessOf(svc).SetupLink() // a new link replaces the first
	if code, _ := forms.Get(t, forms.Browser(), ts.URL+"/setup/"+first); code != http.StatusGone {
		t.Fatalf("a replaced setup link: %d", code)
	}
	if code, _ := forms.Get(t, forms.Browser(), ts.URL+"/invite/"+tok); code != http.StatusGone {
		t.Fatalf("the setup link works as an invitation: %d", code)
	}
	b := forms.Browser()
	if code, body := forms.Get(t, b, ts.URL+"/setup/"+tok); code != 200 || !strings.Contains(body, "Create the owner account") {
		t.Fatalf("setup page: %d %s", code, body)
	}
	if code, body := forms.Post(t, b, ts.URL, "/setup/"+tok, url.Values{"name": {"olga"}, "password": {"short"}, "password2": {"short"}}); code != 400 || !strings.Contains(body, "at least 10") {
		t.Fatalf("short password: %d %s", code, body)
	}
	if code, body := forms.Post(t, b, ts.URL, "/setup/"+tok, url.Values{"name": {"olga"}, "password": {"a long password"}, "password2": {"another long one"}}); code != 400 || !strings.Contains(body, "differ") {
		t.Fatalf("passwords that differ: %d %s", code, body)
	}
	if code, body := forms.Post(t, b, ts.URL, "/setup/"+tok, url.Values{"name": {"olga"}, "password": {"a long password"}, "password2": {"a long password"}}); code != 201 || !strings.Contains(body, "owner") {
		t.Fatalf("setup: %d %s", code, body)
	}
	if code, body := forms.Get(t, forms.Browser(), ts.URL+"/setup/"+tok); code != http.StatusGone {
		t.Fatalf("setup link after use: %d %s", code, body)
	}
	if code, _ := forms.Post(t, forms.Browser(), ts.URL, "/setup/"+tok, url.Values{"name": {"eve"}, "password": {"a long password"}, "password2": {"a long password"}}); code != http.StatusGone {
		t.Fatalf("setup link used twice: %d", code)
	}
	if again, err := accessOf(svc).SetupLink(); err != nil || again != "" {
		t.Fatalf("a setup link once there is an owner: %q %v", again, err)
	}
	// The owner's session shows the home page; a device login makes a token.
	if code, body := forms.Get(t, b, ts.URL+"/"); code != 200 || !strings.Contains(body, "olga") {
		t.Fatalf("home: %d %s", code, body)
	}
	tokn := deviceLogin(t, ts.URL, b)
	if code, e := call(t, ts, tokn, "GET", "/v1/users", ""); code != 200 {
		t.Fatalf("the device login's token: %d %+v", code, e)
	}
	// Password login works and logout ends the session.
	lb := forms.Browser()
	if code, body := forms.Post(t, lb, ts.URL, "/login", url.Values{"name": {"olga"}, "password": {"a long password"}}); code != 200 || !strings.Contains(body, `data-user="olga"`) {
		t.Fatalf("login: %d %s", code, body)
	}
	_, page := forms.Get(t, lb, ts.URL+"/")
	csrf := forms.CSRF(page)
	forms.Post(t, lb, ts.URL, "/logout", url.Values{"csrf": {csrf}})
	if code, _ := forms.Get(t, lb, ts.URL+"/v1/whoami"); code != 401 {
		t.Fatalf("whoami after logout: %d", code)
	}
}

// With nobody who can log in to the pages (local mode's owner has no
// password), a device login is refused at once, naming --token.
func TestDeviceLoginNeedsSomeoneToApprove(t *testing.T) {
	ts, _, _ := newServer(t)
	resp, err := http.Post(ts.URL+"/v1/login/device", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var e api.Error
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 409 || !strings.Contains(e.Message, "--token") {
		t.Fatalf("device login with nobody to approve it: %d %+v", resp.StatusCode, e)
	}
}

// A member who asks for a reconcile hears of their own objects only: not
// of the owner's box that the run repaired, nor of its error.
func TestReconcileTellsMembersOnlyTheirOwn(t *testing.T) {
	ts, svc, _ := newBare(t)
	owner := addOwner(t, svc)
	mia := deviceLogin(t, ts.URL, invite(t, ts.URL, owner, "mia"))
	for tok, name := range map[string]string{owner: "bossbox", mia: "miabox"} {
		if code, e := call(t, ts, tok, "POST", "/v1/boxes", `{"name":"`+name+`"}`); code != 201 {
			t.Fatalf("creating %s: %d %+v", name, code, e)
		}
	}
	drv := svc.Driver.(*fake.Driver)
	reconcileAs := func(tok string) string {
		for _, b := range []string{"bossbox", "miabox"} {
			drv.RemoveBox(context.Background(), b) // lost outside Paddock: the run makes them again
		}
		drv.Fail = func(op string) error {
			if strings.HasPrefix(op, "create bossbox") {
				return errors.New("engine refused bossbox")
			}
			return nil
		}
		req, _ := http.NewRequest("POST", ts.URL+"/v1/reconcile", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := reconcileAs(mia); strings.Contains(got, "bossbox") || !strings.Contains(got, "miabox") {
		t.Errorf("member's reconcile says: %s", got)
	}
	if got := reconcileAs(owner); !strings.Contains(got, "bossbox") || !strings.Contains(got, "engine refused") {
		t.Errorf("owner's reconcile says: %s", got)
	}
}

// The servers of a Paddock are the owner's business: a member can neither
// list them nor make a join token; the owner can list them, and is told
// how to let servers join when this one takes none.
func TestNodesAreTheOwners(t *testing.T) {
	ts, srv, svc := wired(t)
	owner := addOwner(t, svc)
	mia := deviceLogin(t, ts.URL, invite(t, ts.URL, owner, "mia"))
	// Every route of the real table about servers.
	n := 0
	for _, r := range srv.Routes() {
		method, path, _ := strings.Cut(r.Pattern, " ")
		if !strings.HasPrefix(path, "/v1/nodes") {
			continue
		}
		n++
		path = strings.ReplaceAll(path, "{name}", "n2")
		body := ""
		if method == "PUT" {
			body = `{}`
		}
		if code, e := call(t, ts, mia, method, path, body); code != http.StatusForbidden {
			t.Errorf("a member's %s %s: %d %+v", method, path, code, e)
		}
	}
	if n < 4 {
		t.Fatalf("only %d routes about servers in the table", n)
	}
	if code, e := call(t, ts, owner, "GET", "/v1/nodes", ""); code != http.StatusOK {
		t.Errorf("the owner's list of nodes: %d %+v", code, e)
	}
	if code, e := call(t, ts, owner, "POST", "/v1/nodes/joins", ""); code != http.StatusConflict || !strings.Contains(e.Message, "cluster_listen") {
		t.Errorf("a join token on a server with no cluster listener: %d %+v", code, e)
	}
}

// Invitations not used yet are listed (never their links) and can be
// revoked: a revoked link signs nobody up; a used one is not listed; a
// member may do neither; revoking twice says why it is not there.
func TestInvitationsListedAndRevoked(t *testing.T) {
	ts, owner, _ := newServer(t)
	mb := invite(t, ts.URL, owner, "mia")
	mia := deviceLogin(t, ts.URL, mb)
	make := func(role string) api.InviteCreated {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/users/invites", strings.NewReader(`{"role":"`+role+`"}`))
		req.Header.Set("Authorization", "Bearer "+owner)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var inv api.InviteCreated
		json.NewDecoder(resp.Body).Decode(&inv)
		if resp.StatusCode != 201 || len(inv.ID) != 12 {
			t.Fatalf("invite %s: %d %+v", role, resp.StatusCode, inv)
		}
		return inv
	}
	list := func(tok string) (int, []api.Invite, string) {
		req, _ := http.NewRequest("GET", ts.URL+"/v1/users/invites", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var is []api.Invite
		json.Unmarshal(raw, &is)
		return resp.StatusCode, is, string(raw)
	}
	member, admin := make("member"), make("admin")
	code, is, raw := list(owner)
	byID := map[string]api.Invite{}
	for _, i := range is {
		byID[i.ID] = i
	}
	if m, a := byID[member.ID], byID[admin.ID]; code != 200 || len(is) != 2 || m.Role != "member" || a.Role != "admin" || m.By != "boss" || !m.Expires.Equal(member.Expires.Truncate(time.Millisecond)) {
		t.Fatalf("the pending invitations (mia's, used, not among them): %d %s", code, raw)
	}
	if strings.Contains(raw, strings.TrimPrefix(member.Token, "pdk_")) || strings.Contains(raw, strings.TrimPrefix(admin.Token, "pdk_")) {
		t.Fatalf("the list shows a link: %s", raw)
	}
	if code, _, _ := list(mia); code != 403 {
		t.Errorf("a member lists invitations: %d", code)
	}
	if code, _ := call(t, ts, mia, "DELETE", "/v1/users/invites/"+member.ID, ""); code != 403 {
		t.Errorf("a member revokes an invitation: %d", code)
	}
	if code, e := call(t, ts, owner, "DELETE", "/v1/users/invites/"+member.ID, ""); code != 204 {
		t.Fatalf("revoke: %d %+v", code, e)
	}
	if code, _ := forms.Post(t, forms.Browser(), ts.URL, "/invite/"+member.Token, url.Values{"name": {"late"}, "password": {"a long password"}, "password2": {"a long password"}}); code != http.StatusGone {
		t.Fatalf("a revoked invitation signed someone up: %d", code)
	}
	if _, is, raw := list(owner); len(is) != 1 || is[0].ID != admin.ID {
		t.Fatalf("after the revoke: %s", raw)
	}
	if code, e := call(t, ts, owner, "DELETE", "/v1/users/invites/"+member.ID, ""); code != 404 || !strings.Contains(e.Message, "no pending invitation") {
		t.Fatalf("revoked twice: %d %+v", code, e)
	}
	// The one left still works.
	if code, _ := forms.Post(t, forms.Browser(), ts.URL, "/invite/"+admin.Token, url.Values{"name": {"ada"}, "password": {"a long password"}, "password2": {"a long password"}}); code != 201 {
		t.Fatalf("the invitation left: %d", code)
	}
}
