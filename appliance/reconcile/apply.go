package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/buckets"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/policies"
)

// BoxType is the CPU and memory a box type maps to.
type BoxType struct {
	CPUs      float64
	MemoryMiB int64
	Pids      int64
}

// Reconciler loads declared state from the store, observes the engine, plans
// and applies. Runs are serialised; Run may be called from any goroutine.
type Reconciler struct {
	Store  *store.Store
	Driver driver.Driver
	Types  map[string]BoxType
	Log    *slog.Logger
	// Firewall, when set, gets every declared box's address and policy
	// before anything is made, so that a box's rules exist before its
	// container does (and traffic from addresses no box has is dropped);
	// and again after the changes, with the processes of the boxes that
	// run now, so that a box that started has its port bound at once.
	Firewall Firewall
	// Restoring, when set, says whether a drive's restore is under way:
	// no box that mounts it is made or started meanwhile (it waits, and
	// its status says why).
	Restoring func(drive string) bool
	// Forget, when set, hears of a removed box whose tombstone went (its
	// engine objects are gone and its name is free), with the ids of its
	// jobs that went with it: whatever else is kept of the box outside the
	// engine can go. Every path that removes a box ends here.
	Forget func(t store.Tombstone, jobs []string)
	// Yield, when set and true, says people wait on a request now: the
	// warm pool's changes (making, starting, removing pool boxes) are
	// left to a later run, between one change and the next, so that a
	// pass making pool boxes lets go of the engine and of the run lock
	// for the request's own.
	Yield func() bool
	// Fetch, when set, makes sure the server of box has a snapshot's
	// image before the box is made from it (loading it from the object
	// store if it is not there); Taken hears of each snapshot that
	// became ready (to ship it). With Fetch, a box that lost its
	// container is made again from its newest snapshot even if the
	// engine lost its image too, once that snapshot was shipped.
	Fetch func(ctx context.Context, snapshot, box string) error
	Taken func(snapshot string)
	// Binds, when set, serves what boxes bind from the host (their
	// buckets, package buckets): readied before a box with binds is made
	// or started (an error is the change's: the box is not made or
	// started), served once it started, and kept after each pass, with
	// the declared boxes and those running, to serve again what went and
	// end what no running box has.
	Binds Binds

	mu sync.Mutex
	// liveMu guards what runs share with claims and policy changes, which
	// do not wait for a run: the firewall, observed and named.
	liveMu sync.Mutex
	// named holds, per claimed box's key, the container and process its
	// hostname was set for (see fixHostnames).
	named map[string]string

	healthMu sync.Mutex
	health   Health

	// down is the servers that did not answer at the last run (written
	// under mu and liveMu).
	down map[string]error

	// observed is what the last run saw the engine have (under liveMu):
	// the running boxes' processes, for SyncPolicies and claims.
	observed []driver.BoxState
}

// SyncPolicies applies the egress rules of the declared boxes and
// policies, with the boxes' processes as the last run observed them,
// without observing the engine again: a policy change touches no
// container, and a box's process changes only by a run (which syncs) or
// outside Paddock (which the next run finds). Before any run it runs
// one.
func (r *Reconciler) SyncPolicies(ctx context.Context) error {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	if r.observed == nil {
		return r.firstRunLocked(ctx) // it syncs
	}
	return r.firewallLocked(r.observed)
}

// firstRunLocked runs the reconciler once, from under liveMu, when no run
// has observed the engine yet.
func (r *Reconciler) firstRunLocked(ctx context.Context) error {
	r.liveMu.Unlock()
	defer r.liveMu.Lock()
	_, err := r.Run(ctx)
	return err
}

// Claimed makes a box just claimed from the warm pool its user's, without
// waiting for a run: its policy's rules in the firewall (the pool box had
// none that reach anything) and its own hostname (its CPU share is the
// service's to raise, after the answer). The container is the
// pool box's, running, and its spec is the same: the next run changes
// nothing in the engine.
func (r *Reconciler) Claimed(ctx context.Context, b store.Box) error {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	if r.observed == nil {
		if err := r.firstRunLocked(ctx); err != nil {
			return err
		}
	}
	var o driver.BoxState
	for _, seen := range r.observed {
		if seen.Name == b.Key() && seen.Running {
			o = seen
		}
	}
	if o.Name == "" {
		return fmt.Errorf("box %s: its container was not seen running", b.Name)
	}
	// The rules and the hostname side by side: neither needs the other,
	// and the claim's answer waits for both.
	t0 := time.Now()
	var fwErr error
	var fwTook time.Duration
	fw := make(chan struct{})
	go func() {
		defer close(fw)
		fwErr = r.firewallLocked(r.observed)
		fwTook = time.Since(t0)
	}()
	hnErr := r.setHostname(ctx, b, o)
	hnTook := time.Since(t0)
	<-fw
	if r.Log != nil {
		r.Log.Debug("claimed", "box", b.Name, "firewall", fwTook, "hostname", hnTook, "both", time.Since(t0))
	}
	if fwErr != nil {
		return fwErr
	}
	return hnErr
}

// Result is what a run did.
type Result struct {
	Changes []Change
	// Errors maps a change's address to why it failed.
	Errors map[string]error
}

// Err joins the errors of a run, or is nil.
func (r Result) Err() error {
	var errs []error
	for addr, err := range r.Errors {
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return errors.Join(errs...)
}

// Firewall applies the boxes' egress policies.
type Firewall interface {
	Sync(boxes []policies.Box) error
}

// FirewallBoxes turns declared boxes and policies into what the firewall
// needs, with the processes of the boxes observed running. A box whose
// named policy does not exist is denied everything.
func FirewallBoxes(boxes []store.Box, pols []store.Policy, observed []driver.BoxState) []policies.Box {
	named := map[string]store.Policy{}
	for _, p := range pols {
		named[p.Name] = p
	}
	pids := map[string]int{}
	for _, o := range observed {
		if o.Running {
			pids[o.Name] = o.Pid
		}
	}
	var out []policies.Box
	for _, b := range boxes {
		ip, _ := netip.ParseAddr(b.IP)
		fb := policies.Box{Name: b.Name, IP: ip, Pid: pids[b.Key()]}
		switch b.Policy {
		case "", policies.AllowAll:
			fb.Policy.Mode = policies.AllowAll
		case policies.DenyAll:
			fb.Policy.Mode = policies.DenyAll
		default:
			p, ok := named[b.Policy]
			if !ok {
				fb.Policy.Mode = policies.DenyAll
				break
			}
			fb.Policy = policies.Policy{Mode: policies.List, Domains: p.AllowDomains}
			for _, c := range p.AllowCIDRs {
				if pfx, err := netip.ParsePrefix(c); err == nil {
					fb.Policy.CIDRs = append(fb.Policy.CIDRs, pfx)
				}
			}
		}
		out = append(out, fb)
	}
	return out
}

// Binds serves boxes' binds (buckets.Mounter).
type Binds interface {
	Ready(ctx context.Context, b store.Box) error
	Serve(ctx context.Context, b store.Box) error
	Keep(ctx context.Context, boxes []store.Box, running map[string]bool)
}

// binds readies (serve false) or serves the binds of the box a change
// makes or starts.
func (r *Reconciler) binds(ctx context.Context, c Change, serve bool) error {
	if r.Binds == nil || c.Box == "" || c.Pool || (c.Spec != nil && len(c.Spec.Binds) == 0) {
		return nil
	}
	b, err := r.Store.GetBox(c.Box)
	if err != nil || len(b.Buckets) == 0 {
		return nil
	}
	if serve {
		return r.Binds.Serve(ctx, b)
	}
	return r.Binds.Ready(ctx, b)
}

// SpecFor turns a declared box into the spec its container is made from.
func SpecFor(b store.Box, types map[string]BoxType) driver.BoxSpec {
	t := types[b.Type]
	spec := driver.BoxSpec{
		Name:        b.Key(),
		UID:         b.UID,
		Image:       b.Image,
		Snapshot:    b.From,
		CPUs:        t.CPUs,
		MemoryBytes: t.MemoryMiB << 20,
		Pids:        t.Pids,
		Generation:  b.Generation,
		IP:          b.IP,
		Desktop:     b.Desktop,
	}
	for _, m := range b.Mounts {
		spec.Mounts = append(spec.Mounts, driver.Mount{
			Volume: driver.VolumeRef{Kind: driver.KindDrive, Name: m.Drive}, Path: m.Path, ReadOnly: m.ReadOnly,
		})
	}
	data := driver.VolumeRef{Kind: driver.KindBoxData, Name: b.Key()}
	if b.Builder {
		// A builder box's engine keeps its layers in its owner's cache.
		data = driver.VolumeRef{Kind: driver.KindBuildCache, Name: strconv.FormatInt(b.Owner, 10)}
	}
	spec.Mounts = append(spec.Mounts, driver.Mount{Volume: data, Path: BoxDataPath})
	spec.Binds = buckets.Binds(b)
	return spec
}

// PoolSpec is the spec of a warm pool box: that of the box a claim makes
// of it, so that the claimed box keeps its container.
func PoolSpec(p store.PoolBox, types map[string]BoxType) driver.BoxSpec {
	spec := SpecFor(PoolAsBox(p), types)
	spec.Background = true
	return spec
}

// PoolAsBox is the declared box a pool box becomes when claimed, but for
// its name, owner and what the claim asks for beyond its container.
func PoolAsBox(p store.PoolBox) store.Box {
	return store.Box{Name: p.Key, Engine: p.Key, UID: p.UID, Type: p.Type, Image: p.Image, IP: p.IP, Desktop: p.Desktop, Node: p.Node}
}

// Load reads the declared state, as of one moment: a claim commits a
// pool box's move into the boxes table at once, and a pass that read the
// boxes before it and the pool after would find the container in
// neither, and remove it from under the box just claimed.
func (r *Reconciler) Load() (Desired, []store.Box, error) {
	var boxes []store.Box
	var drives []store.Drive
	var snaps []store.Snapshot
	var pool []store.PoolBox
	err := r.Store.Read(func(tx *store.Tx) (err error) {
		if boxes, err = tx.ListBoxes(); err != nil {
			return err
		}
		if drives, err = tx.ListDrives(); err != nil {
			return err
		}
		if snaps, err = tx.ListSnapshots(""); err != nil {
			return err
		}
		pool, err = tx.ListPool()
		return err
	})
	if err != nil {
		return Desired{}, nil, err
	}
	d := Desired{Drives: map[string]string{}, DriveNodes: map[string]string{}}
	keys := map[string]string{}
	for _, b := range boxes {
		d.Boxes = append(d.Boxes, DesiredBox{Spec: SpecFor(b, r.Types), Box: b.Name, Running: b.Desired == "running", Node: b.Node})
		keys[b.Name] = b.Key()
	}
	for _, p := range pool {
		d.Boxes = append(d.Boxes, DesiredBox{Spec: PoolSpec(p, r.Types), Running: true, Pool: true, Node: p.Node})
	}
	for _, dr := range drives {
		d.Drives[dr.Name] = dr.State
		if dr.Node != "" {
			d.DriveNodes[dr.Name] = dr.Node
		}
		if dr.State == "ready" && r.Restoring != nil && r.Restoring(dr.Name) {
			d.Drives[dr.Name] = restoring
		}
	}
	for _, s := range snaps {
		d.Snapshots = append(d.Snapshots, DesiredSnapshot{ID: s.ID, Box: s.Box, Key: keys[s.Box], State: s.State, Node: s.Node})
	}
	return d, boxes, nil
}

// Observe reads what the engine has. A driver over several servers that
// could not reach some of them says so (*driver.NodesDown, the servers
// of all three lists together) with what the others have.
func Observe(ctx context.Context, drv driver.Driver) (Observed, error) {
	var o Observed
	down := map[string]error{}
	// The three lists are asked for at once: each is an engine round
	// trip that the others need not wait for.
	var errs [3]error
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); o.Boxes, errs[0] = drv.Boxes(ctx) }()
	go func() { defer wg.Done(); o.Volumes, errs[1] = drv.Volumes(ctx) }()
	go func() { defer wg.Done(); o.Snapshots, errs[2] = drv.Snapshots(ctx) }()
	wg.Wait()
	for _, err := range errs {
		if !nodesDown(err, down) {
			return o, err
		}
	}
	if len(down) > 0 {
		return o, &driver.NodesDown{Nodes: down}
	}
	return o, nil
}

// nodesDown says whether err is nil or only names servers that did not
// answer, and adds those to down.
func nodesDown(err error, down map[string]error) bool {
	if err == nil {
		return true
	}
	var nd *driver.NodesDown
	if !errors.As(err, &nd) {
		return false
	}
	for n, e := range nd.Nodes {
		down[n] = e
	}
	return true
}

// onUp is the boxes that are not on a server that is down.
func onUp(boxes []store.Box, down map[string]error) []store.Box {
	if len(down) == 0 {
		return boxes
	}
	var out []store.Box
	for _, b := range boxes {
		if _, ok := down[b.Node]; !ok {
			out = append(out, b)
		}
	}
	return out
}

// OnUp is what was observed less the containers and box volumes of the
// boxes declared on a server that is down this pass: they are left as
// they are. A server that did not answer at the pass's start and answers
// its lists a moment later (an engine restarting) would otherwise have
// its boxes, left out of the desired state, taken for undeclared and
// removed.
func (o Observed) OnUp(all []store.Box, down map[string]error) Observed {
	if len(down) == 0 {
		return o
	}
	held := map[string]bool{}
	for _, b := range all {
		if _, ok := down[b.Node]; ok {
			held[b.Key()] = true
		}
	}
	out := Observed{Snapshots: o.Snapshots}
	for _, b := range o.Boxes {
		if !held[b.Name] {
			out.Boxes = append(out.Boxes, b)
		}
	}
	for _, v := range o.Volumes {
		if !(v.Kind == driver.KindBoxData && held[v.Name]) {
			out.Volumes = append(out.Volumes, v)
		}
	}
	return out
}

// Run makes one pass: load, observe, plan, apply, record what is observed.
func (r *Reconciler) Run(ctx context.Context) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := time.Now()
	res, err := r.run(ctx)
	h := Health{LastRun: start, Took: time.Since(start), Changes: len(res.Changes), Failed: len(res.Errors)}
	if err != nil {
		h.Err = err.Error()
	}
	r.healthMu.Lock()
	h.Runs = r.health.Runs + 1
	r.health = h
	r.healthMu.Unlock()
	return res, err
}

// Hold runs fn with no pass under way nor starting: for a change of
// engine objects and declared state together, which a pass must not see
// half done (a box moving between servers).
func (r *Reconciler) Hold(fn func() error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fn()
}

// Health is how the reconciler's last run went.
type Health struct {
	LastRun time.Time
	Took    time.Duration
	Runs    int64
	// Changes and Failed count the last run's changes and failed ones;
	// Err is its error, if it could not run at all.
	Changes, Failed int
	Err             string
}

// Health reports the last run (without waiting for one under way).
func (r *Reconciler) Health() Health {
	r.healthMu.Lock()
	defer r.healthMu.Unlock()
	return r.health
}

func (r *Reconciler) run(ctx context.Context) (Result, error) {
	// Servers that do not answer (several servers only): what is on them
	// is left as it is this run, and their boxes say "node down".
	down := map[string]error{}
	if err := r.Driver.Prepare(ctx); !nodesDown(err, down) {
		return Result{}, fmt.Errorf("preparing the engine: %w", err)
	}
	t0 := time.Now()
	desired, all, err := r.Load()
	if err != nil {
		return Result{}, err
	}
	t1 := time.Now()
	observed, err := Observe(ctx, r.Driver)
	if !nodesDown(err, down) {
		return Result{}, err
	}
	r.liveMu.Lock()
	r.down = down
	r.liveMu.Unlock()
	boxes := onUp(all, down)
	desired, observed = desired.Without(down), observed.OnUp(all, down)
	if lost, err := r.recoverLost(boxes, observed); err != nil {
		return Result{}, err
	} else if lost {
		if desired, all, err = r.Load(); err != nil {
			return Result{}, err
		}
		boxes, desired = onUp(all, down), desired.Without(down)
	}
	if err := r.firewall(observed.Boxes); err != nil {
		return Result{}, err
	}
	if len(down) > 0 && r.Log != nil {
		r.Log.Warn("reconcile: servers down, their boxes left as they are", "err", (&driver.NodesDown{Nodes: down}).Error())
	}
	for _, b := range all {
		if e, ok := down[b.Node]; ok {
			if err := r.Store.SetObserved(b.Name, "node down", e.Error()); err != nil {
				return Result{}, err
			}
		}
	}
	t2 := time.Now()
	changes := Plan(desired, observed)
	res := Result{Changes: changes, Errors: map[string]error{}}
	if len(changes) > 0 && r.Log != nil {
		r.Log.Info("reconcile", "plan", Summary(changes))
	}
	r.apply(ctx, changes, res.Errors)
	t3 := time.Now()
	if len(changes) > 0 && r.Log != nil {
		defer func() {
			// Where a pass with changes spent its time, for profiling.
			r.Log.Debug("reconcile pass", "load", t1.Sub(t0), "observe", t2.Sub(t1), "apply", t3.Sub(t2), "after", time.Since(t3))
		}()
	}
	now := observed.Boxes
	if len(changes) > 0 {
		// What the changes made: observed again, and the firewall told of
		// the boxes that run now (a box that started has its port bound
		// at once). With no change, what was observed and synced stands.
		if now, err = r.Driver.Boxes(ctx); !nodesDown(err, map[string]error{}) {
			return res, err
		}
		if err := r.firewall(now); err != nil {
			return res, err
		}
	}
	if err := r.record(ctx, boxes, now, vanished(observed.Boxes, now, changes), desired, res.Errors); err != nil {
		return res, err
	}
	r.liveMu.Lock()
	r.observed = now
	r.fixHostnames(ctx, boxes, now)
	r.liveMu.Unlock()
	if r.Binds != nil {
		running := map[string]bool{}
		for _, o := range now {
			if o.Running {
				running[o.Name] = true
			}
		}
		r.Binds.Keep(ctx, boxes, running)
	}
	return res, nil
}

// fixHostnames gives each running box claimed from the warm pool its own
// hostname, once per start of its container: the engine gives it the
// pool's at every start (after a crash in the middle of a claim, an engine
// restart, a start by another hand). A failure is logged and tried again
// on the next run. Under liveMu.
func (r *Reconciler) fixHostnames(ctx context.Context, boxes []store.Box, now []driver.BoxState) {
	running := map[string]driver.BoxState{}
	for _, o := range now {
		if o.Running {
			running[o.Name] = o
		}
	}
	for key := range r.named {
		if _, ok := running[key]; !ok {
			delete(r.named, key)
		}
	}
	for _, b := range boxes {
		o, ok := running[b.Key()]
		if !ok || b.Key() == b.Name || r.named[b.Key()] == startMark(o) {
			continue
		}
		if err := r.setHostname(ctx, b, o); err != nil && r.Log != nil {
			r.Log.Warn("setting a claimed box's hostname", "box", b.Name, "err", err)
		}
	}
}

// startMark tells one start of a container from another.
func startMark(o driver.BoxState) string { return fmt.Sprintf("%s/%d", o.ID, o.Pid) }

// setHostname gives running box b (observed as o) its own hostname. Under
// liveMu.
func (r *Reconciler) setHostname(ctx context.Context, b store.Box, o driver.BoxState) error {
	if !driver.SetHostname.Has(r.Driver) {
		return fmt.Errorf("the engine's driver cannot set a box's hostname")
	}
	if _, err := driver.SetHostname.Do(ctx, r.Driver, driver.BoxHostname{Box: b.Key(), Hostname: b.Name}); err != nil {
		return err
	}
	if r.named == nil {
		r.named = map[string]string{}
	}
	r.named[b.Key()] = startMark(o)
	return nil
}

// recoverLost points each box that had a container and lost it (removed
// outside Paddock, or being removed) at its newest snapshot, so that it is
// made again with what it held then rather than from the bare image. A box whose
// filesystem already comes from a snapshot as new or newer keeps it.
func (r *Reconciler) recoverLost(boxes []store.Box, observed Observed) (bool, error) {
	have := map[string]bool{}
	for _, b := range observed.Boxes {
		// A container another hand is removing is lost already: the
		// pass that sees it so fails to start it (and records an
		// error), and the next, which finds it gone, would make the box
		// from its image.
		have[b.Name] = b.Status != "removing" // by key
	}
	images := map[string]bool{}
	for _, s := range observed.Snapshots {
		images[s.ID] = true
	}
	changed := false
	for _, b := range boxes {
		if have[b.Key()] || (b.Observed != "running" && b.Observed != "stopped") {
			continue
		}
		snaps, err := r.Store.ListSnapshots(b.Name)
		if err != nil {
			return changed, err
		}
		var newest *store.Snapshot
		for i := range snaps { // oldest first
			if snaps[i].State == "ready" && (images[snaps[i].ID] || (r.Fetch != nil && snaps[i].Shipped == "shipped")) {
				newest = &snaps[i]
			}
		}
		if newest == nil || newest.ID == b.From {
			continue
		}
		moved := false
		err = r.Store.Declare(func(tx *store.Tx) error {
			cur, err := tx.GetBox(b.Name)
			if err != nil {
				return err
			}
			if cur.From != "" {
				if from, err := tx.GetSnapshot(cur.From); err == nil && !from.Created.Before(newest.Created) {
					return nil
				}
			}
			cur.From, moved = newest.ID, true
			// Said where its user looks: what it wrote after then is gone.
			cur.Note = fmt.Sprintf("its container was lost at %s: made again from snapshot %s, taken %s; what it wrote after that is lost",
				time.Now().UTC().Format(time.RFC3339), newest.ID, newest.Created.UTC().Format(time.RFC3339))
			return tx.UpdateBox(cur)
		})
		if err != nil {
			return changed, err
		}
		if moved && r.Log != nil {
			r.Log.Warn("box lost its container: making it again from its newest snapshot", "box", b.Name, "snapshot", newest.ID, "taken", newest.Created)
		}
		changed = changed || moved
	}
	return changed, nil
}

func (r *Reconciler) apply(ctx context.Context, changes []Change, errs map[string]error) {
	failedBox := map[string]bool{}
	deferred := 0
	defer func() {
		if deferred > 0 && r.Log != nil {
			r.Log.Debug("warm pool changes left for a later run: a request is under way", "changes", deferred)
		}
	}()
	for _, c := range changes {
		if failedBox[c.Box] && c.Box != "" && (c.Action == StartBox || c.Action == StopBox) {
			continue // a box whose create or snapshot failed is not touched further this run
		}
		if c.Pool && r.Yield != nil && r.Yield() {
			deferred++
			continue
		}
		start := time.Now()
		err := r.do(ctx, c)
		if err != nil {
			errs[c.Address()] = err
			if c.Box != "" && (c.Action == CreateBox || c.Action == ReplaceBox || c.Action == TakeSnapshot) {
				failedBox[c.Box] = true
			}
		}
		if r.Log != nil {
			if err != nil {
				r.Log.Warn("change failed", "change", c.String(), "err", err)
			} else {
				r.Log.Debug("change", "change", c.String(), "took", time.Since(start))
			}
		}
	}
}

func (r *Reconciler) do(ctx context.Context, c Change) error {
	d := r.Driver
	key := c.Key
	if key == "" {
		key = c.Box
	}
	switch c.Action {
	case CreateVolume:
		return d.CreateVolume(ctx, c.Volume)
	case TakeSnapshot:
		if err := d.Snapshot(ctx, key, c.Snapshot); err != nil {
			r.Store.SetSnapshotState(c.Snapshot, "failed", err.Error())
			return err
		}
		if driver.SnapshotSize.Has(d) {
			// The size is for people to read: not knowing it fails nothing.
			if n, err := driver.SnapshotSize.Do(ctx, d, c.Snapshot); err == nil {
				r.Store.SetSnapshotSize(c.Snapshot, n)
			}
		}
		return r.ready(c.Snapshot)
	case MarkSnapshot:
		return r.ready(c.Snapshot)
	case FailSnapshot:
		return r.Store.SetSnapshotState(c.Snapshot, "failed", c.Reason)
	case RemoveBox:
		return ignoreNotFound(d.RemoveBox(ctx, key))
	case ReplaceBox:
		if err := r.fetch(ctx, c); err != nil {
			return err
		}
		if err := r.binds(ctx, c, false); err != nil {
			return err
		}
		if err := ignoreNotFound(d.RemoveBox(ctx, key)); err != nil {
			return err
		}
		return d.CreateBox(ctx, *c.Spec)
	case CreateBox:
		if err := r.fetch(ctx, c); err != nil {
			return err
		}
		if err := r.binds(ctx, c, false); err != nil {
			return err
		}
		if err := d.CreateBox(ctx, *c.Spec); err != nil {
			return err
		}
		if c.Spec.Snapshot == "" {
			// A box made again from its image (its container was removed
			// outside Paddock) has lost what its Boxfile's push and setup
			// did; the next apply runs them again.
			return r.Store.SetupAgain(c.Box)
		}
		return nil
	case StartBox:
		if err := r.binds(ctx, c, false); err != nil {
			return err
		}
		if err := d.StartBox(ctx, key); err != nil {
			return err
		}
		return r.binds(ctx, c, true)
	case StopBox:
		return d.StopBox(ctx, key)
	case RemoveVolume:
		err := ignoreNotFound(d.RemoveVolume(ctx, c.Volume))
		if err == nil && c.Volume.Kind == driver.KindDrive {
			return r.Store.ForgetDrive(c.Volume.Name)
		}
		return err
	case ForgetDrive:
		return r.Store.ForgetDrive(c.Volume.Name)
	case RemoveSnapshot:
		err := ignoreNotFound(d.RemoveSnapshot(ctx, c.Snapshot))
		if errors.Is(err, driver.ErrInUse) {
			return nil // kept until the boxes made from it are gone
		}
		if err != nil {
			return err
		}
		return r.Store.ForgetSnapshot(c.Snapshot)
	case ForgetSnapshot:
		return r.Store.ForgetSnapshot(c.Snapshot)
	}
	return fmt.Errorf("unknown action %q", c.Action)
}

// ready records a snapshot taken.
func (r *Reconciler) ready(id string) error {
	if err := r.Store.SetSnapshotState(id, "ready", ""); err != nil {
		return err
	}
	if r.Taken != nil {
		r.Taken(id)
	}
	return nil
}

// fetch brings the snapshot a box is to be made from to its server, when
// it is not there (Fetch).
func (r *Reconciler) fetch(ctx context.Context, c Change) error {
	if r.Fetch == nil || c.Spec.Snapshot == "" {
		return nil
	}
	return r.Fetch(ctx, c.Spec.Snapshot, c.Box)
}

// buryRemoved frees the names of removed boxes whose container and
// /var/lib/docker volume are gone; until then nobody can make a box of that
// name, so nothing of a removed box can reach a new one.
func (r *Reconciler) buryRemoved(ctx context.Context, now []driver.BoxState) error {
	tombs, err := r.Store.ListTombstones()
	if err != nil || len(tombs) == 0 {
		return err
	}
	vols, err := r.Driver.Volumes(ctx)
	if !nodesDown(err, map[string]error{}) {
		return err
	}
	left := map[string]bool{}
	for _, b := range now {
		left[b.Name] = true
	}
	for _, v := range vols {
		if v.Kind == driver.KindBoxData {
			left[v.Name] = true
		}
	}
	for _, t := range tombs {
		if _, ok := r.down[t.Node]; ok || left[t.Key()] {
			continue // its objects may be on a server that is down
		}
		jobs, err := r.Store.ForgetTombstone(t.Name)
		if err != nil {
			return err
		}
		if r.Forget != nil {
			r.Forget(t, jobs)
		}
	}
	return nil
}

func ignoreNotFound(err error) error {
	if errors.Is(err, driver.ErrNotFound) {
		return nil
	}
	return err
}

// firewall applies the egress policies of what the store declares now,
// read under liveMu, so that of two syncs the later always has the later
// state (a run that loaded its boxes before a claim cannot put the claimed
// box's rules back to the pool's).
func (r *Reconciler) firewall(observed []driver.BoxState) error {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	return r.firewallLocked(observed)
}

func (r *Reconciler) firewallLocked(observed []driver.BoxState) error {
	if r.Firewall == nil {
		return nil
	}
	// As of one moment, as Load: a box claimed meanwhile is in one list.
	var boxes []store.Box
	var pols []store.Policy
	var pool []store.PoolBox
	err := r.Store.Read(func(tx *store.Tx) (err error) {
		if boxes, err = tx.ListBoxes(); err != nil {
			return err
		}
		if pols, err = tx.ListPolicies(); err != nil {
			return err
		}
		pool, err = tx.ListPool()
		return err
	})
	if err != nil {
		return err
	}
	fb := FirewallBoxes(boxes, pols, observed)
	// Pool boxes reach nothing: what runs in them before a claim is only
	// what the image starts.
	for _, p := range pool {
		b := PoolAsBox(p)
		b.Policy = policies.DenyAll
		fb = append(fb, FirewallBoxes([]store.Box{b}, nil, observed)...)
	}
	if err := r.Firewall.Sync(fb); err != nil {
		// A server that is down gets its rules when it answers again
		// (nothing of it is made or started meanwhile); any other
		// failure stops the run before anything is made.
		var nd *driver.NodesDown
		if errors.As(err, &nd) {
			onlyDown := true
			for n := range nd.Nodes {
				if _, ok := r.down[n]; !ok {
					onlyDown = false
				}
			}
			if onlyDown {
				return nil
			}
		}
		return fmt.Errorf("applying egress policies: %w", err)
	}
	return nil
}

// vanished names the containers (by key) seen at the start of a run and
// gone at its end that none of its changes removed: another hand removed
// them meanwhile.
func vanished(before, now []driver.BoxState, changes []Change) map[string]bool {
	gone := map[string]bool{}
	for _, b := range before {
		gone[b.Name] = true
	}
	for _, b := range now {
		delete(gone, b.Name)
	}
	for _, c := range changes {
		if c.Action == RemoveBox || c.Action == ReplaceBox {
			delete(gone, c.Key)
		}
	}
	return gone
}

// record stores the observed state of every declared box after a run (now
// is what the engine has). A box whose container vanished during the run
// keeps what was recorded before: the next run (the engine's event kicks
// one) finds it lost, and makes it again from its newest snapshot.
func (r *Reconciler) record(ctx context.Context, boxes []store.Box, now []driver.BoxState, gone map[string]bool, desired Desired, errs map[string]error) error {
	if err := r.buryRemoved(ctx, now); err != nil {
		return err
	}
	seen := map[string]driver.BoxState{}
	for _, b := range now {
		seen[b.Name] = b // by key
	}
	for _, b := range boxes {
		if gone[b.Key()] {
			continue
		}
		state, msg := "pending", ""
		if o, ok := seen[b.Key()]; ok {
			state = "stopped"
			if o.Running {
				state = "running"
			}
		}
		if missing := missingDrives(SpecFor(b, r.Types), desired.Drives); missing != "" {
			if desired.Drives[missing] == restoring {
				msg = fmt.Sprintf("waits for drive %q, which is being restored", missing)
			} else {
				state, msg = "error", fmt.Sprintf("drive %q is not declared", missing)
			}
		}
		if err := errs["box."+b.Name]; err != nil {
			state, msg = "error", err.Error()
		}
		if state != b.Observed || msg != b.ObservedEr {
			if err := r.Store.SetObserved(b.Name, state, msg); err != nil {
				return err
			}
		}
	}
	return nil
}
