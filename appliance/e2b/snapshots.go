package e2b

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Forks, snapshots and metrics of E2B's control API over the core's
// box verbs and the metrics capability. A snapshot is a Paddock
// snapshot of the box's files (not its memory); its id is a template a
// sandbox can be made from (a fork of the snapshot); a fork is a new box
// from a snapshot taken now, count forks from the one snapshot.

// Metrics is what E2B's metrics need of package metrics: a box's samples
// since a time.
type Metrics interface {
	History(name string, since time.Time) (api.BoxMetrics, error)
}

// MaxForks bounds a fork's count.
const MaxForks = 10

// snapshotBox reads the box of a snapshot id (BOX-YYYYMMDD-HHMMSS[-N]).
var snapshotBox = regexp.MustCompile(`^(.+)-\d{8}-\d{6}(-\d+)?$`)

// findSnapshot is the box of snapshot id, when it is one of a box the
// caller may see ("" when it is not).
func (e *E2B) findSnapshot(ctx context.Context, id string) (string, error) {
	m := snapshotBox.FindStringSubmatch(id)
	if m == nil {
		return "", nil
	}
	if a, err := e.core.AccessOf(ctx, m[1]); err != nil || a == caller.AccessNone {
		return "", err
	}
	sns, err := e.core.Snapshots(m[1])
	if err != nil {
		return "", err
	}
	if !slices.ContainsFunc(sns, func(s api.Snapshot) bool { return s.ID == id }) {
		return "", nil
	}
	return m[1], nil
}

// createFromSnapshot makes a sandbox from a snapshot (a fork of its box).
func (e *E2B) createFromSnapshot(w http.ResponseWriter, r *http.Request, box string, b createBody) error {
	if len(b.Metadata) > 0 || len(b.EnvVars) > 0 {
		return api.Invalid("metadata", "a sandbox made from a snapshot has its box's settings: metadata and envs are not supported with one by Paddock")
	}
	if err := e.box(r.Context(), box, caller.AccessAll); err != nil {
		return err
	}
	audit.From(r.Context()).Note("snapshot", b.TemplateID)
	bx, err := e.core.Fork(r.Context(), box, api.ForkPost{Snapshot: b.TemplateID})
	if err != nil {
		return err
	}
	audit.From(r.Context()).About(bx.Name, "")
	if bx, err = e.timeout(r.Context(), bx.Name, b.Timeout); err != nil {
		return err
	}
	e.ready(r.Context(), bx.Name)
	return route.WriteJSON(w, http.StatusCreated, e.view(bx, key(r)))
}

// timeout gives a box E2B's timeout (the default when none is given).
func (e *E2B) timeout(ctx context.Context, name string, t *int) (api.Box, error) {
	secs := DefaultTimeout
	if t != nil {
		secs = *t
	}
	if secs <= 0 || secs > MaxTimeout {
		return api.Box{}, api.Invalid("timeout", "timeout %d s: give 1 to %d seconds", secs, MaxTimeout)
	}
	return e.core.SetTTL(ctx, name, strconv.Itoa(secs)+"s")
}

type forkResult struct {
	Sandbox *sandbox  `json:"sandbox,omitempty"`
	Error   *apiError `json:"error,omitempty"`
}

func (e *E2B) forkRoute(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("sandboxID")
	audit.From(r.Context()).About(id, "")
	var b struct {
		Timeout *int `json:"timeout"`
		Count   *int `json:"count"`
	}
	if err := route.Decode(r, &b); err != nil {
		return err
	}
	count := 1
	if b.Count != nil {
		count = *b.Count
	}
	if count < 1 || count > MaxForks {
		return api.Invalid("count", "count %d: give 1 to %d", count, MaxForks)
	}
	if b.Timeout != nil && (*b.Timeout <= 0 || *b.Timeout > MaxTimeout) {
		return api.Invalid("timeout", "timeout %d s: give 1 to %d seconds", *b.Timeout, MaxTimeout)
	}
	if err := e.box(r.Context(), id, caller.AccessAll); err != nil {
		return err
	}
	// The first fork takes the snapshot; the others are made from it.
	first, err := e.core.Fork(r.Context(), id, api.ForkPost{})
	if err != nil {
		return err
	}
	audit.From(r.Context()).Note("snapshot", first.From)
	out := []forkResult{}
	for i := range count {
		bx := first
		if i > 0 {
			if bx, err = e.core.Fork(r.Context(), id, api.ForkPost{Snapshot: first.From}); err != nil {
				status, body := route.Status(err)
				out = append(out, forkResult{Error: &apiError{Code: status, Message: body.Message}})
				continue
			}
		}
		if bx, err = e.timeout(r.Context(), bx.Name, b.Timeout); err != nil {
			status, body := route.Status(err)
			out = append(out, forkResult{Error: &apiError{Code: status, Message: body.Message}})
			continue
		}
		e.ready(r.Context(), bx.Name)
		v := e.view(bx, key(r))
		out = append(out, forkResult{Sandbox: &v})
	}
	return route.WriteJSON(w, http.StatusCreated, out)
}

type snapshotInfo struct {
	SnapshotID string   `json:"snapshotID"`
	Names      []string `json:"names"`
}

func (e *E2B) createSnapshotRoute(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("sandboxID")
	audit.From(r.Context()).About(id, "")
	var b struct {
		Name string `json:"name"`
	}
	if err := route.Decode(r, &b); err != nil {
		return err
	}
	if b.Name != "" {
		return api.Invalid("name", "named snapshots are not supported by Paddock: a snapshot is named by its box and time")
	}
	if err := e.box(r.Context(), id, caller.AccessMember); err != nil {
		return err
	}
	sn, err := e.core.Snapshot(r.Context(), id)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusCreated, snapshotInfo{SnapshotID: sn.ID, Names: []string{sn.ID}})
}

func (e *E2B) listSnapshotsRoute(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var boxes []string
	if id := q.Get("sandboxID"); id != "" {
		if err := e.box(r.Context(), id, caller.AccessViewer); err != nil {
			return err
		}
		boxes = []string{id}
	} else {
		bs, err := e.core.ListBoxes(r.Context())
		if err != nil {
			return err
		}
		for _, b := range bs {
			boxes = append(boxes, b.Name)
		}
	}
	out := []snapshotInfo{}
	for _, b := range boxes {
		sns, err := e.core.Snapshots(b)
		if err != nil {
			return err
		}
		for _, sn := range sns {
			if sn.State == "ready" && (q.Get("name") == "" || q.Get("name") == sn.ID) {
				out = append(out, snapshotInfo{SnapshotID: sn.ID, Names: []string{sn.ID}})
			}
		}
	}
	return route.WriteJSON(w, http.StatusOK, out)
}

type metric struct {
	Timestamp  time.Time `json:"timestamp"`
	TimestampS int64     `json:"timestampUnix"`
	CPUUsedPct float64   `json:"cpuUsedPct"`
	CPUCount   int       `json:"cpuCount"`
	MemUsed    int64     `json:"memUsed"`
	MemTotal   int64     `json:"memTotal"`
	MemCache   int64     `json:"memCache"`
	DiskUsed   int64     `json:"diskUsed"`
	DiskTotal  int64     `json:"diskTotal"`
}

func (e *E2B) metricsRoute(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("sandboxID")
	if err := e.box(r.Context(), id, caller.AccessViewer); err != nil {
		return err
	}
	unix := func(name string, def time.Time) (time.Time, error) {
		v := r.URL.Query().Get(name)
		if v == "" {
			return def, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return time.Time{}, api.Invalid(name, "%s %q: give seconds since 1970", name, v)
		}
		return time.Unix(n, 0), nil
	}
	now := e.core.Time()
	start, err := unix("start", now.Add(-time.Hour))
	if err != nil {
		return err
	}
	end, err := unix("end", now)
	if err != nil {
		return err
	}
	bx, err := e.core.GetBox(id)
	if err != nil {
		return err
	}
	h, err := e.metrics.History(id, start)
	if err != nil {
		return err
	}
	cpus := max(1, int(bx.CPUs+0.5))
	out := []metric{}
	for _, s := range h.Samples {
		if s.At.After(end) {
			continue
		}
		out = append(out, metric{Timestamp: s.At, TimestampS: s.At.Unix(), CPUUsedPct: s.CPU / float64(cpus), CPUCount: cpus,
			MemUsed: s.Memory, MemTotal: s.MemoryLimit, DiskUsed: s.Disk, DiskTotal: s.DiskLimit})
	}
	return route.WriteJSON(w, http.StatusOK, out)
}
