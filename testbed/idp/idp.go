// Package idp is an OpenID Connect provider for tests, on loopback: the
// discovery document, its signing keys (JWKS), the authorization
// endpoint (a page where the browser picks who signs in), the token
// endpoint (authorization code with PKCE, single-use codes, refresh
// tokens) and userinfo. ID tokens are RS256 JWTs signed with go-jose.
//
// A test controls the people (their email, whether it is verified, their
// groups; removing one refuses their refresh tokens) and can make the ID
// token of the next sign-in expired or signed with a key the provider
// does not publish, to show that the relying party refuses them.
package idp

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Person is someone the provider can sign in.
type Person struct {
	Subject  string
	Username string
	Email    string
	Verified bool
	Groups   []string
}

// Next is what is wrong with the next ID token the provider issues.
type Next int

const (
	Good Next = iota
	// Expired is an ID token whose exp has passed.
	Expired
	// ForeignKey is signed with a key that is not in the JWKS.
	ForeignKey
	// WrongNonce carries a nonce other than the one the sign-in sent
	// (an ID token of another sign-in, replayed into this one).
	WrongNonce
)

// Provider is a running provider.
type Provider struct {
	URL          string // the issuer
	ClientID     string
	ClientSecret string
	// Redirect is the one redirect URI the client may use.
	Redirect string

	srv            *http.Server
	key, foreign   *rsa.PrivateKey
	mu             sync.Mutex
	people         map[string]Person // by subject
	codes          map[string]grant
	refresh        map[string]string // refresh token → subject
	next           Next
	Exchanged      int // codes exchanged
	RefusedReplays int // codes presented a second time
}

type grant struct {
	subject, redirect, nonce, challenge string
	expires                             time.Time
}

// Start runs a provider on a loopback port for a client that comes back
// to redirect.
func Start(clientID, clientSecret, redirect string) (*Provider, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	foreign, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Provider{URL: "http://" + l.Addr().String(), ClientID: clientID, ClientSecret: clientSecret, Redirect: redirect,
		key: key, foreign: foreign, people: map[string]Person{}, codes: map[string]grant{}, refresh: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /authorize", p.approve)
	mux.HandleFunc("POST /token", p.token)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(l)
	return p, nil
}

// Stop ends the provider.
func (p *Provider) Stop() { p.srv.Close() }

// Add adds or changes a person.
func (p *Provider) Add(who Person) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.people[who.Subject] = who
}

// Remove removes a person: they cannot sign in, and their refresh tokens
// are refused.
func (p *Provider) Remove(subject string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.people, subject)
}

// SetNext makes the ID token of the next sign-in (a code's exchange, not
// a refresh) wrong in that way.
func (p *Provider) SetNext(n Next) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next = n
}

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{
		"issuer": p.URL, "authorization_endpoint": p.URL + "/authorize", "token_endpoint": p.URL + "/token",
		"jwks_uri": p.URL + "/jwks", "response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"}, "code_challenge_methods_supported": []string{"S256"},
		"grant_types_supported": []string{"authorization_code", "refresh_token"}, "scopes_supported": []string{"openid", "email", "profile", "offline_access"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
	})
}

func (p *Provider) jwks(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
}

var page = template.Must(template.New("").Parse(`<!doctype html><title>Test provider</title>
<h1>Test provider: sign in</h1>
<form method="post" action="/authorize">
{{range $k, $v := .Params}}<input type="hidden" name="{{$k}}" value="{{$v}}">{{end}}
{{range .People}}<button type="submit" name="subject" value="{{.Subject}}" id="as-{{.Subject}}">Sign in as {{.Username}} ({{.Email}})</button>
{{end}}</form>`))

// authorize shows who may sign in, after checking the client's request.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := p.checkAuthRequest(q); err != "" {
		http.Error(w, err, http.StatusBadRequest)
		return
	}
	params := map[string]string{}
	for _, k := range []string{"client_id", "redirect_uri", "state", "nonce", "code_challenge", "code_challenge_method", "scope"} {
		params[k] = q.Get(k)
	}
	p.mu.Lock()
	var people []Person
	for _, who := range p.people {
		people = append(people, who)
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	page.Execute(w, map[string]any{"Params": params, "People": people})
}

func (p *Provider) checkAuthRequest(q url.Values) string {
	switch {
	case q.Get("client_id") != p.ClientID:
		return "unknown client"
	case q.Get("redirect_uri") != p.Redirect:
		return "redirect_uri is not the client's"
	case q.Get("response_type") != "" && q.Get("response_type") != "code":
		return "response_type must be code"
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		return "PKCE (S256) is required"
	}
	return ""
}

// approve signs the chosen person in: a code back to the client.
func (p *Provider) approve(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	if err := p.checkAuthRequest(r.PostForm); err != "" {
		http.Error(w, err, http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	_, ok := p.people[r.PostFormValue("subject")]
	code := random()
	if ok {
		p.codes[code] = grant{subject: r.PostFormValue("subject"), redirect: r.PostFormValue("redirect_uri"), nonce: r.PostFormValue("nonce"),
			challenge: r.PostFormValue("code_challenge"), expires: time.Now().Add(time.Minute)}
	}
	p.mu.Unlock()
	u, _ := url.Parse(r.PostFormValue("redirect_uri"))
	q := url.Values{"state": {r.PostFormValue("state")}}
	if ok {
		q.Set("code", code)
	} else {
		q.Set("error", "access_denied")
	}
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

func random() string {
	b := make([]byte, 18)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	}
	if id != p.ClientID || secret != p.ClientSecret {
		writeJSON(w, 401, map[string]string{"error": "invalid_client"})
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var subject, nonce string
	switch r.PostFormValue("grant_type") {
	case "authorization_code":
		g, ok := p.codes[r.PostFormValue("code")]
		if !ok {
			p.RefusedReplays++
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "unknown or used code"})
			return
		}
		delete(p.codes, r.PostFormValue("code"))
		sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
		if time.Now().After(g.expires) || g.redirect != r.PostFormValue("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "expired code, another redirect_uri, or a verifier that does not match"})
			return
		}
		p.Exchanged++
		subject, nonce = g.subject, g.nonce
	case "refresh_token":
		s, ok := p.refresh[r.PostFormValue("refresh_token")]
		if !ok {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "unknown refresh token"})
			return
		}
		delete(p.refresh, r.PostFormValue("refresh_token"))
		subject = s
	default:
		writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	who, ok := p.people[subject]
	if !ok {
		writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "the person is no longer here"})
		return
	}
	next := Good
	if r.PostFormValue("grant_type") == "authorization_code" {
		next, p.next = p.next, Good
	}
	idt, err := p.idToken(who, nonce, next)
	if err != nil {
		writeJSON(w, 500, map[string]string{"error": "server_error", "error_description": err.Error()})
		return
	}
	rt := random()
	p.refresh[rt] = subject
	writeJSON(w, 200, map[string]any{"access_token": random(), "token_type": "Bearer", "expires_in": 300, "id_token": idt, "refresh_token": rt})
}

// idToken signs an ID token for who, wrong as next says.
func (p *Provider) idToken(who Person, nonce string, next Next) (string, error) {
	key, now := p.key, time.Now()
	exp := now.Add(5 * time.Minute)
	switch next {
	case Expired:
		now, exp = now.Add(-time.Hour), now.Add(-30*time.Minute)
	case ForeignKey:
		key = p.foreign
	case WrongNonce:
		nonce = "another-sign-ins-nonce"
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		return "", err
	}
	claims := map[string]any{"iss": p.URL, "sub": who.Subject, "aud": p.ClientID, "iat": now.Unix(), "exp": exp.Unix(),
		"email": who.Email, "email_verified": who.Verified, "preferred_username": who.Username, "groups": who.Groups}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	return jwt.Signed(signer).Claims(claims).Serialize()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		fmt.Println("idp:", err)
	}
}
