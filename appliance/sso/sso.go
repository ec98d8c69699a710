// Package sso signs people in with OpenID Connect providers (single
// sign-on): the authorization code flow with PKCE (S256), a state that is
// bound to the browser by a cookie and good once, and a nonce; the ID
// token is verified against the issuer's published keys by coreos/go-oidc
// (its signature, issuer, audience and expiry), never by hand.
//
// Who may come in is the provider's configuration: email domains (the
// provider must say the address is verified) and groups (a claim of the
// ID token, "groups" by default), both when both are set; a group can
// carry a role (admin or member). The package says who the person is and
// whether they are let in; package service makes or finds their user.
// A refresh token, when the provider gives one, lets the server ask the
// provider again later whether the person still stands (Refresh).
package sso

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/paddock-dev/paddock/appliance/config"
)

// StateTTL is how long a sign-in may take at the provider.
const StateTTL = 10 * time.Minute

// maxPending bounds the sign-ins under way (each is a few hundred bytes).
const maxPending = 10000

// Provider is one configured provider.
type Provider struct {
	ID, Name string
	cfg      config.SSOProvider
	client   *http.Client

	mu       sync.Mutex
	oidc     *oidc.Provider // discovered at first use
	verifier *oidc.IDTokenVerifier
}

// Identity is who the provider says signed in.
type Identity struct {
	Provider string
	Subject  string
	Email    string
	Verified bool
	// Username is the name the provider gives (preferred_username, else
	// the email's local part).
	Username string
	Groups   []string
	// Refresh is the refresh token, when the provider gave one.
	Refresh string
}

// Refused is a person the provider signed in whom the rules do not let
// in: its message says why, for them.
type Refused struct{ Why string }

func (r *Refused) Error() string { return r.Why }

// Set is the configured providers and the sign-ins under way.
type Set struct {
	providers map[string]*Provider
	Now       func() time.Time

	mu      sync.Mutex
	pending map[string]pending // by state
}

type pending struct {
	provider, verifier, nonce, redirect, next string
	expires                                   time.Time
}

// New makes the providers of cfg (none: nil). Their discovery documents
// are read at first use, so a provider that is down does not stop the
// server.
func New(cfg map[string]config.SSOProvider) (*Set, error) {
	if len(cfg) == 0 {
		return nil, nil
	}
	s := &Set{providers: map[string]*Provider{}, pending: map[string]pending{}}
	for id, c := range cfg {
		client := &http.Client{Timeout: 15 * time.Second}
		if c.CAFile != "" {
			pem, err := os.ReadFile(c.CAFile)
			if err != nil {
				return nil, fmt.Errorf("sso.%s.ca_file: %w", id, err)
			}
			pool, err := x509.SystemCertPool()
			if err != nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("sso.%s.ca_file %s: no PEM certificate in it", id, c.CAFile)
			}
			client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
		}
		if c.GroupsClaim == "" {
			c.GroupsClaim = "groups"
		}
		name := c.Name
		if name == "" {
			name = id
		}
		s.providers[id] = &Provider{ID: id, Name: name, cfg: c, client: client}
	}
	return s, nil
}

func (s *Set) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Providers lists the providers, by id.
func (s *Set) Providers() []*Provider {
	if s == nil {
		return nil
	}
	out := make([]*Provider, 0, len(s.providers))
	for _, p := range s.providers {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Provider is the provider of id.
func (s *Set) Provider(id string) (*Provider, bool) {
	if s == nil {
		return nil, false
	}
	p, ok := s.providers[id]
	return p, ok
}

// discover reads the provider's discovery document (once it answered).
func (p *Provider) discover(ctx context.Context) (*oidc.Provider, *oidc.IDTokenVerifier, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.oidc != nil {
		return p.oidc, p.verifier, nil
	}
	// The key set fetches with this context later: not the request's.
	kctx := oidc.ClientContext(context.WithoutCancel(ctx), p.client)
	op, err := oidc.NewProvider(kctx, p.cfg.Issuer)
	if err != nil {
		return nil, nil, fmt.Errorf("the sign-in provider %s does not answer as an OpenID provider: %w", p.Name, err)
	}
	p.oidc = op
	p.verifier = op.Verifier(&oidc.Config{ClientID: p.cfg.ClientID})
	return p.oidc, p.verifier, nil
}

func (p *Provider) oauth(op *oidc.Provider, redirect string) *oauth2.Config {
	return &oauth2.Config{ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret, Endpoint: op.Endpoint(),
		RedirectURL: redirect, Scopes: []string{oidc.ScopeOpenID, "email", "profile", oidc.ScopeOfflineAccess}}
}

func random() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Start begins a sign-in with provider id that comes back to redirect
// (this server's /sso/ID/callback) and then goes to next: the provider's
// URL to send the browser to, and the state to bind to it (a cookie).
func (s *Set) Start(ctx context.Context, id, redirect, next string) (authURL, state string, err error) {
	p, ok := s.Provider(id)
	if !ok {
		return "", "", fmt.Errorf("no sign-in provider %q", id)
	}
	op, _, err := p.discover(ctx)
	if err != nil {
		return "", "", err
	}
	state, nonce, verifier := random(), random(), oauth2.GenerateVerifier()
	now := s.now()
	s.mu.Lock()
	for k, v := range s.pending {
		if now.After(v.expires) {
			delete(s.pending, k)
		}
	}
	if len(s.pending) >= maxPending {
		s.mu.Unlock()
		return "", "", errors.New("too many sign-ins under way: try again in a few minutes")
	}
	s.pending[state] = pending{provider: id, verifier: verifier, nonce: nonce, redirect: redirect, next: next, expires: now.Add(StateTTL)}
	s.mu.Unlock()
	return p.oauth(op, redirect).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), state, nil
}

// ErrState is a callback whose state is not one this server gave the
// same browser (forged, replayed, or too old).
var ErrState = errors.New("this sign-in was not started here, was already used, or took longer than 10 minutes: sign in again")

// Finish ends a sign-in at provider id's callback: state must be the
// one given by Start (and bound to the browser: cookieState); the code is
// exchanged with the PKCE verifier, and the ID token verified (keys,
// issuer, audience, expiry) with its nonce. It returns who signed in and
// where to go next.
func (s *Set) Finish(ctx context.Context, id, state, cookieState, code string) (Identity, string, error) {
	s.mu.Lock()
	pd, ok := s.pending[state]
	if ok {
		delete(s.pending, state) // good once, whatever follows
	}
	s.mu.Unlock()
	if !ok || state == "" || cookieState != state || pd.provider != id || s.now().After(pd.expires) {
		return Identity{}, "", ErrState
	}
	p, _ := s.Provider(id)
	op, verifier, err := p.discover(ctx)
	if err != nil {
		return Identity{}, "", err
	}
	ctx = oidc.ClientContext(ctx, p.client)
	tok, err := p.oauth(op, pd.redirect).Exchange(ctx, code, oauth2.VerifierOption(pd.verifier))
	if err != nil {
		return Identity{}, "", fmt.Errorf("the provider did not accept this sign-in's code (used already, or too old): %w", err)
	}
	ident, err := p.identity(ctx, verifier, tok, pd.nonce)
	return ident, pd.next, err
}

// identity verifies the ID token of tok and reads who it names.
func (p *Provider) identity(ctx context.Context, verifier *oidc.IDTokenVerifier, tok *oauth2.Token, nonce string) (Identity, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, errors.New("the provider's answer has no ID token")
	}
	idt, err := verifier.Verify(ctx, raw)
	if err != nil {
		return Identity{}, fmt.Errorf("the provider's ID token does not verify: %w", err)
	}
	if nonce != "" && idt.Nonce != nonce {
		return Identity{}, errors.New("the provider's ID token is not for this sign-in (its nonce differs)")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, err
	}
	str := func(k string) string { v, _ := claims[k].(string); return v }
	id := Identity{Provider: p.ID, Subject: idt.Subject, Email: str("email"), Username: str("preferred_username"), Refresh: tok.RefreshToken}
	switch v := claims["email_verified"].(type) {
	case bool:
		id.Verified = v
	case string:
		id.Verified = v == "true"
	}
	if id.Username == "" {
		id.Username, _, _ = strings.Cut(id.Email, "@")
	}
	if gs, ok := claims[p.cfg.GroupsClaim].([]any); ok {
		for _, g := range gs {
			if g, ok := g.(string); ok {
				id.Groups = append(id.Groups, g)
			}
		}
	}
	return id, nil
}

// Admit says whether the rules let the person in, and with which role
// (admin or member); a refusal is a *Refused that says why.
func (p *Provider) Admit(id Identity) (string, error) {
	if len(p.cfg.Domains) > 0 {
		_, domain, _ := strings.Cut(strings.ToLower(id.Email), "@")
		if !id.Verified || domain == "" {
			return "", &Refused{fmt.Sprintf("%s did not say your email address (%q) is verified, and this server lets people in by their email's domain.", p.Name, id.Email)}
		}
		if !slices.ContainsFunc(p.cfg.Domains, func(d string) bool { return strings.EqualFold(d, domain) }) {
			return "", &Refused{fmt.Sprintf("Your account %s is not let in here: its email domain is not %s. Ask the server's owner.", id.Email, strings.Join(p.cfg.Domains, " or "))}
		}
	}
	if len(p.cfg.Groups) > 0 && !slices.ContainsFunc(id.Groups, func(g string) bool { return slices.Contains(p.cfg.Groups, g) }) {
		return "", &Refused{fmt.Sprintf("Your account %s is not let in here: it is in none of the groups %s at %s. Ask the server's owner.", orSubject(id), strings.Join(p.cfg.Groups, ", "), p.Name)}
	}
	// The highest role of the person's groups that have one; member when
	// none has.
	rank := map[string]int{"viewer": 1, "member": 2, "admin": 3}
	role := ""
	for _, g := range id.Groups {
		if r := p.cfg.Roles[g]; rank[r] > rank[role] {
			role = r
		}
	}
	if role == "" {
		role = "member"
	}
	return role, nil
}

func orSubject(id Identity) string {
	if id.Email != "" {
		return id.Email
	}
	return id.Username
}

// Refresh asks provider id again about the person of a refresh token: who
// they are now (their groups may have changed) and the next refresh
// token. A provider that refuses the token (the person is gone, or was
// signed out there) is a *Refused; one that cannot be reached, another
// error.
func (s *Set) Refresh(ctx context.Context, id, refresh string) (Identity, error) {
	p, ok := s.Provider(id)
	if !ok {
		return Identity{}, &Refused{fmt.Sprintf("the sign-in provider %q is no longer configured", id)}
	}
	op, verifier, err := p.discover(ctx)
	if err != nil {
		return Identity{}, err
	}
	ctx = oidc.ClientContext(ctx, p.client)
	tok, err := p.oauth(op, "").TokenSource(ctx, &oauth2.Token{RefreshToken: refresh, Expiry: time.Unix(1, 0)}).Token()
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 {
		return Identity{}, &Refused{fmt.Sprintf("%s refused the refresh: %s", p.Name, re.ErrorCode)}
	}
	if err != nil {
		return Identity{}, err
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = refresh
	}
	if _, ok := tok.Extra("id_token").(string); !ok {
		// No new ID token: the person stands, as they were.
		return Identity{Provider: id, Refresh: tok.RefreshToken}, nil
	}
	return p.identity(ctx, verifier, tok, "")
}
