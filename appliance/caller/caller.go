// Package caller is who a request acts as, and what they may see and
// touch. The API, the dashboard and previews learn the caller here, from
// a bearer token (Bearer) or the dashboard's session cookie (Session);
// previews then keep a cookie of their own per preview host, and the SSH
// gate knows a key. Each puts the user in the request's context with
// With; everything below reads it with From. The daemon's own work (the reconcile loop, the idle timer)
// carries no user and sees all.
package caller

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Users and what they may touch.
//
//   - The owner (made by the one-time setup link, or "local" in local
//     mode) sees and changes everything, invites and removes users.
//   - A member sees and touches only the boxes, drives, policies, jobs,
//     tokens and SSH keys that are theirs. Another user's box is "not
//     found" to them, not "forbidden". Names are one namespace, though:
//     creating a box, drive or policy under a name another user has is
//     refused as taken.
//   - Agent secrets belong to a user: a box's prompts get its owner's,
//     and nobody reads them back. An owner may share one; members' boxes
//     without their own of that name then get it (and can read it there).
//   - SSH keys are a user's: several users may register one public key,
//     and each reaches their own boxes with it.
//   - Objects made before there were users (owner id 0) are the owner's.

type key struct{}

// With returns a context that acts as u.
func With(ctx context.Context, u store.User) context.Context {
	return context.WithValue(ctx, key{}, u)
}

// From returns the user a context acts as; ok is false for the
// daemon's own work (the TTL timer, the reconcile loop), which sees all.
func From(ctx context.Context) (store.User, bool) {
	u, ok := ctx.Value(key{}).(store.User)
	return u, ok
}

// Sees reports whether u may see and touch an object owned by owner.
func Sees(u store.User, owner int64) bool {
	return u.SeesAll() || u.ID == owner
}

// Visible is Sees for the user of ctx (the daemon sees all).
func Visible(ctx context.Context, owner int64) bool {
	u, ok := From(ctx)
	return !ok || Sees(u, owner)
}

// OwnerID is the id new objects made in ctx belong to.
func OwnerID(ctx context.Context) int64 {
	u, _ := From(ctx)
	return u.ID
}

// Sharing: a box's owner (or an owner or admin of the server) shares it
// with another user as a viewer or a member (store.Grant). A viewer reads
// it; a member works in it as its owner does, but cannot remove, move or
// share it, or change its egress policy (the owner's fence). A user whose
// role is viewer is a viewer of every box shared with them, whatever the
// grant says. The box shows in the lists of those it is shared with, with
// their access; to anyone else it stays "not found". Which routes each
// access may call is package server's table (boxRoute); package
// service's grants keep the shares.

// Box access levels, from nothing to all.
const (
	AccessNone   = ""
	AccessViewer = store.AccessViewer
	AccessMember = store.AccessMember
	// AccessAll is the box's owner's, and the server's owners' and
	// admins'.
	AccessAll = "all"
)

// AccessRank orders access levels.
func AccessRank(a string) int {
	switch a {
	case AccessViewer:
		return 1
	case AccessMember:
		return 2
	case AccessAll:
		return 3
	}
	return 0
}

// AccessFor is what u may do with box b, as st's grants say.
func AccessFor(st *store.Store, u store.User, b store.Box) (string, error) {
	if Sees(u, b.Owner) {
		return AccessAll, nil
	}
	a, err := st.GrantOf(b.Name, u.ID)
	if err != nil {
		return AccessNone, err
	}
	if a != AccessMember {
		// A group of theirs may give more.
		ga, err := st.GroupGrantOf(b.Name, u.ID)
		if err != nil {
			return AccessNone, err
		}
		if AccessRank(ga) > AccessRank(a) {
			a = ga
		}
	}
	if a == AccessMember && u.Role == store.RoleViewer {
		a = AccessViewer
	}
	return a, nil
}

// Bearer finds who a request's API token (Authorization: Bearer …) acts
// as, at now. The API and previews take a token this way; the API and the
// dashboard also take a session cookie (Session), previews their own
// cookie for one preview host.
func Bearer(st *store.Store, r *http.Request, now time.Time) (store.Token, store.User, error) {
	tok := KeyHeader(r)
	if tok == "" {
		var err error
		if tok, err = auth.FromHeader(r.Header.Get("Authorization")); err != nil {
			return store.Token{}, store.User{}, err
		}
	}
	t, u, err := st.LookupToken(auth.Hash(tok), now)
	if errors.Is(err, store.ErrNotFound) {
		err = errors.New("invalid token: log in again with 'paddock login'")
	}
	return t, u, err
}

// KeyHeader is a token in the headers E2B's clients send it in: their
// key as X-API-KEY to the control API, a sandbox's access token as
// X-Access-Token to envd (whose Authorization header then names a user
// in the box, not a token), and its traffic token as
// E2B-Traffic-Access-Token to its interpreter. "" when there is none.
func KeyHeader(r *http.Request) string {
	for _, h := range []string{"X-API-KEY", "X-Access-Token", "E2B-Traffic-Access-Token"} {
		if k := r.Header.Get(h); k != "" {
			return strings.TrimSpace(k)
		}
	}
	return ""
}

type accessKey struct{}

// WithAccess is ctx with the caller's access to the box its request is
// about (a box route's check found it).
func WithAccess(ctx context.Context, a string) context.Context {
	return context.WithValue(ctx, accessKey{}, a)
}

// AccessIn is the caller's access to the box of a box route's request
// (WithAccess); ok is false outside one.
func AccessIn(ctx context.Context) (a string, ok bool) {
	a, ok = ctx.Value(accessKey{}).(string)
	return a, ok
}

// Session finds who the session in a request's cookie named cookie acts
// as, at now: a live token of the session kind, as the dashboard's
// sign-in made it. The dashboard's pages and the API's requests from
// them (package server adds their CSRF and origin checks) take it, and a
// preview's start, before it hands a browser a preview cookie.
func Session(st *store.Store, r *http.Request, cookie string, now time.Time) (store.Token, store.User, bool) {
	c, err := r.Cookie(cookie)
	if err != nil || c.Value == "" {
		return store.Token{}, store.User{}, false
	}
	t, u, err := st.LookupToken(auth.Hash(c.Value), now)
	if err != nil || t.Kind != store.TokenSession {
		return store.Token{}, store.User{}, false
	}
	return t, u, true
}

// Addr is the address a request came from: the peer's, or behind the
// front door (which reaches paddockd on its unix socket) the one it put
// in X-Forwarded-For.
func Addr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err == nil && host != "" {
		return host
	}
	if f := r.Header.Get("X-Forwarded-For"); f != "" {
		parts := strings.Split(f, ",")
		return strings.TrimSpace(parts[len(parts)-1])
	}
	return "unix"
}

// RequireOwner refuses a caller who is not the owner, saying what only
// the owner may do. A context with no caller (paddockd's own work) passes.
func RequireOwner(ctx context.Context, what string) error {
	if u, ok := From(ctx); ok && u.Role != store.RoleOwner {
		return &api.Error{Code: api.CodeForbidden, Message: "only the owner may " + what}
	}
	return nil
}

// RequireAdmin refuses all but owners and admins (and paddockd's own
// work, which has no caller).
func RequireAdmin(ctx context.Context, what string) error {
	if u, ok := From(ctx); ok && !u.SeesAll() {
		return &api.Error{Code: api.CodeForbidden, Message: "only the owner or an admin may " + what}
	}
	return nil
}
