// Package dashboard serves paddockd's pages for people in a browser: the
// one-time owner setup page, invitations, login and logout, approval of a
// CLI's device login, and a home page listing the user's boxes.
//
// A browser holds a session cookie (HttpOnly, SameSite=Lax, Secure behind
// HTTPS; its token is stored hashed like API tokens). Against forged
// requests, every POST must come from a page of this server: its Origin
// (or Referer) must name the request's own host, and a signed-in form
// carries the session's CSRF value. Against DNS rebinding, pages answer
// only for the configured host name (or loopback in local mode).
// Attempts to log in or redeem a link are rate limited per client address
// and per user name.
package dashboard

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/access"
	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/appliance/sso"
	"github.com/paddock-dev/paddock/appliance/store"
)

//go:embed pages.html
var files embed.FS

var pages = template.Must(template.ParseFS(files, "pages.html"))

// Cookie is the session cookie's name.
const Cookie = "paddock_session"

// cookie is the session cookie's name: under HTTPS it has the __Host-
// prefix, so the browser keeps it only as set by this very host (Secure,
// Path=/, no Domain), and a box's web server on a preview host (a
// subdomain) cannot plant or shadow it with a Domain cookie. Plain HTTP is
// local mode on loopback, where there are no preview hosts.
func (p *Pages) cookie() string {
	if p.Secure {
		return "__Host-" + Cookie
	}
	return Cookie
}

// CSRFHeader carries the session's CSRF value on API requests that a
// page makes with the cookie.
const CSRFHeader = "X-Paddock-CSRF"

// Pages serves the pages.
type Pages struct {
	Svc   *service.Service
	Store *store.Store
	Log   *slog.Logger
	// Hostname is the only Host the pages answer to ("" in local mode:
	// loopback names only).
	Hostname string
	// Secure marks cookies Secure (the pages are served over HTTPS).
	Secure bool
	// APIDoc gives the API's OpenAPI document (for the reference page).
	APIDoc func() ([]byte, error)
	// Access is the users and their ways in (package access): the
	// sign-in, setup, invitation and device pages use it.
	Access *access.Access
	// Servers lists the servers, as 'paddock nodes' does (package
	// nodes), for the Server page.
	Servers func(ctx context.Context) ([]api.Node, error)
	// Policies lists the policies the caller sees, as 'paddock policy
	// ls' does (package policy), for the New box form.
	Policies func(ctx context.Context) ([]api.Policy, error)

	perAddr auth.Limiter
	perName auth.Limiter
	// ssoAddr bounds the single sign-ons a client address begins (each
	// holds a state for 10 minutes): no guessing happens there, so more.
	ssoAddr auth.Limiter
}

// New makes the pages with the default rate limits: per client address a
// burst of 10 attempts then one per 6 s; per user name 5, then one per 20 s.
func New(svc *service.Service, st *store.Store, log *slog.Logger, hostname string, secure bool) *Pages {
	return &Pages{Svc: svc, Store: st, Log: log, Hostname: hostname, Secure: secure,
		perAddr: auth.Limiter{Every: 6 * time.Second, Burst: 10},
		perName: auth.Limiter{Every: 20 * time.Second, Burst: 5},
		ssoAddr: auth.Limiter{Every: time.Second, Burst: 30}}
}

// ssoLimited is limited for the single sign-ons a client begins.
func (p *Pages) ssoLimited(w http.ResponseWriter, r *http.Request) bool {
	if ok, wait := p.ssoAddr.Allow(caller.Addr(r)); !ok {
		secs := int(wait/time.Second) + 1
		w.Header().Set("Retry-After", fmt.Sprint(secs))
		p.render(w, http.StatusTooManyRequests, "error", view{Title: "Slow down", Error: fmt.Sprintf("Too many sign-ins begun. Try again in %d seconds.", secs)})
		return true
	}
	return false
}

// Routes adds the pages to mux.
func (p *Pages) Routes(t *route.Table) {
	t.Add("GET /{$}", route.Session, p.guard(p.app("boxes")))
	t.Add("GET /setup/{token}", route.Public, p.guard(p.linkPage))
	t.Add("POST /setup/{token}", route.Public, p.guard(p.redeem))
	t.Add("GET /invite/{token}", route.Public, p.guard(p.linkPage))
	t.Add("POST /invite/{token}", route.Public, p.guard(p.redeem))
	t.Add("GET /login", route.Public, p.guard(p.loginPage))
	t.Add("POST /login", route.Public, p.guard(p.login))
	t.Add("POST /logout", route.Session, p.guard(p.logout))
	t.Add("GET /sso/{id}/start", route.Public, p.guard(p.ssoStart))
	t.Add("GET /sso/{id}/callback", route.Public, p.guard(p.ssoCallback))
	t.Add("GET /device", route.Session, p.guard(p.devicePage))
	t.Add("POST /device", route.Session, p.guard(p.approve))
	p.appRoutes(t)
}

type view struct {
	Title   string
	Error   string
	Message string
	User    string
	Role    string
	CSRF    string
	Token   string
	Kind    string
	Code    string
	Device  *access.DeviceRequest
	Next    string
	Min     int
	// Providers are the single sign-on providers the login page offers;
	// PasswordOff hides its password form behind the owner's way in.
	Providers   []*sso.Provider
	PasswordOff bool
}

func (p *Pages) render(w http.ResponseWriter, status int, name string, v view) {
	v.Min = auth.MinPassword
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := pages.ExecuteTemplate(w, name, v); err != nil {
		p.Log.Error("rendering a page", "page", name, "err", err)
	}
}

// guard checks Host on every page and Origin on every POST.
func (p *Pages) guard(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.HostOK(r) {
			http.Error(w, "misdirected request: this server answers to "+p.hostDesc(), http.StatusMisdirectedRequest)
			return
		}
		if r.Method == http.MethodPost && !SameOrigin(r) {
			p.render(w, http.StatusForbidden, "error", view{Title: "Refused", Error: "This form was not sent from a page of this server."})
			return
		}
		h(w, r)
	})
}

func (p *Pages) hostDesc() string {
	if p.Hostname == "" {
		return "loopback names"
	}
	return p.Hostname
}

// HostOK reports whether the request names this server: the configured
// host name, or in local mode a loopback name.
func (p *Pages) HostOK(r *http.Request) bool {
	h := r.Host
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	h = strings.ToLower(strings.Trim(h, "[]"))
	if p.Hostname != "" {
		return h == p.Hostname
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// SameOrigin reports whether a request's Origin, or failing that its
// Referer, is this request's own scheme-less host.
func SameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		o = r.Header.Get("Referer")
	}
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

func (p *Pages) limited(w http.ResponseWriter, r *http.Request, name string) bool {
	ok, wait := p.perAddr.Allow(caller.Addr(r))
	if ok && name != "" {
		ok, wait = p.perName.Allow(strings.ToLower(name))
	}
	if ok {
		return false
	}
	secs := int(wait/time.Second) + 1
	w.Header().Set("Retry-After", fmt.Sprint(secs))
	p.render(w, http.StatusTooManyRequests, "error", view{Title: "Slow down", Error: fmt.Sprintf("Too many attempts. Try again in %d seconds.", secs)})
	return true
}

// Session returns the session of a request's cookie, if it has a live one.
func (p *Pages) Session(r *http.Request) (store.Token, store.User, bool) {
	t, u, ok := caller.Session(p.Store, r, p.cookie(), time.Now())
	if ok {
		audit.From(r.Context()).Who(u.Name, "session")
	}
	return t, u, ok
}

// CSRFOK reports whether a value matches the session's CSRF value.
func CSRFOK(t store.Token, v string) bool {
	return t.CSRF != "" && subtle.ConstantTimeCompare([]byte(t.CSRF), []byte(v)) == 1
}

func (p *Pages) setSession(w http.ResponseWriter, s api.Session) {
	http.SetCookie(w, &http.Cookie{Name: p.cookie(), Value: s.Token, Path: "/", Expires: s.Expires,
		HttpOnly: true, Secure: p.Secure, SameSite: http.SameSiteLaxMode})
}

func (p *Pages) linkPage(w http.ResponseWriter, r *http.Request) {
	tok := r.PathValue("token")
	kind, err := p.Access.LinkKind(tok)
	if err != nil || "/"+kind+"/"+tok != r.URL.Path {
		msg := "This link has been used or has expired."
		var ae *api.Error
		if errors.As(err, &ae) {
			msg = ae.Message
		}
		p.render(w, http.StatusGone, "error", view{Title: "Link not valid", Error: msg})
		return
	}
	p.render(w, http.StatusOK, "account", view{Title: titleOf(kind), Kind: kind, Token: tok})
}

func titleOf(kind string) string {
	if kind == store.LinkSetup {
		return "Create the owner account"
	}
	return "Create your account"
}

func (p *Pages) redeem(w http.ResponseWriter, r *http.Request) {
	tok := r.PathValue("token")
	kind := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")[0]
	name := strings.TrimSpace(r.PostFormValue("name"))
	if p.limited(w, r, "") {
		return
	}
	if real, err := p.Access.LinkKind(tok); err != nil || real != kind {
		p.render(w, http.StatusGone, "error", view{Title: "Link not valid", Error: "This link has been used or has expired."})
		return
	}
	pw := r.PostFormValue("password")
	if pw != r.PostFormValue("password2") {
		p.render(w, http.StatusBadRequest, "account", view{Title: titleOf(kind), Kind: kind, Token: tok, Error: "The two passwords differ."})
		return
	}
	u, sess, err := p.Access.Redeem(tok, name, pw)
	rec := audit.From(r.Context())
	rec.Note("name", name)
	if err != nil {
		rec.Result(err.Error())
		code, msg := http.StatusInternalServerError, err.Error()
		var ae *api.Error
		if errors.As(err, &ae) {
			code = map[string]int{api.CodeInvalid: 400, api.CodeConflict: 409, api.CodeGone: 410}[ae.Code]
			if code == 0 {
				code = 500
			}
		}
		if code == http.StatusGone {
			p.render(w, code, "error", view{Title: "Link not valid", Error: msg})
			return
		}
		p.render(w, code, "account", view{Title: titleOf(kind), Kind: kind, Token: tok, Error: msg})
		return
	}
	p.Log.Info("user created", "user", u.Name, "role", u.Role, "by", kind)
	rec.Who(u.Name, "link")
	p.setSession(w, sess)
	p.render(w, http.StatusCreated, "welcome", view{Title: "Welcome", User: u.Name, Role: u.Role, Next: p.serverURL(r)})
}

func (p *Pages) serverURL(r *http.Request) string {
	scheme := "http"
	if p.Secure || r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// safeNext keeps a redirect after login on this server.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	// Browsers read a backslash as a slash and drop tabs and newlines, so
	// "/\\evil" or "/\t/evil" would leave the site: such paths go home.
	p := u.Path
	if !strings.HasPrefix(p, "/") || strings.ContainsFunc(p, func(r rune) bool { return r == '\\' || r < 0x20 || r == 0x7f }) {
		return "/"
	}
	p = path.Clean(p)
	if strings.HasPrefix(p, "//") {
		return "/"
	}
	return (&url.URL{Path: p, RawQuery: u.RawQuery}).String()
}

// loginView is the login page's view.
func (p *Pages) loginView(next, msg string) view {
	return view{Title: "Log in", Next: next, Error: msg, Providers: p.Svc.SSO.Providers(), PasswordOff: !p.Svc.Cfg.PasswordLogin}
}

func (p *Pages) loginPage(w http.ResponseWriter, r *http.Request) {
	p.render(w, http.StatusOK, "login", p.loginView(safeNext(r.URL.Query().Get("next")), ""))
}

func (p *Pages) login(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	next := safeNext(r.PostFormValue("next"))
	if p.limited(w, r, name) {
		return
	}
	rec := audit.From(r.Context())
	rec.Note("name", name)
	u, sess, err := p.Access.Login(name, r.PostFormValue("password"))
	if err != nil {
		rec.Result("wrong user name or password")
		p.Log.Warn("failed login", "user", name, "addr", caller.Addr(r))
		msg := "Wrong user name or password."
		if errors.Is(err, access.ErrPasswordOff) {
			msg = "Password sign-in is off on this server: sign in with its sign-in provider above (only the owner's password works)."
			rec.Result("password sign-in is off")
		}
		p.render(w, http.StatusUnauthorized, "login", p.loginView(next, msg))
		return
	}
	p.Log.Info("login", "user", u.Name, "addr", caller.Addr(r))
	rec.Who(u.Name, "password")
	p.setSession(w, sess)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (p *Pages) logout(w http.ResponseWriter, r *http.Request) {
	t, _, ok := p.Session(r)
	if !ok {
		audit.From(r.Context()).Skip() // no one known
	}
	if ok && !CSRFOK(t, r.PostFormValue("csrf")) {
		// A forged logout neither ends the session nor drops the cookie.
		p.render(w, http.StatusForbidden, "error", view{Title: "Refused", Error: "This form is stale; open the page again."})
		return
	}
	if ok {
		p.Store.DeleteTokenHash(t.Hash)
	}
	http.SetCookie(w, &http.Cookie{Name: p.cookie(), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: p.Secure, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func (p *Pages) devicePage(w http.ResponseWriter, r *http.Request) {
	t, u, ok := p.Session(r)
	if !ok {
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	p.render(w, http.StatusOK, "device", view{Title: "Approve a login", User: u.Name, CSRF: t.CSRF})
}

func (p *Pages) approve(w http.ResponseWriter, r *http.Request) {
	t, u, ok := p.Session(r)
	if !ok {
		audit.From(r.Context()).Skip() // no one known
		http.Redirect(w, r, "/login?next=/device", http.StatusSeeOther)
		return
	}
	if !CSRFOK(t, r.PostFormValue("csrf")) {
		p.render(w, http.StatusForbidden, "error", view{Title: "Refused", Error: "This form is stale; open the page again."})
		return
	}
	code := r.PostFormValue("code")
	action := r.PostFormValue("action")
	if action == "review" {
		// The typed code first shows what would be approved; only a second
		// click on that page approves it.
		d, err := p.Access.DeviceInfo(code)
		if err != nil {
			p.render(w, http.StatusNotFound, "device", view{Title: "Approve a login", User: u.Name, CSRF: t.CSRF, Code: code, Error: err.Error()})
			return
		}
		p.render(w, http.StatusOK, "device-confirm", view{Title: "Approve a login", User: u.Name, CSRF: t.CSRF, Device: &d})
		return
	}
	approve := action == "approve"
	if err := p.Access.DeviceApprove(caller.With(r.Context(), u), code, approve); err != nil {
		p.render(w, http.StatusNotFound, "device", view{Title: "Approve a login", User: u.Name, CSRF: t.CSRF, Code: code, Error: err.Error()})
		return
	}
	msg := "The login was denied."
	if approve {
		msg = "Approved. The command line is now logged in as " + u.Name + "; you can close this page."
		p.Log.Info("device login approved", "user", u.Name)
	}
	p.render(w, http.StatusOK, "done", view{Title: "Done", Message: msg})
}
