// Package e2b is Paddock speaking E2B: the control API E2B's SDKs call
// (E2B_API_URL: create, list, get, kill, time out, pause and connect to
// a sandbox) and envd, the API inside a sandbox (E2B_SANDBOX_URL: the
// Connect-RPC services for processes and the file system, file upload
// and download, health), so that code written against E2B's official
// SDKs runs against a Paddock server unchanged.
//
// A sandbox is a Paddock box, and its id is the box's name. Nothing
// here is a second implementation: the routes are registered in the
// server's table like every API route (the caller's key, the role, the
// rate limits and the audit log apply as they do to /v1), a sandbox is
// made, stopped, started and removed by the core's box verbs (its
// quotas, policies and placement hold), a process is a job (package
// jobs; its pid is the job's id read as a number), a file is moved by
// package files, and the file system's other calls run find(1), mkdir,
// mv and rm in the box as its user.
//
// The key is a Paddock API token whose value begins with "e2b_" (E2B's
// SDKs send it as X-API-KEY; package caller takes it there). envd's
// requests carry the sandbox's access token, which is the key it was
// made or connected with (X-Access-Token): each is checked against the
// key's user's access to the box, as /v1's box routes are. The README
// has the table of what is supported.
package e2b

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Core is what E2B's API needs of paddockd's core (package service's
// Service has it): the box verbs, the caller's access to a box, a
// running box and a use of it.
type Core interface {
	Time() time.Time
	ListBoxes(ctx context.Context) ([]api.Box, error)
	CreateBox(ctx context.Context, p api.BoxPost) (api.Box, error)
	GetBox(name string) (api.Box, error)
	RemoveBox(ctx context.Context, name string) error
	StopBox(ctx context.Context, name, reason string) (api.Box, error)
	StartBox(ctx context.Context, name string) (api.Box, error)
	SetTTL(ctx context.Context, name, ttl string) (api.Box, error)
	Snapshot(ctx context.Context, name string) (api.Snapshot, error)
	Snapshots(name string) ([]api.Snapshot, error)
	Fork(ctx context.Context, src string, p api.ForkPost) (api.Box, error)
	AccessOf(ctx context.Context, name string) (string, error)
	RunningBox(name string) (store.Box, error)
	Use(ctx context.Context, name string) (done func(), woke bool, err error)
}

// Jobs is what E2B's processes need of package jobs: a job started
// with a tap on its output (as the box's user, or as root), a tap on one
// that runs, its record, those that run, its input and its signals.
type Jobs interface {
	// StartTapped starts a job as user, in a terminal of p's size with
	// tty.
	StartTapped(name string, p api.ExecPost, user string, tty bool) (api.Job, Tap, error)
	Terminal(name, id string) bool
	Resize(name, id string, rows, cols uint16) error
	Tap(name, id string) (Tap, error)
	Get(name, id string) (api.Job, error)
	Running(name string) ([]api.Job, error)
	Input(ctx context.Context, name, id string, body io.Reader, eof bool) (api.JobInput, error)
	Signal(ctx context.Context, name, id, signal string) (api.Job, error)
}

// Tap is a running job's output as it comes (package jobs' JobTap).
type Tap interface {
	// Next is the next piece, from stderr or stdout; io.EOF once the job
	// has ended and its end is recorded.
	Next(ctx context.Context) (data []byte, stderr bool, err error)
	Close()
}

// Files is what E2B's file transfers need of package files: a tar of a
// path in a box, and a tar extracted into a folder of it.
type Files interface {
	Pull(ctx context.Context, name, p string) (io.ReadCloser, error)
	Push(ctx context.Context, name, dir string, body io.Reader) error
}

// Watcher is what E2B's folder watches need of package watch: a watch's
// events (the first "ready"), and its end, which says why it ended.
type Watcher interface {
	WatchDir(ctx context.Context, name, p string, recursive bool) (events <-chan api.WatchEvent, end func() error, err error)
}

// E2B is E2B's API over one server's capabilities.
type E2B struct {
	core    Core
	drv     driver.Driver
	jobs    Jobs
	files   Files
	watch   Watcher
	interp  Interpreter
	metrics Metrics
	log     *slog.Logger

	// Domain is the server's host name, where E2B's host names are
	// (APIHost, a sandbox's PORT-ID.Domain): a sandbox's answer says it,
	// and the SDKs build the addresses of its ports from it (the desktop
	// SDK's stream). "": none (local mode).
	Domain string
}

// New is E2B's API over the core, the engine's driver, and the jobs,
// files, file watch, interpreter and metrics capabilities.
func New(core Core, drv driver.Driver, j Jobs, f Files, w Watcher, k Interpreter, m Metrics, log *slog.Logger) *E2B {
	return &E2B{core: core, drv: drv, jobs: j, files: f, watch: w, interp: k, metrics: m, log: log}
}

// Where E2B's API is served (api.E2BPath): E2B_API_URL is the server's
// address and Prefix, E2B_SANDBOX_URL that and EnvdPath.
const (
	Prefix   = api.E2BPath
	EnvdPath = "/envd" // under Prefix: api.E2BEnvdPath
)

// EnvdVersion is the envd version sandboxes report: the SDKs turn on
// what a version has (closing a command's input, octet-stream uploads);
// later ones (files' metadata, watch events with their entries) they
// refuse with their own error.
const EnvdVersion = "0.5.7"

// Routes registers E2B's routes.
func (e *E2B) Routes(api route.API) {
	a := limits{api}
	p := Prefix
	a.Handle("POST "+p+"/v2/sandboxes", e.createRoute)
	a.Handle("GET "+p+"/v2/sandboxes", e.listRoute)
	a.Handle("GET "+p+"/sandboxes", e.listRoute)
	a.Handle("GET "+p+"/sandboxes/{sandboxID}", e.getRoute)
	a.Handle("DELETE "+p+"/sandboxes/{sandboxID}", e.killRoute)
	a.Handle("POST "+p+"/sandboxes/{sandboxID}/timeout", e.timeoutRoute)
	a.Handle("POST "+p+"/sandboxes/{sandboxID}/pause", e.pauseRoute)
	a.Handle("POST "+p+"/v2/sandboxes/{sandboxID}/connect", e.connectRoute)
	a.Handle("POST "+p+"/sandboxes/{sandboxID}/resume", e.resumeRoute)
	a.Handle("POST "+p+"/sandboxes/{sandboxID}/fork", e.forkRoute)
	a.Handle("POST "+p+"/sandboxes/{sandboxID}/snapshots", e.createSnapshotRoute)
	a.Handle("GET "+p+"/snapshots", e.listSnapshotsRoute)
	a.Handle("GET "+p+"/sandboxes/{sandboxID}/metrics", e.metricsRoute)
	for _, u := range unsupportedRoutes {
		a.Handle(u.pattern, e.refuse(u.why))
	}
	v := p + EnvdPath
	a.Handle("GET "+v+"/health", e.healthRoute)
	a.Handle("GET "+v+"/files", e.downloadRoute)
	a.Handle("POST "+v+"/files", e.uploadRoute)
	a.Handle("POST "+v+"/execute", e.executeRoute)
	a.Handle("GET "+v+"/contexts", e.contextsRoute)
	a.Handle("POST "+v+"/contexts", e.createContextRoute)
	a.Handle("POST "+v+"/contexts/{id}/restart", e.restartContextRoute)
	a.Handle("DELETE "+v+"/contexts/{id}", e.removeContextRoute)
	for m, h := range e.processMethods() {
		a.Handle("POST "+v+"/process.Process/"+m, h)
	}
	for m, h := range e.filesystemMethods() {
		a.Handle("POST "+v+"/filesystem.Filesystem/"+m, h)
	}
}

// limits registers routes whose quota refusals are E2B's limits: 429
// on the control API (the SDKs' RateLimitError), resource_exhausted on
// envd's, with the quota's message.
type limits struct{ route.API }

func (l limits) Handle(pattern string, h route.Handler) {
	l.API.Handle(pattern, func(w http.ResponseWriter, r *http.Request) error {
		err := h(w, r)
		var ae *api.Error
		if errors.Is(err, api.ErrOverQuota) && errors.As(err, &ae) {
			return &api.Error{Code: api.CodeTooMany, Message: ae.Message}
		}
		return err
	})
}

// Reads are E2B's routes that change nothing: a user of the viewer role
// may call them (those that are POSTs in envd's protocol too).
var Reads = map[string]bool{
	"POST " + Prefix + EnvdPath + "/process.Process/List":           true,
	"POST " + Prefix + EnvdPath + "/process.Process/Connect":        true,
	"POST " + Prefix + EnvdPath + "/filesystem.Filesystem/Stat":     true,
	"POST " + Prefix + EnvdPath + "/filesystem.Filesystem/ListDir":  true,
	"POST " + Prefix + EnvdPath + "/filesystem.Filesystem/WatchDir": true,
}

// Heavy are E2B's routes that make or copy much: rate limited as /v1's
// heavy routes are.
var Heavy = []string{
	"POST " + Prefix + "/v2/sandboxes", "POST " + Prefix + "/sandboxes/{sandboxID}/fork", "POST " + Prefix + "/sandboxes/{sandboxID}/snapshots", "POST " + Prefix + EnvdPath + "/files", "GET " + Prefix + EnvdPath + "/files",
	"POST " + Prefix + EnvdPath + "/process.Process/Start",
}

// Actions are the audit log's names of E2B's routes that change
// something or reach into a box: those of the /v1 routes that do the
// same.
var Actions = map[string]string{
	"POST " + Prefix + "/v2/sandboxes":                             "box.create",
	"DELETE " + Prefix + "/sandboxes/{sandboxID}":                  "box.remove",
	"POST " + Prefix + "/sandboxes/{sandboxID}/timeout":            "box.ttl",
	"POST " + Prefix + "/sandboxes/{sandboxID}/pause":              "box.stop",
	"POST " + Prefix + "/v2/sandboxes/{sandboxID}/connect":         "box.start",
	"POST " + Prefix + "/sandboxes/{sandboxID}/resume":             "box.start",
	"POST " + Prefix + EnvdPath + "/files":                         "push",
	"GET " + Prefix + EnvdPath + "/files":                          "download",
	"POST " + Prefix + EnvdPath + "/process.Process/Start":         "job.start",
	"POST " + Prefix + EnvdPath + "/process.Process/SendInput":     "job.input",
	"POST " + Prefix + EnvdPath + "/process.Process/CloseStdin":    "job.input",
	"POST " + Prefix + EnvdPath + "/process.Process/SendSignal":    "job.signal",
	"POST " + Prefix + EnvdPath + "/filesystem.Filesystem/MakeDir": "file.mkdir",
	"POST " + Prefix + EnvdPath + "/filesystem.Filesystem/Move":    "file.move",
	"POST " + Prefix + EnvdPath + "/filesystem.Filesystem/Remove":  "file.remove",
	"POST " + Prefix + EnvdPath + "/execute":                       "code.run",
	"POST " + Prefix + EnvdPath + "/contexts":                      "context.create",
	"POST " + Prefix + EnvdPath + "/contexts/{id}/restart":         "context.restart",
	"DELETE " + Prefix + EnvdPath + "/contexts/{id}":               "context.remove",
	// What reaches into a box to read it (POSTs in envd's protocol).
	"POST " + Prefix + EnvdPath + "/filesystem.Filesystem/Stat":             "file.stat",
	"POST " + Prefix + EnvdPath + "/filesystem.Filesystem/ListDir":          "dir",
	"POST " + Prefix + EnvdPath + "/filesystem.Filesystem/WatchDir":         "file.watch",
	"POST " + Prefix + EnvdPath + "/filesystem.Filesystem/CreateWatcher":    "file.watch",
	"POST " + Prefix + EnvdPath + "/filesystem.Filesystem/GetWatcherEvents": "file.watch",
	"POST " + Prefix + EnvdPath + "/filesystem.Filesystem/RemoveWatcher":    "file.watch",
	"POST " + Prefix + EnvdPath + "/process.Process/Connect":                "job.follow",
	"POST " + Prefix + EnvdPath + "/process.Process/List":                   "job.list",
	"POST " + Prefix + EnvdPath + "/process.Process/StreamInput":            "job.input",
	"POST " + Prefix + EnvdPath + "/process.Process/Update":                 "job.resize",
	"POST " + Prefix + "/sandboxes/{sandboxID}/fork":                        "box.fork",
	"POST " + Prefix + "/sandboxes/{sandboxID}/snapshots":                   "box.snapshot",
	// Refused (not supported yet), recorded as what they ask.
	"PUT " + Prefix + "/sandboxes/{sandboxID}/network": "box.policy",
	"DELETE " + Prefix + "/templates/{templateID}":     "snapshot.remove",
}
