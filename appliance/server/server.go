// Package server is paddockd's HTTP API: JSON over a unix socket and, in
// local mode, loopback TCP. Handlers return errors; one function (writeError)
// turns them into a status code and the JSON body {error, message, field}.
// Every route needs a bearer token, checked against the hashes in the store,
// or a browser session cookie (then a request that changes anything must
// carry the session's CSRF value and come from this server's origin).
// Exceptions: the device login's start and poll (the CLI has no token
// yet) and the pages of package dashboard, which check their own.
//
// A route about one box answers "not found" when the box belongs to a
// user the caller may not see (see package service, users.go).
//
// Attached exec is an HTTP upgrade (Upgrade: paddock-exec/1) carrying the
// frames of package stream; files move as tar bodies; job logs stream as
// chunked text.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/access"
	"github.com/paddock-dev/paddock/appliance/agents"
	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/boxes"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/computer"
	"github.com/paddock-dev/paddock/appliance/dashboard"
	"github.com/paddock-dev/paddock/appliance/desktop"
	"github.com/paddock-dev/paddock/appliance/drives"
	"github.com/paddock-dev/paddock/appliance/e2b"
	"github.com/paddock-dev/paddock/appliance/events"
	"github.com/paddock-dev/paddock/appliance/files"
	"github.com/paddock-dev/paddock/appliance/grants"
	"github.com/paddock-dev/paddock/appliance/images"
	"github.com/paddock-dev/paddock/appliance/jobs"
	"github.com/paddock-dev/paddock/appliance/kernel"
	"github.com/paddock-dev/paddock/appliance/metrics"
	"github.com/paddock-dev/paddock/appliance/nodes"
	"github.com/paddock-dev/paddock/appliance/policy"
	"github.com/paddock-dev/paddock/appliance/preview"
	"github.com/paddock-dev/paddock/appliance/project"
	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/secrets"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/appliance/version"
	"github.com/paddock-dev/paddock/appliance/watch"
	"github.com/paddock-dev/paddock/install/clients"
)

// Server serves the API.
type Server struct {
	Svc   *service.Service
	Store *store.Store
	Log   *slog.Logger
	// Name is reported by whoami (the host name, or "local").
	Name string
	// SSHPort and SSHHostKey (authorized_keys form) are reported by
	// whoami.
	SSHPort    int
	SSHHostKey string
	// Pages are the browser pages (setup, login, device approval).
	Pages *dashboard.Pages
	// URL is the server's public base URL for links it hands out.
	URL string
	// Preview serves preview hosts (nil: none).
	Preview *preview.Handler
	// CLI serves the client binaries and their installers (nil: none).
	CLI *clients.Handler
	// Capabilities register their own API routes (nil: Capabilities(Svc)).
	Capabilities []route.Capability
	// access is the capability of users and their ways in, found among
	// Capabilities: the sign-in routes served here ask it.
	access *access.Access

	// Heavy bounds, per user, the routes that make or copy much (nil:
	// HeavyBurst, then one per HeavyEvery).
	Heavy *auth.Limiter

	deviceLimit auth.Limiter
	table       *route.Table
	errorShapes map[string]route.ErrorWriter // by pattern: routes whose errors have their own shape
	doc         openapiState
}

// Routes is the table of every route Handler serves (API, pages,
// previews, desktops), with who may call each.
func (s *Server) Routes() []route.Route {
	if s.table == nil {
		s.Handler()
	}
	return s.table.Routes
}

type handler = route.Handler

// apiFunc is the server's registration of an API route, as capabilities
// see it (route.API).
type apiFunc func(pattern string, h handler)

func (f apiFunc) Handle(pattern string, h route.Handler) { f(pattern, h) }

// Capabilities are the parts of paddockd that register their own API
// routes, over the core svc (each a folder of its own).
func Capabilities(svc *service.Service) []route.Capability {
	// The sampler is one for the routes, the core (the events stream and
	// the disk check) and paddockd's loop (Sampler.Sample).
	m, ok := svc.Metrics.(*metrics.Sampler)
	if !ok {
		m = metrics.New(svc, svc.Store, svc.Driver, &svc.Cfg, svc.Log)
		svc.Metrics = m
	}
	// The jobs start the agents' prompts.
	j := jobs.New(svc, svc.Store, svc.Driver, &svc.Cfg, svc.Log, svc.Life)
	// The servers' verbs move boxes, which a fork onto another server
	// asks of them.
	n, ok := svc.Moves.(*nodes.Nodes)
	if !ok {
		n = nodes.New(svc, svc.Store, svc.Rec, svc.Cluster, svc.Net.Subnet, &svc.Cfg, svc.Log)
		svc.Moves = n
	}
	// E2B's API speaks through the jobs, the files, file watch and the
	// interpreter.
	f, w := files.New(svc, svc.Driver, &svc.Cfg, svc.Log), watch.New(svc)
	k := kernel.New(svc)
	e2bAPI := e2b.New(svc, svc.Driver, e2bJobs{j}, f, w, k, m, svc.Log)
	e2bAPI.Domain = svc.Cfg.Hostname
	return []route.Capability{access.New(svc, svc.Store, &svc.Cfg, svc.Log), k, computer.New(svc), w,
		desktop.New(svc, svc.Log, filepath.Join(svc.Cfg.StateDir, "screenshots")), m,
		n, images.New(svc, svc.Store, svc.Driver, &svc.Cfg, svc.Log), f, j,
		secrets.New(svc, svc.Store, svc.Log), agents.New(svc, svc.Store, j, &svc.Cfg),
		project.New(svc, svc.Store, svc.Rec, svc.Driver, &svc.Cfg), policy.New(svc, svc.Store, svc.Rec, svc.Firewall),
		drives.New(svc, svc.Store, svc.Driver, &svc.Cfg, svc.Log), events.New(svc, svc.Store, m), grants.New(svc, svc.Store), boxes.New(svc),
		e2bAPI}
}

// e2bJobs is the jobs as E2B's processes take them (their taps as
// e2b.Tap).
type e2bJobs struct{ *jobs.Jobs }

func (j e2bJobs) StartTapped(name string, p api.ExecPost, user string, tty bool) (api.Job, e2b.Tap, error) {
	job, tap, err := j.StartWithOptions(name, p, jobs.StartOptions{User: user, Tap: true, TTY: tty})
	if err != nil {
		return job, nil, err
	}
	return job, tap, nil
}

func (j e2bJobs) Tap(name, id string) (e2b.Tap, error) {
	tap, err := j.Jobs.Tap(name, id)
	if err != nil {
		return nil, err
	}
	return tap, nil
}

// Handler returns the API's routes behind token authentication.
func (s *Server) Handler() http.Handler {
	mux := route.New()
	s.table = mux
	s.errorShapes = map[string]route.ErrorWriter{}
	if s.Heavy == nil {
		s.Heavy = &auth.Limiter{Every: HeavyEvery, Burst: HeavyBurst}
	}
	add := func(pattern string, h handler) {
		if strings.Contains(pattern, "/boxes/{name}") {
			h = s.boxRoute(pattern, h)
		}
		if heavy[pattern] {
			h = s.limited(h)
			h = s.foreground(h)
		}
		h = s.viewerGate(pattern, h)
		mux.Add(pattern, route.Token, s.authed(h))
	}
	p := "/" + api.Version
	add("GET "+p+"/whoami", s.whoami)
	add("POST "+p+"/boxes/{name}/exec", s.exec)
	add("POST "+p+"/reconcile", s.reconcile)
	add("POST "+p+"/logout", s.logout)
	add("POST "+p+"/signin-links", s.signInLink)
	add("GET "+p+"/openapi.json", s.openapiDoc)
	add("GET "+p+"/boxes/{name}/terminal", s.terminal)
	s.deviceLimit = auth.Limiter{Every: 6 * time.Second, Burst: 10}
	mux.Add("POST "+p+"/login/device", route.Public, s.open(s.deviceStart))
	mux.Add("POST "+p+"/login/device/token", route.Public, s.open(s.deviceToken))
	if s.Capabilities == nil {
		s.Capabilities = Capabilities(s.Svc)
	}
	for _, c := range s.Capabilities {
		if bx, ok := c.(*boxes.Boxes); ok && s.Preview != nil && bx.PreviewURL == nil {
			bx.PreviewURL = s.Preview.URL
		}
		if a, ok := c.(*access.Access); ok {
			s.access = a
			if a.URL == "" {
				a.URL = s.URL
			}
		}
	}
	if s.Pages != nil {
		s.Pages.APIDoc = s.OpenAPI
		for _, c := range s.Capabilities {
			if n, ok := c.(*nodes.Nodes); ok && s.Pages.Servers == nil {
				s.Pages.Servers = n.List
			}
			if ps, ok := c.(*policy.Policies); ok && s.Pages.Policies == nil {
				s.Pages.Policies = ps.List
			}
			if a, ok := c.(*access.Access); ok && s.Pages.Access == nil {
				s.Pages.Access = a
			}
		}
		s.Pages.Routes(mux)
	}
	if s.Preview != nil {
		s.Preview.Routes(mux)
	}
	if s.CLI != nil {
		s.CLI.Routes(mux)
	}
	for _, c := range s.Capabilities {
		reg := apiFunc(add)
		if ew, ok := c.(route.ErrorWriter); ok {
			reg = func(pattern string, h handler) {
				s.errorShapes[pattern] = ew
				add(pattern, h)
			}
		}
		c.Routes(reg)
		if pg, ok := c.(route.Pages); ok {
			pg.Pages(mux)
		}
	}
	mux.Add("/", route.Token, s.authed(func(w http.ResponseWriter, r *http.Request) error {
		return &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)}
	}))
	h := s.recorded(mux, mux)
	if s.Preview == nil {
		return h
	}
	apiHost := e2b.APIHost(s.Preview.Hostname)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if port, box, ok := s.Preview.Match(r.Host); ok {
			if e2b.ServedPort(port) {
				// E2B's envd and interpreter at a sandbox's own name.
				h.ServeHTTP(w, e2b.AtSandboxHost(r, port, box))
				return
			}
			s.Preview.ServeHTTP(w, r)
			return
		}
		host := r.Host
		if hp, _, err := net.SplitHostPort(r.Host); err == nil {
			host = hp
		}
		if strings.EqualFold(host, apiHost) {
			// E2B's control API at its own name (E2B_DOMAIN alone).
			h.ServeHTTP(w, e2b.AtAPIHost(r))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Expensive routes are rate limited per user (all of a user's tokens and
// sessions share one budget; a token of no user has its own): a burst of
// HeavyBurst, then one per HeavyEvery. They make boxes, snapshots or
// screenshots, or move whole archives.
const (
	HeavyBurst = 120
	HeavyEvery = 250 * time.Millisecond
)

var heavy = map[string]bool{
	"POST /v1/boxes": true, "POST /v1/boxes/{name}/fork": true, "POST /v1/nodes/{name}/drain": true, "POST /v1/nodes/{name}/lost": true, "POST /v1/boxes/{name}/snapshots": true,
	"POST /v1/boxes/{name}/restore": true, "POST /v1/boxes/{name}/move": true, "POST /v1/drives/{name}/move": true, "GET /v1/boxes/{name}/screenshot": true, "POST /v1/boxes/{name}/screenshots": true, "POST /v1/boxes/{name}/desktop/actions": true,
	"PUT /v1/boxes/{name}/files": true, "GET /v1/boxes/{name}/files": true, "PUT /v1/drives/{name}/archive": true,
	"GET /v1/drives/{name}/archive": true, "POST /v1/boxes/{name}/prompt": true, "POST /v1/boxes/{name}/jobs": true,
	"POST /v1/apply": true,
}

func init() {
	for _, p := range e2b.Heavy {
		heavy[p] = true
	}
	for p := range e2b.Reads {
		ViewerRoleRoutes[p] = true
	}
}

// foreground marks a request people wait on while it runs: background
// work waits for a lull in them (service.Foreground).
func (s *Server) foreground(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		defer s.Svc.Fore.Begin()()
		return h(w, r)
	}
}

// limited answers 429, with Retry-After, to a token past its budget of
// heavy requests.
func (s *Server) limited(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		t, _ := r.Context().Value(tokenKey{}).(store.Token)
		key := "token:" + t.Hash
		if t.UserID != 0 {
			key = fmt.Sprint("user:", t.UserID)
		}
		if ok, wait := s.Heavy.Allow(key); !ok {
			secs := int(wait/time.Second) + 1
			w.Header().Set("Retry-After", fmt.Sprint(secs))
			return &api.Error{Code: api.CodeTooMany, Message: fmt.Sprintf("too many heavy requests from this user: try again in %d s", secs)}
		}
		return h(w, r)
	}
}

type tokenKey struct{}

// caller finds who a request acts as: a bearer token, or a session cookie
// with (for anything but a read) its CSRF value and this server's origin.
func (s *Server) caller(r *http.Request) (store.Token, store.User, error) {
	if r.Header.Get("Authorization") != "" || caller.KeyHeader(r) != "" || s.Pages == nil {
		return caller.Bearer(s.Store, r, time.Now())
	}
	t, u, ok := s.Pages.Session(r)
	if !ok {
		return t, u, auth.ErrNoToken
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if !dashboard.CSRFOK(t, r.Header.Get(dashboard.CSRFHeader)) || !dashboard.SameOrigin(r) || !s.Pages.HostOK(r) {
			return t, u, errors.New("a request with the session cookie needs this server's origin and the session's " + dashboard.CSRFHeader + " header")
		}
	}
	return t, u, nil
}

func (s *Server) authed(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, u, err := s.caller(r)
		if err != nil {
			// Refused before anyone is known: not in the audit log, which
			// a flood of such requests would fill (the routes that sign
			// people in are recorded, and rate limited).
			audit.From(r.Context()).Skip()
			s.writeError(w, r, &api.Error{Code: api.CodeUnauthorized, Message: err.Error()})
			return
		}
		audit.From(r.Context()).Who(u.Name, via(t))
		ctx := caller.With(r.Context(), u)
		ctx = context.WithValue(ctx, tokenKey{}, t)
		if err := h(w, r.WithContext(ctx)); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// open serves a route that needs no token.
func (s *Server) open(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// ViewerRoutes are the box routes that a box's viewer may call: they
// read the box (its state, snapshots, jobs and their logs, files,
// screenshots, metrics, ports, policy report, agents).
var ViewerRoutes = map[string]bool{
	"GET /v1/boxes/{name}": true, "GET /v1/boxes/{name}/snapshots": true, "GET /v1/boxes/{name}/jobs": true,
	"GET /v1/boxes/{name}/jobs/{id}": true, "GET /v1/boxes/{name}/jobs/{id}/log": true, "GET /v1/boxes/{name}/files": true,
	"GET /v1/boxes/{name}/download": true, "GET /v1/boxes/{name}/dir": true, "GET /v1/boxes/{name}/screenshot": true,
	"GET /v1/boxes/{name}/screenshots": true, "GET /v1/boxes/{name}/screenshots/{id}": true, "GET /v1/boxes/{name}/metrics": true,
	"GET /v1/boxes/{name}/ports": true, "GET /v1/boxes/{name}/policy": true, "GET /v1/boxes/{name}/agents": true,
	// A viewer's desktop ticket is view-only (package desktop).
	"POST /v1/boxes/{name}/desktop": true,
}

// OwnerRoutes are the box routes that only those with all access to the
// box (its owner, the server's owners and admins) may call: what removes,
// moves, copies or shares it, or moves its fence. A member of it may
// call the others.
var OwnerRoutes = map[string]bool{
	"DELETE /v1/boxes/{name}": true, "POST /v1/boxes/{name}/move": true, "POST /v1/boxes/{name}/fork": true,
	"PUT /v1/boxes/{name}/policy": true, "GET /v1/boxes/{name}/grants": true, "PUT /v1/boxes/{name}/grants/{user}": true,
	"DELETE /v1/boxes/{name}/grants/{user}": true,
}

// boxRoute answers "not found" for a box the caller may not see, and
// refuses, saying why, what the box's access for them does not allow
// (ViewerRoutes, OwnerRoutes; a member of the box may call the rest).
func (s *Server) boxRoute(pattern string, h handler) handler {
	need := caller.AccessMember
	switch {
	case ViewerRoutes[pattern]:
		need = caller.AccessViewer
	case OwnerRoutes[pattern]:
		need = caller.AccessAll
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		name := r.PathValue("name")
		rb, err := s.readBox(r, name)
		if err != nil {
			return err
		}
		a := caller.AccessNone
		if rb.ok {
			if a, err = s.Svc.BoxAccessOf(r.Context(), rb.box); err != nil {
				return err
			}
		}
		if a == caller.AccessNone {
			return &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no box named %q", name)}
		}
		if caller.AccessRank(a) < caller.AccessRank(need) {
			msg := fmt.Sprintf("box %s is shared with you as a viewer: a viewer reads it (its state, jobs and logs, files, screenshots, metrics) and changes nothing", name)
			if need == caller.AccessAll {
				msg = fmt.Sprintf("box %s is shared with you as a %s: only its owner may remove, move, fork or share it, or change its policy", name, a)
			}
			return &api.Error{Code: api.CodeForbidden, Message: msg}
		}
		ctx := context.WithValue(caller.WithAccess(r.Context(), a), routeBoxKey{}, rb)
		return h(w, r.WithContext(ctx))
	}
}

// routeBox is a request's box as its route read it (the audit's about,
// or boxRoute when the route is not audited): the route's check and its
// handler use it rather than read it again. Each read is a query: an
// exec read its box six times, 15.6% of paddockd's time under the
// bench's full load. What changes the box reads it again.
type routeBox struct {
	name string
	box  store.Box
	ok   bool // there is such a box
}

type routeBoxKey struct{}

// readBox is box name as the request's route read it, or read now.
func (s *Server) readBox(r *http.Request, name string) (*routeBox, error) {
	if rb, _ := r.Context().Value(routeBoxKey{}).(*routeBox); rb != nil && rb.name == name {
		return rb, nil
	}
	b, ok, err := s.Svc.LookBox(name)
	if err != nil {
		return nil, err
	}
	return &routeBox{name: name, box: b, ok: ok}, nil
}

// seesBox answers "not found" for a box that does not exist or that the
// caller may not see, alike.
func (s *Server) seesBox(r *http.Request, name string) error {
	a, err := s.Svc.AccessOf(r.Context(), name)
	if err == nil && a == caller.AccessNone {
		return &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no box named %q", name)}
	}
	return err
}

// ViewerRoleRoutes are the routes that change something which a user of
// the viewer role may still call: their own tokens and sessions.
var ViewerRoleRoutes = map[string]bool{
	"POST /v1/logout": true, "POST /v1/tokens": true, "DELETE /v1/tokens/{name}": true, "POST /v1/signin-links": true,
	"POST /v1/boxes/{name}/desktop": true, // a view-only ticket
}

// viewerGate refuses a user of the viewer role every route that changes
// something (all but GET), but ViewerRoleRoutes; a box route's GETs are
// then boxRoute's to allow.
func (s *Server) viewerGate(pattern string, h handler) handler {
	if strings.HasPrefix(pattern, "GET ") || ViewerRoleRoutes[pattern] {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		if u, ok := caller.From(r.Context()); ok && u.Role == store.RoleViewer {
			return &api.Error{Code: api.CodeForbidden, Message: fmt.Sprintf("%s is a viewer: a viewer reads the boxes shared with them and changes nothing", u.Name)}
		}
		return h(w, r)
	}
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, body := route.Status(err)
	audit.From(r.Context()).Result(body.Message)
	if code >= 500 {
		s.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if len(s.errorShapes) > 0 {
		if _, pattern := s.table.Handler(r); s.errorShapes[pattern] != nil {
			s.errorShapes[pattern].WriteError(w, r, code, body)
			return
		}
	}
	route.WriteJSON(w, code, body)
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) error {
	t, _ := r.Context().Value(tokenKey{}).(store.Token)
	u, _ := caller.From(r.Context())
	return route.WriteJSON(w, http.StatusOK, api.Whoami{Token: t.Name, User: u.Name, Role: u.Role, Server: s.Name, SSHPort: s.SSHPort, SSHHostKey: s.SSHHostKey, Version: version.Version,
		Images: s.Svc.ServerImages()})
}

// logout revokes the token the request was made with.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	t, _ := r.Context().Value(tokenKey{}).(store.Token)
	if err := s.Store.DeleteTokenHash(t.Hash); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) deviceStart(w http.ResponseWriter, r *http.Request) error {
	if ok, wait := s.deviceLimit.Allow(caller.Addr(r)); !ok {
		w.Header().Set("Retry-After", fmt.Sprint(int(wait/time.Second)+1))
		return &api.Error{Code: api.CodeTooMany, Message: "too many login attempts; wait a little"}
	}
	var p api.DevicePost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	dc, err := s.access.DeviceStart(p.Name, caller.Addr(r))
	if err != nil {
		return err
	}
	base := s.URL
	if base == "" {
		base = "http://" + r.Host
	}
	dc.VerificationURI = base + "/device"
	// The page does not take the code from its address: a person types
	// the code the command line shows, so that a link sent by someone else
	// cannot approve that someone's login.
	dc.VerificationURIComplete = dc.VerificationURI
	return route.WriteJSON(w, http.StatusOK, dc)
}

func (s *Server) deviceToken(w http.ResponseWriter, r *http.Request) error {
	var p api.DeviceTokenPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	tok, err := s.access.DevicePoll(p.DeviceCode)
	var e *api.Error
	if errors.As(err, &e) && (e.Code == api.CodePending || e.Code == api.CodeSlowDown) {
		audit.From(r.Context()).Skip() // polled every few seconds while it waits
	}
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, api.DeviceToken{Token: tok})
}

func (s *Server) reconcile(w http.ResponseWriter, r *http.Request) error {
	res, err := s.Svc.Reconcile(r.Context())
	if err != nil {
		return err
	}
	out := api.ReconcileResult{Changes: []string{}, Errors: map[string]string{}}
	for _, c := range res.Changes {
		out.Changes = append(out.Changes, c.String())
	}
	for a, e := range res.Errors {
		out.Errors[a] = e.Error()
	}
	return route.WriteJSON(w, http.StatusOK, out)
}
