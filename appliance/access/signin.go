package access

import (
	"context"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// SignInTTL is how long a dashboard sign-in link stays good.
const SignInTTL = 2 * time.Minute

// SignIns holds dashboard sign-in links that were handed out and not yet
// used (in memory, by token hash: a restart only makes people ask again).
type SignIns struct {
	mu     sync.Mutex
	byHash map[string]signIn
}

type signIn struct {
	user    int64
	next    string
	expires time.Time
}

// SignInLink makes a single-use link token that gives a browser a session
// as the user of ctx and then sends it to next (a path on this server).
func (a *Access) SignInLink(ctx context.Context, next string) (string, time.Time, error) {
	u, ok := caller.From(ctx)
	if !ok {
		return "", time.Time{}, &api.Error{Code: api.CodeUnauthorized, Message: "a sign-in link is for a user"}
	}
	if err := a.mint(ctx, "sign-in links"); err != nil {
		return "", time.Time{}, err
	}
	tok, hash := auth.NewToken()
	exp := a.core.Time().Add(SignInTTL)
	a.signIns.mu.Lock()
	defer a.signIns.mu.Unlock()
	if a.signIns.byHash == nil {
		a.signIns.byHash = map[string]signIn{}
	}
	now := a.core.Time()
	for k, v := range a.signIns.byHash {
		if now.After(v.expires) {
			delete(a.signIns.byHash, k)
		}
	}
	if len(a.signIns.byHash) > 1000 {
		return "", time.Time{}, &api.Error{Code: api.CodeTooMany, Message: "too many sign-in links waiting; try again in two minutes"}
	}
	a.signIns.byHash[hash] = signIn{user: u.ID, next: next, expires: exp}
	return tok, exp, nil
}

// errSignInGone answers a sign-in link that was used, expired or never was.
var errSignInGone = &api.Error{Code: api.CodeGone, Message: "this sign-in link has been used or has expired; run 'paddock dashboard' again"}

// PeekSignIn says whose a live sign-in link is, without using it (the
// confirmation page names the account before the browser signs in).
func (a *Access) PeekSignIn(token string) (store.User, error) {
	a.signIns.mu.Lock()
	l, ok := a.signIns.byHash[auth.Hash(token)]
	a.signIns.mu.Unlock()
	if !ok || a.core.Time().After(l.expires) {
		return store.User{}, errSignInGone
	}
	u, err := a.store.GetUser(l.user)
	if err != nil {
		return store.User{}, errSignInGone
	}
	return u, nil
}

// RedeemSignIn uses a sign-in link once: it starts a browser session for
// the link's user and returns where the browser goes next.
func (a *Access) RedeemSignIn(token string) (store.User, api.Session, string, error) {
	hash := auth.Hash(token)
	a.signIns.mu.Lock()
	l, ok := a.signIns.byHash[hash]
	delete(a.signIns.byHash, hash)
	a.signIns.mu.Unlock()
	if !ok || a.core.Time().After(l.expires) {
		return store.User{}, api.Session{}, "", errSignInGone
	}
	u, err := a.store.GetUser(l.user)
	if err != nil {
		return store.User{}, api.Session{}, "", errSignInGone // the user was removed meanwhile
	}
	sess, err := a.NewSession(u)
	return u, sess, l.next, err
}
