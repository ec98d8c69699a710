// Package desktop is a box's desktop, whole: a browser's view of it, its
// screenshots and the gallery the server keeps of them, with their API
// routes.
//
// The view is a page with the noVNC client (bundled, MPL-2.0) and a
// websocket that paddockd bridges to the VNC server inside the box. The
// VNC server listens on the box's loopback only; the bridge is a command
// run in the box (nc to 127.0.0.1 port 5901), so no VNC port is ever
// reachable on a network.
//
// A browser cannot send the API token, so the page and its websocket are
// opened with a ticket: a caller with a token asks for one (POST
// /v1/boxes/NAME/desktop); it names one box, is good for two minutes and
// for one websocket. A viewer of a shared box gets a view-only ticket: the
// bridge parses what their client sends and drops its input (rfb.go).
//
// A screenshot is ImageMagick's import run in the box (a few at a time,
// server-wide); the gallery keeps a box's newest KeptScreenshots under
// the state directory, by the box's id, and goes with the box
// (shots.go). Computer use (package computer) has its own, scaled,
// screenshots in its answers.
package desktop

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/store"
)

//go:embed novnc page.html app.js
var files embed.FS

var page = template.Must(template.ParseFS(files, "page.html"))

// TicketTTL is how long a ticket may wait for its websocket.
const TicketTTL = 2 * time.Minute

// Core is what the desktop needs of paddockd's core (package service's
// Service has it): the caller's access to a box, the box in use while it
// is looked at (a sleeping one wakes), the box as it runs with its
// desktop, a command in it, and a say in what goes with a removed box.
type Core interface {
	AccessOf(ctx context.Context, box string) (string, error)
	Use(ctx context.Context, box string) (done func(), woke bool, err error)
	DesktopBox(name string) (store.Box, error)
	LookBox(name string) (b store.Box, ok bool, err error)
	RunningBox(name string) (store.Box, error)
	CheckExecIn(b store.Box, p api.ExecPost) (driver.ExecSpec, error)
	RunIn(ctx context.Context, b store.Box, spec driver.ExecSpec) (int, error)
	KeepsOfBox(what string, forget func(t store.Tombstone, jobs []string))
}

// Desktop serves box desktops: the API's routes, the page, noVNC and
// the websocket bridge.
type Desktop struct {
	Core Core
	Log  *slog.Logger
	// Dir holds the galleries, one folder per box.
	Dir string

	mu      sync.Mutex
	tickets map[string]ticket
	slots   chan struct{} // screenshots under way
}

// New is the desktop over core, keeping its galleries in dir. It tells
// core that a removed box's gallery goes with it.
func New(core Core, log *slog.Logger, dir string) *Desktop {
	d := &Desktop{Core: core, Log: log, Dir: dir, slots: make(chan struct{}, MaxScreenshots)}
	core.KeepsOfBox("screenshots", d.forget)
	return d
}

type ticket struct {
	box      string
	user     string // whom it was given to (for the audit log)
	expires  time.Time
	viewOnly bool // a viewer's: their input is dropped (viewOnly)
}

// Ticket makes a single-use ticket for a box's desktop: a view-only one
// for a viewer of the box.
func (d *Desktop) Ticket(ctx context.Context, box string) (api.DesktopTicket, error) {
	access, err := d.Core.AccessOf(ctx, box)
	if err != nil {
		return api.DesktopTicket{}, err
	}
	viewOnly := caller.AccessRank(access) < caller.AccessRank(caller.AccessMember)
	// Opening a desktop is a use: a sleeping box wakes.
	used, _, err := d.Core.Use(ctx, box)
	if err != nil {
		return api.DesktopTicket{}, err
	}
	used()
	if _, err := d.Core.DesktopBox(box); err != nil {
		return api.DesktopTicket{}, err
	}
	b := make([]byte, 24)
	rand.Read(b)
	t := hex.EncodeToString(b)
	exp := time.Now().Add(TicketTTL)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tickets == nil {
		d.tickets = map[string]ticket{}
	}
	for k, v := range d.tickets {
		if time.Now().After(v.expires) {
			delete(d.tickets, k)
		}
	}
	u, _ := caller.From(ctx)
	d.tickets[t] = ticket{box: box, user: u.Name, expires: exp, viewOnly: viewOnly}
	path := "/desktop/" + box + "/#ticket=" + t
	if viewOnly {
		path += "&view=1"
	}
	return api.DesktopTicket{Ticket: t, Path: path, Expires: exp, ViewOnly: viewOnly}, nil
}

// take consumes a ticket for a box: the ticket, and whether it was good.
func (d *Desktop) take(t, box string) (ticket, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.tickets[t]
	delete(d.tickets, t)
	return v, ok && v.box == box && time.Now().Before(v.expires)
}

// Pages adds the page, the noVNC files and the websocket to the table.
// They are outside /v1: the ticket, not a token, opens them.
//
// The desktop page itself is a shell that any browser gets (it holds the
// box name from its address and nothing else); its websocket needs the
// ticket that the API's desktop route gives the box's owner.
func (d *Desktop) Pages(t *route.Table) {
	sub, _ := fs.Sub(files, "novnc")
	t.Add("GET /novnc/", route.Public, http.StripPrefix("/novnc/", http.FileServer(http.FS(sub))))
	t.AddFunc("GET /desktop-app.js", route.Public, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		b, _ := files.ReadFile("app.js")
		w.Write(b)
	})
	t.AddFunc("GET /desktop/{box}/{$}", route.Public, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// noVNC decodes JPEG rectangles through blob: and data: images.
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; connect-src 'self'")
		w.Header().Set("Referrer-Policy", "no-referrer")
		page.Execute(w, struct{ Box string }{r.PathValue("box")})
	})
	t.AddFunc("GET /desktop/{box}/ws", route.Ticket, d.serveWS)
}

func (d *Desktop) serveWS(w http.ResponseWriter, r *http.Request) {
	box := r.PathValue("box")
	tk, ok := d.take(r.URL.Query().Get("ticket"), box)
	rec := audit.From(r.Context())
	rec.Who(tk.user, "desktop ticket")
	if !ok {
		rec.Skip() // no one known (see server's authed)
		http.Error(w, "no valid ticket for this desktop: run 'paddock desktop "+box+"'", http.StatusUnauthorized)
		return
	}
	// A viewer is a use of the box while it is connected.
	used, _, err := d.Core.Use(r.Context(), box)
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	defer used()
	b, err := d.Core.RunningBox(box)
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	spec, err := d.Core.CheckExecIn(b, api.ExecPost{Cmd: []string{"nc", "127.0.0.1", driver.VNCPort}})
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"binary"}})
	if err != nil {
		return // Accept has answered
	}
	defer c.CloseNow()
	rec.Open()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	conn := websocket.NetConn(ctx, c, websocket.MessageBinary)
	var in io.Reader = conn
	if tk.viewOnly {
		rec.Note("view_only", true)
		in = newViewOnly(conn)
	}
	spec.Stdin, spec.Stdout = in, conn
	_, err = d.Core.RunIn(ctx, b, spec)
	if err != nil && ctx.Err() == nil {
		d.Log.Warn("desktop bridge", "box", box, "err", err)
	}
	c.Close(websocket.StatusNormalClosure, "")
}
