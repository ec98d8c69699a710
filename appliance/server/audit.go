package server

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/e2b"
	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/appliance/store"
)

// auditActions names the action each recorded route is in the audit log
// (package audit): every route that changes something, signs someone in
// or out, or reaches into a box, across the whole table (API, pages,
// previews, desktops). A test walks the real table and calls each.
// Reads of the server's own state (lists, one box, reports) are not
// recorded.
var auditActions = map[string]string{
	"POST /v1/logout":                              "logout",
	"POST /v1/login/device":                        "login.device",
	"POST /v1/login/device/token":                  "login.device.token",
	"POST /v1/signin-links":                        "signin.link",
	"POST /v1/users/invites":                       "user.invite",
	"DELETE /v1/users/invites/{id}":                "user.invite.revoke",
	"DELETE /v1/users/{user}":                      "user.remove",
	"PUT /v1/users/{user}/quota":                   "user.quota",
	"POST /v1/tokens":                              "token.create",
	"DELETE /v1/tokens/{name}":                     "token.revoke",
	"POST /v1/keys":                                "key.add",
	"DELETE /v1/keys/{name}":                       "key.remove",
	"PUT /v1/secrets/{name}":                       "secret.set",
	"PUT /v1/secrets/{name}/broker":                "secret.broker",
	"DELETE /v1/secrets/{name}":                    "secret.remove",
	"POST /v1/images":                              "image.build",
	"DELETE /v1/images/{name}":                     "image.remove",
	"PUT /v1/images/{name}/shares":                 "image.share",
	"POST /v1/boxes":                               "box.create",
	"DELETE /v1/boxes/{name}":                      "box.remove",
	"POST /v1/boxes/{name}/stop":                   "box.stop",
	"POST /v1/boxes/{name}/start":                  "box.start",
	"PUT /v1/boxes/{name}/ttl":                     "box.ttl",
	"POST /v1/boxes/{name}/snapshots":              "box.snapshot",
	"POST /v1/boxes/{name}/restore":                "box.restore",
	"POST /v1/boxes/{name}/move":                   "box.move",
	"POST /v1/boxes/{name}/fork":                   "box.fork",
	"PUT /v1/boxes/{name}/policy":                  "box.policy",
	"POST /v1/boxes/{name}/setup":                  "box.setup",
	"POST /v1/boxes/{name}/exec":                   "exec",
	"GET /v1/boxes/{name}/terminal":                "terminal",
	"POST /v1/boxes/{name}/jobs":                   "job.start",
	"POST /v1/boxes/{name}/jobs/{id}/signal":       "job.signal",
	"POST /v1/boxes/{name}/jobs/{id}/input":        "job.input",
	"POST /v1/boxes/{name}/prompt":                 "prompt",
	"PUT /v1/boxes/{name}/files":                   "push",
	"GET /v1/boxes/{name}/files":                   "pull",
	"GET /v1/boxes/{name}/download":                "download",
	"GET /v1/boxes/{name}/dir":                     "dir",
	"GET /v1/boxes/{name}/screenshot":              "screenshot",
	"POST /v1/boxes/{name}/screenshots":            "screenshot.keep",
	"POST /v1/boxes/{name}/desktop":                "desktop.ticket",
	"POST /v1/boxes/{name}/desktop/actions":        "desktop.actions",
	"POST /v1/boxes/{name}/run":                    "code.run",
	"POST /v1/boxes/{name}/contexts":               "context.create",
	"POST /v1/boxes/{name}/contexts/{ctx}/restart": "context.restart",
	"DELETE /v1/boxes/{name}/contexts/{ctx}":       "context.remove",
	"GET /desktop/{box}/ws":                        "desktop",
	"GET /preview":                                 "preview.open",
	"POST /v1/drives":                              "drive.create",
	"DELETE /v1/drives/{name}":                     "drive.remove",
	"POST /v1/drives/{name}/move":                  "drive.move",
	"GET /v1/drives/{name}/archive":                "drive.backup",
	"PUT /v1/drives/{name}/archive":                "drive.restore",
	"POST /v1/policies":                            "policy.create",
	"PUT /v1/policies/{name}":                      "policy.update",
	"DELETE /v1/policies/{name}":                   "policy.remove",
	"POST /v1/reconcile":                           "reconcile",
	"POST /v1/plan":                                "plan",
	"POST /v1/apply":                               "apply",
	"PUT /v1/nodes/{name}/labels":                  "node.label",
	"PUT /v1/nodes/{name}/pool":                    "node.pool",
	"DELETE /v1/nodes/{name}":                      "node.remove",
	"POST /v1/nodes/{name}/drain":                  "node.drain",
	"DELETE /v1/nodes/{name}/drain":                "node.undrain",
	"POST /v1/nodes/{name}/lost":                   "node.lost",
	"POST /v1/nodes/joins":                         "node.join-token",
	"POST /login":                                  "login",
	"PUT /v1/boxes/{name}/grants/{user}":           "box.share",
	"PUT /v1/groups/{group}/members/{user}":        "group.add",
	"DELETE /v1/groups/{group}/members/{user}":     "group.remove",
	"PUT /v1/groups/{group}/quota":                 "group.quota",
	"DELETE /v1/boxes/{name}/grants/{user}":        "box.unshare",
	"GET /sso/{id}/callback":                       "login.sso",
	"POST /logout":                                 "logout",
	"POST /device":                                 "login.device.approve",
	"POST /signin/{token}":                         "signin",
	"POST /setup/{token}":                          "user.setup",
	"POST /invite/{token}":                         "user.join",
}

func init() {
	for p, a := range e2b.Actions {
		auditActions[p] = a
	}
}

// AuditActions is the table above (for tests).
func AuditActions() map[string]string { return auditActions }

// recorded writes the audit entry of each request of a recorded route,
// once it has been answered (or, for a session, at its opening too).
func (s *Server) recorded(mux *route.Table, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := mux.Handler(r)
		action := auditActions[pattern]
		if action == "" || s.Svc.Audit == nil {
			next.ServeHTTP(w, r)
			return
		}
		rec := audit.NewRecord(action, s.Svc.Record)
		rec.Where(caller.Addr(r), r.UserAgent())
		ctx := audit.With(r.Context(), rec)
		if rb := about(rec, pattern, r.URL.Path, s.Svc); rb != nil {
			ctx = context.WithValue(ctx, routeBoxKey{}, rb)
		}
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if sw.code >= 400 {
				rec.Fail(strconv.Itoa(sw.code) + " " + http.StatusText(sw.code))
			}
			rec.Finish()
		}()
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// about names the box or object of a request from its route's wildcards:
// {name} after /boxes/ (or {box}) is the box; a wildcard after another
// KIND/ is the object KIND/VALUE; a link's {token} is a secret, and
// left out. The box it read for its owner's name, it returns, for the
// route's check and its handler (routeBox).
func about(rec *audit.Record, pattern, path string, svc *service.Service) (read *routeBox) {
	_, p, ok := strings.Cut(pattern, " ")
	if !ok {
		p = pattern
	}
	pat, got := strings.Split(p, "/"), strings.Split(path, "/")
	if len(got) < len(pat) {
		return nil
	}
	for i, seg := range pat {
		if !strings.HasPrefix(seg, "{") || i == 0 {
			continue
		}
		name, kind, v := strings.Trim(seg, "{}"), pat[i-1], got[i]
		switch {
		case name == "token":
		case kind == "boxes" && name == "name", name == "box":
			b, ok, err := svc.LookBox(v)
			owner := ""
			if ok {
				owner = svc.OwnerName(b)
			}
			rec.About(v, owner)
			if err == nil {
				read = &routeBox{name: v, box: b, ok: ok}
			}
		case kind == "jobs" || kind == "screenshots":
			rec.Note(strings.TrimSuffix(kind, "s"), v)
		default:
			rec.Object(kind, v)
		}
	}
	return read
}

// via says how a token's holder proved who they are.
func via(t store.Token) string {
	if t.Kind == store.TokenSession {
		return "session"
	}
	return "token " + t.Name
}

// statusWriter remembers the status sent; it unwraps for hijacks and
// flushes (http.ResponseController).
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack is the underlying writer's: the websocket library asks for it
// directly.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.code == 0 {
		w.code = http.StatusSwitchingProtocols
	}
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *statusWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }
