package service

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
func (s *Service) SignInLink(ctx context.Context, next string) (string, time.Time, error) {
	u, ok := caller.From(ctx)
	if !ok {
		return "", time.Time{}, &api.Error{Code: api.CodeUnauthorized, Message: "a sign-in link is for a user"}
	}
	if err := s.mint(ctx, "sign-in links"); err != nil {
		return "", time.Time{}, err
	}
	tok, hash := auth.NewToken()
	exp := s.now().Add(SignInTTL)
	s.SignIns.mu.Lock()
	defer s.SignIns.mu.Unlock()
	if s.SignIns.byHash == nil {
		s.SignIns.byHash = map[string]signIn{}
	}
	now := s.now()
	for k, v := range s.SignIns.byHash {
		if now.After(v.expires) {
			delete(s.SignIns.byHash, k)
		}
	}
	if len(s.SignIns.byHash) > 1000 {
		return "", time.Time{}, &api.Error{Code: api.CodeTooMany, Message: "too many sign-in links waiting; try again in two minutes"}
	}
	s.SignIns.byHash[hash] = signIn{user: u.ID, next: next, expires: exp}
	return tok, exp, nil
}

// errSignInGone answers a sign-in link that was used, expired or never was.
var errSignInGone = &api.Error{Code: api.CodeGone, Message: "this sign-in link has been used or has expired; run 'paddock dashboard' again"}

// PeekSignIn says whose a live sign-in link is, without using it (the
// confirmation page names the account before the browser signs in).
func (s *Service) PeekSignIn(token string) (store.User, error) {
	s.SignIns.mu.Lock()
	l, ok := s.SignIns.byHash[auth.Hash(token)]
	s.SignIns.mu.Unlock()
	if !ok || s.now().After(l.expires) {
		return store.User{}, errSignInGone
	}
	u, err := s.Store.GetUser(l.user)
	if err != nil {
		return store.User{}, errSignInGone
	}
	return u, nil
}

// RedeemSignIn uses a sign-in link once: it starts a browser session for
// the link's user and returns where the browser goes next.
func (s *Service) RedeemSignIn(token string) (store.User, api.Session, string, error) {
	hash := auth.Hash(token)
	s.SignIns.mu.Lock()
	l, ok := s.SignIns.byHash[hash]
	delete(s.SignIns.byHash, hash)
	s.SignIns.mu.Unlock()
	if !ok || s.now().After(l.expires) {
		return store.User{}, api.Session{}, "", errSignInGone
	}
	u, err := s.Store.GetUser(l.user)
	if err != nil {
		return store.User{}, api.Session{}, "", errSignInGone // the user was removed meanwhile
	}
	sess, err := s.NewSession(u)
	return u, sess, l.next, err
}
