package service

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/access"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/sso"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/testbed/idp"
)

// signInAt goes through a real (loopback) provider as subject, as a
// browser would, and returns who the provider says signed in.
func signInAt(t *testing.T, set *sso.Set, p *idp.Provider, subject string) sso.Identity {
	t.Helper()
	ctx := context.Background()
	to, state, err := set.Start(ctx, "corp", p.Redirect, "/")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(to)
	form := u.Query()
	form.Set("subject", subject)
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.PostForm(p.URL+"/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, _ := resp.Location()
	id, next, err := set.Finish(ctx, "corp", back.Query().Get("state"), state, back.Query().Get("code"))
	if err != nil || next != "/" {
		t.Fatalf("signing in as %s: %v (next %q)", subject, err, next)
	}
	return id
}

// A person the provider signs in and its rules let in is a user made at
// the first sign-in (a member, or admin by group; the name from the
// provider's, made unique) and the same user after; the recheck follows
// group changes and takes every token away from one removed at the
// provider, or whose provider gave no refresh token, after sso_max_age;
// with password sign-in off, only the owner's password works.
func TestSSOUsers(t *testing.T) {
	s, _ := newService(t)
	var mu sync.Mutex
	now := time.Now()
	s.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	p, err := idp.Start("paddock", "s3cret", "http://127.0.0.1:1/sso/corp/callback")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	set, err := sso.New(map[string]config.SSOProvider{"corp": {Issuer: p.URL, ClientID: "paddock", ClientSecret: "s3cret",
		Domains: []string{"corp.test"}, Roles: map[string]string{"admins": "admin"}}})
	if err != nil {
		t.Fatal(err)
	}
	s.SSO, s.SSOKey = set, make([]byte, 32)
	s.Audit = &Auditor{Key: make([]byte, 32)}
	ctx := context.Background()
	prov, _ := set.Provider("corp")
	// A password user already has the name ana.
	if _, err := s.Store.CreateUser(store.User{Name: "ana", Role: store.RoleMember, Created: now}); err != nil {
		t.Fatal(err)
	}
	p.Add(idp.Person{Subject: "u-ana", Username: "Ana", Email: "ana@corp.test", Verified: true})
	p.Add(idp.Person{Subject: "u-eve", Username: "eve", Email: "eve@other.test", Verified: true})
	id := signInAt(t, set, p, "u-ana")
	role, err := prov.Admit(id)
	if err != nil || role != "member" {
		t.Fatalf("ana admitted as %q: %v", role, err)
	}
	u, sess, err := accessOf(s).SignInSSO(ctx, id, role)
	if err != nil || u.Name != "ana-2" || u.Role != "member" || sess.Token == "" {
		t.Fatalf("ana's first sign-in: %+v %v", u, err)
	}
	if _, err := prov.Admit(signInAt(t, set, p, "u-eve")); err == nil || !strings.Contains(err.Error(), "its email domain is not corp.test") {
		t.Fatalf("eve of another domain: %v", err)
	}
	again, _, err := accessOf(s).SignInSSO(ctx, signInAt(t, set, p, "u-ana"), "member")
	if err != nil || again.ID != u.ID {
		t.Fatalf("ana's second sign-in is user %d, not %d: %v", again.ID, u.ID, err)
	}
	_, apiHash := auth.NewToken()
	if err := s.Store.AddToken(store.Token{Hash: apiHash, Name: "laptop", UserID: u.ID, Created: now}); err != nil {
		t.Fatal(err)
	}

	// Her group at the provider makes her an admin at the next recheck.
	p.Add(idp.Person{Subject: "u-ana", Username: "Ana", Email: "ana@corp.test", Verified: true, Groups: []string{"admins"}})
	if err := accessOf(s).RecheckSSO(ctx); err != nil {
		t.Fatal(err)
	}
	if u, _ := s.Store.GetUser(u.ID); u.Role != "admin" {
		t.Fatalf("after the group change: %s", u.Role)
	}
	// Both, the user the provider made and the role it gave, are in the
	// audit log.
	es, err := s.Store.Audit(store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range es {
		seen = append(seen, e.Action+" "+e.Object+" "+e.Via+" "+string(e.Detail))
	}
	if all := strings.Join(seen, "\n"); !strings.Contains(all, `user.create ana-2 sso:corp {"email":"ana@corp.test","groups":null,"role":"member"}`) ||
		!strings.Contains(all, `user.role ana-2 sso:corp {"at":"recheck","from":"member","to":"admin"}`) {
		t.Fatalf("the audit log:\n%s", all)
	}
	if _, _, err := s.Store.LookupToken(apiHash, now); err != nil {
		t.Fatalf("a standing user's token after a recheck: %v", err)
	}
	// Removed at the provider: every token and session goes.
	p.Remove("u-ana")
	if err := accessOf(s).RecheckSSO(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Store.LookupToken(apiHash, now); err == nil {
		t.Fatal("the token of a user removed at the provider still works")
	}
	if _, _, err := s.Store.LookupToken(auth.Hash(sess.Token), now); err == nil {
		t.Fatal("the session of a user removed at the provider still works")
	}

	// No refresh token: the tokens go sso_max_age after the last sign-in.
	p.Add(idp.Person{Subject: "u-ana", Username: "Ana", Email: "ana@corp.test", Verified: true})
	id = signInAt(t, set, p, "u-ana")
	id.Refresh = ""
	if _, _, err := accessOf(s).SignInSSO(ctx, id, "member"); err != nil {
		t.Fatal(err)
	}
	_, l, _ := s.Store.SSOUser("corp", "u-ana")
	l.Refresh = ""
	s.Store.UpdateSSO(l, "")
	_, apiHash = auth.NewToken()
	s.Store.AddToken(store.Token{Hash: apiHash, Name: "laptop", UserID: u.ID, Created: now})
	mu.Lock()
	now = now.Add(s.Cfg.SSOMaxAge - time.Minute)
	mu.Unlock()
	accessOf(s).RecheckSSO(ctx)
	if _, _, err := s.Store.LookupToken(apiHash, now); err != nil {
		t.Fatalf("a token within sso_max_age of the sign-in: %v", err)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	accessOf(s).RecheckSSO(ctx)
	if _, _, err := s.Store.LookupToken(apiHash, now); err == nil {
		t.Fatal("a token past sso_max_age with no refresh token still works")
	}

	// Password sign-in off: a member's password is refused, the owner's
	// works.
	s.Cfg.PasswordLogin = false
	hash, _ := auth.HashPassword("a long enough password")
	s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Password: hash, Created: now})
	s.Store.CreateUser(store.User{Name: "olga", Role: store.RoleOwner, Password: hash, Created: now})
	if _, _, err := accessOf(s).Login("mia", "a long enough password"); err != access.ErrPasswordOff {
		t.Fatalf("a member's password with password sign-in off: %v", err)
	}
	if _, _, err := accessOf(s).Login("olga", "a long enough password"); err != nil {
		t.Fatalf("the owner's password with password sign-in off: %v", err)
	}
}
