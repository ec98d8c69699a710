package dashboard

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/images"
	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/appliance/version"
)

//go:embed app.html ui
var appFiles embed.FS

var appPages = template.Must(template.New("app").Funcs(template.FuncMap{
	"title": func(s string) string { return strings.ToUpper(s[:1]) + s[1:] },
}).ParseFS(appFiles, "app.html"))

// BoxTabs are the tabs of a box's page, in order.
var BoxTabs = []string{"overview", "terminal", "desktop", "jobs", "prompt", "files", "snapshots", "network"}

// appView is what an app page's template gets.
type appView struct {
	Title, User, Role, CSRF, Page, Box, Script, Message string
	Styles                                              []string
	Tabs                                                []string
	Types, Images, Policies, Drives                     []string
	DesktopDefault                                      bool
	// NoBuild says why this server cannot build images (the Images page
	// says so in place of its form); "" when it can.
	NoBuild string
	Facts   []fact
	API     apiRef
	// Nodes are the servers boxes are placed on (the owner's Server page).
	Nodes []nodeRow
}

// nodeRow is a server as the Server page lists it.
type nodeRow struct {
	Name, State, Swarm, Addr, Memory, Labels, Pool string
	Boxes                                          int
}

type fact struct{ Name, Value string }

// appCSP is the pages' policy: scripts, styles, frames and connections
// from this server only; no inline script. Inline styles are allowed
// because xterm.js sizes its rows with them.
const appCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' blob: data:; " +
	"connect-src 'self'; frame-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func (p *Pages) appRoutes(t *route.Table) {
	t.Add("GET /signin/{token}", route.Public, p.guard(p.signInPage))
	t.Add("POST /signin/{token}", route.Public, p.guard(p.signIn))
	t.Add("GET /boxes/{box}", route.Session, p.guard(p.app("box")))
	t.Add("GET /drives", route.Session, p.guard(p.app("drives")))
	t.Add("GET /images", route.Session, p.guard(p.app("images")))
	t.Add("GET /policies", route.Session, p.guard(p.app("policies")))
	t.Add("GET /projects", route.Session, p.guard(p.app("projects")))
	t.Add("GET /access", route.Session, p.guard(p.app("access")))
	t.Add("GET /audit", route.Session, p.guard(p.app("audit")))
	t.Add("GET /server", route.Session, p.guard(p.app("server")))
	t.Add("GET /api", route.Session, p.guard(p.app("api")))
	sub, _ := fs.Sub(appFiles, "ui")
	static := http.StripPrefix("/ui/", http.FileServer(http.FS(sub)))
	t.Add("GET /ui/", route.Public, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-cache")
		static.ServeHTTP(w, r)
	}))
	// Browsers ask for /favicon.ico whatever the pages say: the same icon.
	t.Add("GET /favicon.ico", route.Public, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := fs.ReadFile(sub, "icon.svg")
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "max-age=86400")
		w.Write(b)
	}))
}

// signInPage shows what a link from 'paddock dashboard' does before it
// does it: the account it signs in as, and the one this browser would
// leave. A link opened by any navigation (another user's page could make
// one) signs nobody in: only the form it shows does, sent from this
// server's own page (guard's origin check).
func (p *Pages) signInPage(w http.ResponseWriter, r *http.Request) {
	if p.limited(w, r, "") {
		return
	}
	u, err := p.Access.PeekSignIn(r.PathValue("token"))
	if err != nil {
		p.linkGone(w, err)
		return
	}
	v := view{Title: "Sign in", User: u.Name, Token: r.PathValue("token")}
	if _, cur, ok := p.Session(r); ok && cur.ID != u.ID {
		v.Kind = cur.Name // the account this browser is signed in as now
	}
	p.render(w, http.StatusOK, "signin", v)
}

func (p *Pages) linkGone(w http.ResponseWriter, err error) {
	msg := err.Error()
	var ae *api.Error
	if errors.As(err, &ae) {
		msg = ae.Message
	}
	p.render(w, http.StatusGone, "error", view{Title: "Link not valid", Error: msg})
}

// signIn redeems a link from 'paddock dashboard' by its confirmation
// page's form: a session cookie, then the page it was made for.
func (p *Pages) signIn(w http.ResponseWriter, r *http.Request) {
	if p.limited(w, r, "") {
		return
	}
	u, sess, next, err := p.Access.RedeemSignIn(r.PathValue("token"))
	if err != nil {
		audit.From(r.Context()).Result(err.Error())
		p.linkGone(w, err)
		return
	}
	audit.From(r.Context()).Who(u.Name, "sign-in link")
	p.Log.Info("dashboard sign-in", "user", u.Name, "addr", caller.Addr(r))
	p.setSession(w, sess)
	http.Redirect(w, r, safeNext(next), http.StatusSeeOther)
}

// app serves one of the app's pages to a signed-in browser.
func (p *Pages) app(route string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		page := route // this request's page: "notfound" may replace it
		t, u, ok := p.Session(r)
		if !ok {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		ctx := caller.With(r.Context(), u)
		v := appView{Title: titles[page], User: u.Name, Role: u.Role, CSRF: t.CSRF, Page: page, Script: page + ".js"}
		status := http.StatusOK
		switch page {
		case "boxes", "box":
			for name := range p.Svc.Cfg.Types {
				v.Types = append(v.Types, name)
			}
			sort.Strings(v.Types)
			v.Images = p.Svc.ServerImages()
			v.DesktopDefault = p.Svc.Cfg.DesktopDefault
			if p.Policies != nil {
				if pols, err := p.Policies(ctx); err == nil {
					for _, pol := range pols {
						v.Policies = append(v.Policies, pol.Name)
					}
				}
			}
			if ds, err := p.Svc.ListDrives(ctx); err == nil {
				for _, d := range ds {
					v.Drives = append(v.Drives, d.Name)
				}
			}
		case "images":
			v.NoBuild = images.CannotBuild(p.Svc.Driver, &p.Svc.Cfg)
		case "api":
			ref, err := p.apiRef()
			if err != nil {
				p.render(w, http.StatusInternalServerError, "error", view{Title: "Error", Error: err.Error()})
				return
			}
			v.API, v.Script = ref, "server.js"
		case "server":
			if u.Role != store.RoleOwner {
				page, status = "notfound", http.StatusNotFound
				v.Message = "This page is for the server's owner."
				break
			}
			v.Facts = p.serverFacts(ctx)
			v.Nodes = p.nodeRows(ctx)
		}
		if page == "box" {
			name := r.PathValue("box")
			b, err := p.Store.GetBox(name)
			a := ""
			if err == nil {
				a, err = caller.AccessFor(p.Store, u, b)
			}
			if err != nil || a == caller.AccessNone {
				// Another user's box is as absent as a box that never was.
				page, status = "notfound", http.StatusNotFound
				v.Message = fmt.Sprintf("No box named %q.", name)
			} else {
				v.Box, v.Title, v.Tabs = name, name, BoxTabs
				v.Styles = []string{"/ui/vendor/xterm/xterm.css"}
			}
		}
		if page == "notfound" {
			v.Title, v.Script = "Not found", "server.js"
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", appCSP)
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "same-origin")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		if err := appPages.ExecuteTemplate(w, "page-"+page, v); err != nil {
			p.Log.Error("rendering a page", "page", page, "err", err)
		}
	}
}

var titles = map[string]string{"api": "API reference", "boxes": "Boxes", "drives": "Drives", "images": "Images", "policies": "Policies", "projects": "Projects", "access": "Access", "audit": "Audit log", "server": "Server"}

// nodeRows are the servers, as 'paddock nodes' lists them.
func (p *Pages) nodeRows(ctx context.Context) []nodeRow {
	if p.Servers == nil {
		return []nodeRow{{Name: "?", State: "not known: this server does not list its servers"}}
	}
	ns, err := p.Servers(ctx)
	if err != nil {
		return []nodeRow{{Name: "?", State: "not known: " + err.Error()}}
	}
	out := make([]nodeRow, 0, len(ns))
	for _, n := range ns {
		r := nodeRow{Name: n.Name, State: n.StateText(), Swarm: n.SwarmState, Addr: n.Addr, Boxes: n.Boxes, Pool: fmt.Sprint(n.Pool), Labels: api.LabelsText(n.Labels)}
		if own := api.PoolText(n.OwnPool); own != "" {
			r.Pool += " (its own: " + own + ")"
		}
		if n.ControlPlane {
			r.Addr = "control plane"
		}
		if n.MemoryBytes > 0 {
			r.Memory = fmt.Sprintf("%.1f of %.1f GiB", float64(n.MemoryFree)/(1<<30), float64(n.MemoryBytes)/(1<<30))
		}
		out = append(out, r)
	}
	return out
}

// serverFacts is the owner's server page.
func (p *Pages) serverFacts(ctx context.Context) []fact {
	fs := []fact{{"Version", version.Version}, {"Runtime", p.Svc.Cfg.Runtime}, {"Default image", p.Svc.Cfg.Image},
		{"State directory", p.Svc.Cfg.StateDir}, {"paddockd", runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}}
	if bs, err := p.Svc.ListBoxes(ctx); err == nil {
		running := 0
		for _, b := range bs {
			if b.Status == "running" {
				running++
			}
		}
		fs = append(fs, fact{"Boxes", fmt.Sprintf("%d (%d running)", len(bs), running)})
	}
	if ds, err := p.Svc.ListDrives(ctx); err == nil {
		fs = append(fs, fact{"Drives", fmt.Sprint(len(ds))})
	}
	if st, err := p.Svc.PoolStatus(); err == nil {
		if st == "" {
			st = "off (warm_pool)"
		}
		fs = append(fs, fact{"Warm pool", st})
	}
	if h := p.Svc.Rec.Health(); !h.LastRun.IsZero() {
		v := fmt.Sprintf("last run %s ago, took %s, %d change(s), %d failed; %d runs since start",
			time.Since(h.LastRun).Round(time.Second), h.Took.Round(time.Millisecond), h.Changes, h.Failed, h.Runs)
		if h.Err != "" {
			v += "; error: " + h.Err
		}
		fs = append(fs, fact{"Reconcile loop", v})
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(p.Svc.Cfg.StateDir, &st); err == nil {
		total, free := st.Blocks*uint64(st.Bsize), st.Bavail*uint64(st.Bsize)
		fs = append(fs, fact{"Disk (state directory)", fmt.Sprintf("%s free of %s", gib(free), gib(total))})
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var total, avail uint64
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "MemTotal:" {
				total, _ = strconv.ParseUint(f[1], 10, 64)
			}
			if len(f) >= 2 && f[0] == "MemAvailable:" {
				avail, _ = strconv.ParseUint(f[1], 10, 64)
			}
		}
		if total > 0 {
			fs = append(fs, fact{"Memory", fmt.Sprintf("%s available of %s", gib(avail<<10), gib(total<<10))})
		}
	}
	return fs
}

func gib(n uint64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }
