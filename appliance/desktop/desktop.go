// Package desktop lets a browser see and use a box's desktop: a page with
// the noVNC client (bundled, MPL-2.0) and a websocket that paddockd bridges
// to the VNC server inside the box. The VNC server listens on the box's
// loopback only; the bridge is a command run in the box (nc to 127.0.0.1
// port 5901), so no VNC port is ever reachable on a network.
//
// A browser cannot send the API token, so the page and its websocket are
// opened with a ticket: a caller with a token asks for one (POST
// /v1/boxes/NAME/desktop); it names one box, is good for two minutes and
// for one websocket. A viewer of a shared box gets a view-only ticket: the
// bridge parses what their client sends and drops its input (rfb.go).
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
	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/service"
)

//go:embed novnc page.html app.js
var files embed.FS

var page = template.Must(template.ParseFS(files, "page.html"))

// TicketTTL is how long a ticket may wait for its websocket.
const TicketTTL = 2 * time.Minute

// VNCPort is the VNC server's port on the box's loopback.
const VNCPort = service.VNCPort

// Proxy serves the desktop page, noVNC and the websocket bridge.
type Proxy struct {
	Svc *service.Service
	Log *slog.Logger

	mu      sync.Mutex
	tickets map[string]ticket
}

type ticket struct {
	box      string
	user     string // whom it was given to (for the audit log)
	expires  time.Time
	viewOnly bool // a viewer's: their input is dropped (viewOnly)
}

// Ticket makes a single-use ticket for a box's desktop: a view-only one
// for a viewer of the box.
func (p *Proxy) Ticket(ctx context.Context, box string) (api.DesktopTicket, error) {
	access, err := p.Svc.AccessOf(ctx, box)
	if err != nil {
		return api.DesktopTicket{}, err
	}
	viewOnly := caller.AccessRank(access) < caller.AccessRank(caller.AccessMember)
	// Opening a desktop is a use: a sleeping box wakes.
	used, _, err := p.Svc.Use(ctx, box)
	if err != nil {
		return api.DesktopTicket{}, err
	}
	used()
	if err := p.Svc.DesktopBox(box); err != nil {
		return api.DesktopTicket{}, err
	}
	b := make([]byte, 24)
	rand.Read(b)
	t := hex.EncodeToString(b)
	exp := time.Now().Add(TicketTTL)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tickets == nil {
		p.tickets = map[string]ticket{}
	}
	for k, v := range p.tickets {
		if time.Now().After(v.expires) {
			delete(p.tickets, k)
		}
	}
	u, _ := caller.From(ctx)
	p.tickets[t] = ticket{box: box, user: u.Name, expires: exp, viewOnly: viewOnly}
	path := "/desktop/" + box + "/#ticket=" + t
	if viewOnly {
		path += "&view=1"
	}
	return api.DesktopTicket{Ticket: t, Path: path, Expires: exp, ViewOnly: viewOnly}, nil
}

// take consumes a ticket for a box: the ticket, and whether it was good.
func (p *Proxy) take(t, box string) (ticket, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.tickets[t]
	delete(p.tickets, t)
	return v, ok && v.box == box && time.Now().Before(v.expires)
}

// Routes adds the page, the noVNC files and the websocket to mux. They are
// outside /v1: the ticket, not a token, opens them.
//
// The desktop page itself is a shell that any browser gets (it holds the
// box name from its address and nothing else); its websocket needs the
// ticket that the API's desktop route gives the box's owner.
func (p *Proxy) Routes(t *route.Table) {
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
	t.AddFunc("GET /desktop/{box}/ws", route.Ticket, p.serveWS)
}

func (p *Proxy) serveWS(w http.ResponseWriter, r *http.Request) {
	box := r.PathValue("box")
	tk, ok := p.take(r.URL.Query().Get("ticket"), box)
	rec := audit.From(r.Context())
	rec.Who(tk.user, "desktop ticket")
	if !ok {
		rec.Skip() // no one known (see server's authed)
		http.Error(w, "no valid ticket for this desktop: run 'paddock desktop "+box+"'", http.StatusUnauthorized)
		return
	}
	// A viewer is a use of the box while it is connected.
	used, _, err := p.Svc.Use(r.Context(), box)
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	defer used()
	spec, err := p.Svc.CheckExec(box, api.ExecPost{Cmd: []string{"nc", "127.0.0.1", VNCPort}})
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
	_, err = p.Svc.Exec(ctx, box, spec, service.ExecIO{Stdin: in, Stdout: conn})
	if err != nil && ctx.Err() == nil {
		p.Log.Warn("desktop bridge", "box", box, "err", err)
	}
	c.Close(websocket.StatusNormalClosure, "")
}
