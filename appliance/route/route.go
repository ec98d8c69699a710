// Package route is paddockd's table of HTTP routes: every package that
// serves pages or API routes registers them here with who may call them,
// so that tests can walk the real table (every route without credentials,
// every route as another user) instead of a list written by hand.
package route

import "net/http"

// Who may call a route.
const (
	// Token routes need an API token or a session cookie; without one
	// they answer 401.
	Token = "token"
	// Session routes are pages for a signed-in browser; without a session
	// they send it to the login page.
	Session = "session"
	// Ticket routes need a single-use ticket that a Token route handed out;
	// without one they answer 401.
	Ticket = "ticket"
	// Public routes answer anyone: logging in, the one-time links (whose
	// secret is in the path), the device login's start and poll, static
	// files.
	Public = "public"
)

// Route is one registered pattern.
type Route struct {
	Pattern string // as http.ServeMux takes it: "GET /v1/boxes/{name}"
	Access  string
}

// Table is an http.ServeMux that remembers what was registered on it.
type Table struct {
	*http.ServeMux
	Routes []Route
}

// New makes an empty table.
func New() *Table { return &Table{ServeMux: http.NewServeMux()} }

// Add registers h for pattern, callable by access.
func (t *Table) Add(pattern, access string, h http.Handler) {
	t.ServeMux.Handle(pattern, h)
	t.Routes = append(t.Routes, Route{Pattern: pattern, Access: access})
}

// AddFunc is Add for a function.
func (t *Table) AddFunc(pattern, access string, h func(http.ResponseWriter, *http.Request)) {
	t.Add(pattern, access, http.HandlerFunc(h))
}
