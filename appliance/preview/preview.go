// Package preview serves preview URLs: https://PORT-BOX.HOST reaches
// PORT inside BOX, for people who may see the box (its owner, or the
// server's owner) and nobody else. In local mode (no host name) they are
// http://PORT-BOX.localhost:PORT-OF-THE-API: browsers send every name
// under localhost to the loopback address, where paddockd listens.
//
// A preview host is another origin than the server's, so the browser
// session's cookie (host-only) is not sent to it, and nothing the box
// serves can read it. Instead the first visit is sent to the server's
// /preview page, which (with the session) hands out a single-use ticket
// valid for one minute and one preview host; the preview host trades it
// for a cookie of its own, scoped to that host. API clients may send their
// bearer token instead. Neither the cookie nor the token is passed on to
// the box.
//
// Preview sessions live in memory: after a restart the browser goes
// through /preview again, which is invisible to a person still logged in.
package preview

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/caller"

	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/caddy"
)

// Cookie is the preview session cookie's name.
const Cookie = "paddock_preview"

// cookie is the preview cookie's name: __Host- under HTTPS (see the
// dashboard's session cookie).
func (h *Handler) cookie() string {
	if h.Scheme == "https" {
		return "__Host-" + Cookie
	}
	return Cookie
}

// AuthPath is the path on a preview host that trades a ticket for a cookie.
const AuthPath = "/__paddock/auth"

// TicketTTL bounds a ticket; SessionTTL a preview session.
const (
	TicketTTL  = time.Minute
	SessionTTL = 12 * time.Hour
)

// Pages is what a preview's start asks of the server's own pages: that
// the request came to their host, and the session of its cookie
// (caller.Session, under the pages' cookie).
type Pages interface {
	HostOK(r *http.Request) bool
	Session(r *http.Request) (store.Token, store.User, bool)
}

// Handler serves preview hosts, the /preview page and the ask endpoint.
type Handler struct {
	Store *store.Store
	// Pages are the server's own pages (package dashboard): a browser
	// that starts a preview is signed in there, with their session.
	Pages    Pages
	Hostname string
	// Scheme and Port are how browsers reach the preview hosts ("https",
	// and "" for the default port).
	Scheme string
	Port   string
	// Main is the host (and port) of the server's own pages, where a
	// browser without a preview cookie is sent to sign in (default:
	// Hostname and Port). In local mode previews are PORT-BOX.localhost
	// and the pages are at the API's loopback address.
	Main string
	// AskLimit bounds how many new preview names Ask approves per hour
	// (default 30): each is a certificate order, and the ACME rate limits
	// of the domain are shared by all of them.
	AskLimit int
	// Dial reaches a port of a box on another server (Service.DialBox):
	// this server has no route to its box network. Boxes of this server
	// are reached at their address.
	Dial func(ctx context.Context, box string, port int) (net.Conn, error)
	// Use marks a box in use for a request, waking it if it sleeps
	// (Service.Use); nil: requests are no use.
	Use func(ctx context.Context, box string) (done func(), woke bool, err error)
	// Served says which ports of every box paddockd answers itself at
	// their preview names (E2B's envd, package e2b): Ask approves their
	// names for a running box without asking the box. Names are other
	// names of the server that Ask approves (E2B's api.HOST).
	Served func(port int) bool
	Names  []string

	once     sync.Once
	approved map[string]bool
	asked    []time.Time // approvals of new names in the last hour
	re       *regexp.Regexp
	mu       sync.Mutex
	tickets  map[string]grant
	sessions map[string]grant
}

type grant struct {
	user    int64
	host    string // the preview host, with the port browsers reach it at
	expires time.Time
}

func (h *Handler) init() {
	h.once.Do(func() {
		h.re = regexp.MustCompile(caddy.PreviewPattern(h.Hostname))
		h.tickets = map[string]grant{}
		h.sessions = map[string]grant{}
	})
}

// Match reports whether host (with or without a port) is a preview host,
// and of which port and box.
func (h *Handler) Match(host string) (port int, box string, ok bool) {
	h.init()
	m := h.re.FindStringSubmatch(strings.ToLower(host))
	if m == nil {
		return 0, "", false
	}
	p, err := strconv.Atoi(m[1])
	if err != nil || p < 1 || p > 65535 {
		return 0, "", false
	}
	return p, m[2], true
}

// hostOf is a Host (or URL host) as the grants hold it: lower-cased, with
// its port. A ticket or session for one port of a preview name is none
// for another port of it (another program on this machine may listen
// there, and would be sent the ticket).
func hostOf(h string) string { return strings.ToLower(h) }

// ourHost says whether host (with its port, as a browser sends it) is
// one this server serves previews at: the preview port, or none where
// previews are on the scheme's default port.
func (h *Handler) ourHost(host string) bool {
	_, port, err := net.SplitHostPort(host)
	if err != nil {
		return h.Port == ""
	}
	return port == h.Port
}

func random() string {
	b := make([]byte, 24)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Routes adds /preview and the ask endpoint to the server's mux.
func (h *Handler) Routes(t *route.Table) {
	t.AddFunc("GET /preview", route.Session, h.start)
}

// Ask answers Caddy's question whether a name may get a certificate on
// demand: the host name itself, and the preview hosts of existing boxes.
//
// A preview name is approved only for a port on which its box, running,
// answers now: any other name would be a certificate order for nothing. New
// names are approved at most AskLimit an hour; a wildcard certificate for
// *.HOST (the README says how) needs no on-demand orders at all.
func (h *Handler) Ask(w http.ResponseWriter, r *http.Request) {
	d := strings.ToLower(r.URL.Query().Get("domain"))
	if d == h.Hostname || slices.Contains(h.Names, d) {
		return
	}
	port, box, ok := h.Match(d)
	if !ok {
		http.Error(w, "not a name of this server", http.StatusNotFound)
		return
	}
	h.mu.Lock()
	known := h.approved[d]
	h.mu.Unlock()
	if known {
		return
	}
	b, err := h.Store.GetBox(box)
	// A box on another server is not asked whether it listens: a name
	// for it is approved while it runs (AskLimit still bounds them).
	served := h.Served != nil && h.Served(port)
	if err != nil || b.IP == "" || b.Observed != "running" || (b.Node == "" && !served && !listening(b.IP, port)) {
		http.Error(w, "not a name of this server", http.StatusNotFound)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	limit := h.AskLimit
	if limit <= 0 {
		limit = 30
	}
	now := time.Now()
	for len(h.asked) > 0 && now.Sub(h.asked[0]) > time.Hour {
		h.asked = h.asked[1:]
	}
	if len(h.asked) >= limit {
		http.Error(w, "too many new preview names this hour", http.StatusTooManyRequests)
		return
	}
	h.asked = append(h.asked, now)
	if h.approved == nil {
		h.approved = map[string]bool{}
	}
	h.approved[d] = true
}

// listening says whether something in a box accepts connections on port.
func listening(ip string, port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// visible finds the box of a preview host if user u may use it: its
// owner, or a member of it (a preview's server can change what is in the
// box, so a viewer has none).
func (h *Handler) visible(u store.User, box string) (store.Box, bool) {
	b, err := h.Store.GetBox(box)
	if err != nil {
		return b, false
	}
	a, err := caller.AccessFor(h.Store, u, b)
	return b, err == nil && caller.AccessRank(a) >= caller.AccessRank(caller.AccessMember)
}

// start is /preview?to=URL on the server's host: with a browser session,
// it sends the browser to the preview host with a ticket.
func (h *Handler) start(w http.ResponseWriter, r *http.Request) {
	if !h.Pages.HostOK(r) {
		http.Error(w, "misdirected request", http.StatusMisdirectedRequest)
		return
	}
	_, u, ok := h.Pages.Session(r)
	if !ok {
		audit.From(r.Context()).Skip() // no one known
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	to, err := url.Parse(r.URL.Query().Get("to"))
	if err != nil || to.Scheme != h.Scheme || !h.ourHost(to.Host) {
		http.Error(w, "not a preview URL of this server", http.StatusBadRequest)
		return
	}
	_, box, ok := h.Match(to.Host)
	if !ok {
		http.Error(w, "not a preview URL of this server", http.StatusBadRequest)
		return
	}
	audit.From(r.Context()).About(box, "")
	if _, ok := h.visible(u, box); !ok {
		http.Error(w, "no box named "+strconv.Quote(box), http.StatusNotFound)
		return
	}
	t := random()
	h.mu.Lock()
	now := time.Now()
	for k, g := range h.tickets {
		if now.After(g.expires) {
			delete(h.tickets, k)
		}
	}
	h.tickets[t] = grant{user: u.ID, host: hostOf(to.Host), expires: now.Add(TicketTTL)}
	h.mu.Unlock()
	path := to.EscapedPath()
	if path == "" {
		path = "/"
	}
	if to.RawQuery != "" {
		path += "?" + to.RawQuery
	}
	back := url.URL{Scheme: to.Scheme, Host: to.Host, Path: AuthPath, RawQuery: url.Values{"ticket": {t}, "to": {path}}.Encode()}
	http.Redirect(w, r, back.String(), http.StatusSeeOther)
}

// caller finds who a request to a preview host acts as.
func (h *Handler) caller(r *http.Request) (store.User, bool) {
	// An app's own Authorization (Basic, say) is the app's: only a
	// bearer token is Paddock's.
	if _, err := auth.FromHeader(r.Header.Get("Authorization")); err == nil {
		_, u, err := caller.Bearer(h.Store, r, time.Now())
		return u, err == nil
	}
	c, err := r.Cookie(h.cookie())
	if err != nil {
		return store.User{}, false
	}
	h.mu.Lock()
	g, ok := h.sessions[c.Value]
	h.mu.Unlock()
	if !ok || time.Now().After(g.expires) || g.host != hostOf(r.Host) {
		return store.User{}, false
	}
	u, err := h.Store.GetUser(g.user)
	return u, err == nil
}

// ServeHTTP serves a request to a preview host.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	port, box, ok := h.Match(r.Host)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.URL.Path == AuthPath {
		h.redeem(w, r)
		return
	}
	u, ok := h.caller(r)
	if !ok {
		if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
			here := url.URL{Scheme: h.Scheme, Host: r.Host, Path: r.URL.Path, RawQuery: r.URL.RawQuery}
			main := url.URL{Scheme: h.Scheme, Host: h.main(), Path: "/preview", RawQuery: url.Values{"to": {here.String()}}.Encode()}
			http.Redirect(w, r, main.String(), http.StatusSeeOther)
			return
		}
		http.Error(w, "log in to see this preview", http.StatusUnauthorized)
		return
	}
	b, ok := h.visible(u, box)
	if !ok {
		http.Error(w, "no box named "+strconv.Quote(box), http.StatusNotFound)
		return
	}
	if h.Use != nil {
		done, woke, err := h.Use(r.Context(), box)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer done()
		if woke {
			b, _ = h.Store.GetBox(box)
		}
	}
	if b.IP == "" || b.Observed != "running" {
		http.Error(w, "box "+strconv.Quote(box)+" is not running", http.StatusServiceUnavailable)
		return
	}
	target := &url.URL{Scheme: "http", Host: net.JoinHostPort(b.IP, strconv.Itoa(port))}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
			pr.Out.Header.Del("Authorization")
			stripCookie(pr.Out, h.cookie())
		},
		ModifyResponse: func(resp *http.Response) error {
			dropDomainCookies(resp.Header)
			return nil
		},
		FlushInterval: -1,
		Transport:     h.transport(b, port),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "nothing answers on port "+strconv.Itoa(port)+" in box "+strconv.Quote(box), http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(w, r)
}

// transport is how the proxy reaches the box: at its address (nil: the
// default transport), or through Dial for a box on another server, one
// exec per connection.
func (h *Handler) transport(b store.Box, port int) http.RoundTripper {
	if b.Node == "" || h.Dial == nil {
		return nil
	}
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return h.Dial(ctx, b.Name, port)
		},
		DisableKeepAlives: true,
	}
}

func (h *Handler) main() string {
	if h.Main != "" {
		return h.Main
	}
	return h.Hostname + h.portSuffix()
}

// URL is the preview URL of a port of a box.
func (h *Handler) URL(box string, port int) string {
	return h.Scheme + "://" + strconv.Itoa(port) + "-" + box + "." + h.Hostname + h.portSuffix() + "/"
}

// StartPath is the path on the server's own pages that opens the preview
// of a port of a box in a browser signed in there (the ticket exchange).
func (h *Handler) StartPath(box string, port int) string {
	return "/preview?" + url.Values{"to": {h.URL(box, port)}}.Encode()
}

func (h *Handler) portSuffix() string {
	if h.Port == "" {
		return ""
	}
	return ":" + h.Port
}

// dropDomainCookies removes the Set-Cookie headers of a box's response that
// name a Domain: a preview host is a subdomain of the server's, so such a
// cookie would reach the dashboard and every other box's previews. Cookies
// for the preview host alone are kept.
func dropDomainCookies(h http.Header) {
	var keep []string
	for _, line := range h.Values("Set-Cookie") {
		c, err := http.ParseSetCookie(line)
		if err != nil || c.Domain != "" {
			continue
		}
		keep = append(keep, line)
	}
	h.Del("Set-Cookie")
	for _, line := range keep {
		h.Add("Set-Cookie", line)
	}
}

// stripCookie removes one cookie from a request's Cookie headers.
func stripCookie(r *http.Request, name string) {
	cs := r.Cookies()
	r.Header.Del("Cookie")
	for _, c := range cs {
		if c.Name != name {
			r.AddCookie(c)
		}
	}
}

func (h *Handler) redeem(w http.ResponseWriter, r *http.Request) {
	t := r.URL.Query().Get("ticket")
	to := r.URL.Query().Get("to")
	if !strings.HasPrefix(to, "/") || strings.HasPrefix(to, "//") || strings.HasPrefix(to, "/\\") {
		to = "/"
	}
	h.mu.Lock()
	g, ok := h.tickets[t]
	delete(h.tickets, t)
	if ok && time.Now().Before(g.expires) && g.host == hostOf(r.Host) {
		s := random()
		for k, old := range h.sessions {
			if time.Now().After(old.expires) {
				delete(h.sessions, k)
			}
		}
		h.sessions[s] = grant{user: g.user, host: g.host, expires: time.Now().Add(SessionTTL)}
		h.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: h.cookie(), Value: s, Path: "/", MaxAge: int(SessionTTL / time.Second),
			HttpOnly: true, Secure: h.Scheme == "https", SameSite: http.SameSiteLaxMode})
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	h.mu.Unlock()
	http.Error(w, "this preview link has expired; open the preview again", http.StatusForbidden)
}
