package sso

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/testbed/idp"
)

// approveAt signs subject in at the provider for the sign-in authURL
// began: the callback's state and code.
func approveAt(t *testing.T, p *idp.Provider, authURL, subject string) (state, code string) {
	t.Helper()
	u, _ := url.Parse(authURL)
	form := u.Query()
	if form.Get("code_challenge_method") != "S256" || form.Get("nonce") == "" || form.Get("state") == "" {
		t.Fatalf("the authorization request lacks PKCE, a nonce or a state: %s", authURL)
	}
	form.Set("subject", subject)
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.PostForm(p.URL+"/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, _ := resp.Location()
	return back.Query().Get("state"), back.Query().Get("code")
}

// A sign-in's state is good once, for the browser that began it (its
// cookie), within StateTTL; the rules let in by verified domain and by
// group, and a group gives its role.
func TestStateAndRules(t *testing.T) {
	p, err := idp.Start("c", "s", "http://127.0.0.1:1/cb")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	p.Add(idp.Person{Subject: "a", Username: "a", Email: "a@corp.test", Verified: true, Groups: []string{"eng", "ops"}})
	set, err := New(map[string]config.SSOProvider{"corp": {Issuer: p.URL, ClientID: "c", ClientSecret: "s", Domains: []string{"corp.test"}, Groups: []string{"eng"}, Roles: map[string]string{"ops": "admin"}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	set.Now = func() time.Time { return now }
	ctx := context.Background()
	begin := func() (string, string) {
		to, cookie, err := set.Start(ctx, "corp", p.Redirect, "/next")
		if err != nil {
			t.Fatal(err)
		}
		state, code := approveAt(t, p, to, "a")
		if state != cookie {
			t.Fatalf("the provider sent back state %q for %q", state, cookie)
		}
		return state, code
	}
	// Another browser's cookie: refused, and the state is spent.
	state, code := begin()
	if _, _, err := set.Finish(ctx, "corp", state, "another", code); !errors.Is(err, ErrState) {
		t.Fatalf("a callback in another browser: %v", err)
	}
	if _, _, err := set.Finish(ctx, "corp", state, state, code); !errors.Is(err, ErrState) {
		t.Fatalf("a state used once already: %v", err)
	}
	// Too slow.
	state, code = begin()
	now = now.Add(StateTTL + time.Second)
	if _, _, err := set.Finish(ctx, "corp", state, state, code); !errors.Is(err, ErrState) {
		t.Fatalf("a sign-in older than StateTTL: %v", err)
	}
	// In time: who, and where next; then the rules.
	state, code = begin()
	id, next, err := set.Finish(ctx, "corp", state, state, code)
	if err != nil || next != "/next" || id.Subject != "a" || id.Email != "a@corp.test" || !id.Verified || id.Refresh == "" {
		t.Fatalf("a sign-in: %+v %q %v", id, next, err)
	}
	prov, _ := set.Provider("corp")
	for _, c := range []struct {
		id   Identity
		role string
		why  string
	}{
		{id, "admin", ""},
		{Identity{Email: "b@corp.test", Verified: true, Groups: []string{"eng"}}, "member", ""},
		{Identity{Email: "b@CORP.test", Verified: false, Groups: []string{"eng"}}, "", "is verified"},
		{Identity{Email: "b@corp.test.evil", Verified: true, Groups: []string{"eng"}}, "", "its email domain is not corp.test"},
		{Identity{Email: "b@corp.test", Verified: true, Groups: []string{"ops"}}, "", "in none of the groups eng"},
	} {
		role, err := prov.Admit(c.id)
		if role != c.role || (c.why == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.why)) {
			t.Errorf("%+v: %q, %v; want %q, %q", c.id, role, err, c.role, c.why)
		}
	}
	// Sealed refresh tokens open with their key only.
	key := make([]byte, 32)
	sealed := Seal(key, "rt")
	if got, err := Open(key, sealed); err != nil || got != "rt" {
		t.Fatalf("open(seal(rt)) = %q, %v", got, err)
	}
	other := make([]byte, 32)
	other[0] = 1
	if _, err := Open(other, sealed); err == nil {
		t.Fatal("opened with another key")
	}
}
