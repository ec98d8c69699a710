// Package pool is the warm pool: boxes kept made, started and
// answering, that a new box is made of in one transaction (a claim),
// so that it runs at once.
//
// paddockd keeps warm_pool boxes of each type ready: made from the default
// image, with a desktop if desktop_default says so, started, and answering.
// They are declared in the store (its pool table) and made by the
// reconciler like any box, under engine names of their own ("pool-" and
// an id); they belong to nobody, are in no list, and their policy is
// deny-all.
//
// A new box whose request fits (the pool's image, type and desktop; no
// drives; not from a snapshot) is a claim: one transaction takes a ready
// pool box and declares the user's box with the pool box's engine name, id
// and address. Its container is the pool box's and its spec the same, so no
// reconcile touches it; what makes it the user's box is done in place
// before the answer: its policy's rules in the firewall, and its own
// hostname (set from the host; the engine gives it the pool's at every
// start, so the reconciler sets it again after each). The box's
// environment, TTL and owner are the store's, as for any box. The pool is
// refilled in the background. A crash at any point leaves either the pool
// box or the user's box declared, never both and never neither, and the
// next reconcile carries on from there.
//
// A pool box is ready once it answers and the process that starts its
// commands has been started ahead (a warm exec, driver.ExecWarmer: the
// engine's exec of a small program that waits for commands and starts
// each as the engine would), so that a claimed box's commands do not
// wait the 80-100 ms the runtime takes to start a process.
//
// Keeper is the pool's work over the core: the keeping (Keep, which
// paddockd runs whenever the pool may have changed and every few
// seconds), the claim (Fits, Take, SettleClaim), the status line, and the
// claimed boxes' CPU share at start (ForegroundClaimed).
package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/placement"
	"github.com/paddock-dev/paddock/appliance/reconcile"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Core is what the pool needs of paddockd's core (package service's
// Service has it): its clock; placement (a new pool box on a server, a
// server a user names, the names users see); a pass of the reconciler for
// an address; and the note that the pool changed, which wakes its keeper.
type Core interface {
	Time() time.Time
	PlaceOn(tx *store.Tx, b *store.Box, want string) error
	Wanted(want string, ns []store.Node) (string, error)
	NodeDisplay(n string) string
	ReconcileFor(ctx context.Context, addrs ...string) error
	NotePoolChange()
}

// Luller waits for a lull in the requests people wait on (the core's
// Foreground), at most max.
type Luller interface {
	Lull(ctx context.Context, quiet, max time.Duration) time.Duration
}

// How long the pool's new boxes wait for a lull: a second without a
// request people wait on, and at most lullMax.
const (
	lullQuiet = time.Second
	lullMax   = 30 * time.Second
)

// Keeper is the pool's work, over the core's parts as they are when it
// is made (the core makes one for each use: a test may change them).
type Keeper struct {
	Core   Core
	Store  *store.Store
	Driver driver.Driver
	Rec    *reconcile.Reconciler
	Cfg    *config.Config
	Log    *slog.Logger
	Fore   Luller
	// Cold is kept across Keepers: the pool boxes whose warm exec could
	// not start.
	Cold *Cold
}

// Cold holds the pool boxes whose warm exec could not start (an engine
// or image that cannot have one): said once, not asked about again.
type Cold struct {
	mu   sync.Mutex
	keys map[string]bool
}

// poolProbeTimeout bounds one readiness probe of a pool box.
const poolProbeTimeout = 10 * time.Second

// Fits says whether a new box can be claimed from the pool: requests
// for another image, for drives or from a snapshot are made cold.
// (Whether a pool box of its type is ready, here or on the server it
// asks for, is the claim's to find.)
func (k Keeper) Fits(b store.Box) bool {
	return b.Image == k.Cfg.Image && b.Desktop == k.Cfg.DesktopDefault && len(b.Mounts) == 0 && len(b.Buckets) == 0 && b.From == ""
}

// Take, in the transaction that declares b, gives b a ready pool
// box's container: its engine name, id and address. False when none fits
// or is ready (b is then made cold). want is the server the user asked
// for ("": any).
func (k Keeper) Take(tx *store.Tx, b *store.Box, want string) (bool, error) {
	if !k.Fits(*b) {
		return false, nil
	}
	// A box that asks for labels takes a pool box of a server that has
	// them; one asked for on a server, one of that server; never one of a
	// drained server.
	ns, err := tx.ListNodes()
	if err != nil {
		return false, err
	}
	on := placement.Candidates(ns, b.NodeLabels)
	if want != "" {
		n, err := k.Core.Wanted(want, ns)
		if err != nil || !store.HasLabels(ns, n, b.NodeLabels) {
			return false, nil // placeOn says why
		}
		on = []string{n}
	}
	p, err := tx.TakePoolOn(b.Type, b.Image, b.Desktop, on)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	b.Engine, b.UID, b.IP, b.Node = p.Key, p.UID, p.IP, p.Node
	return true, nil
}

// SettleClaim finishes a claim once it is declared: the box's rules and
// hostname, then its observed state. If that cannot be done in place, a
// reconcile does it. The pool is refilled after the answer.
func (k Keeper) SettleClaim(ctx context.Context, b store.Box) error {
	defer k.Core.NotePoolChange()
	if err := k.Rec.Claimed(ctx, b); err != nil {
		k.Log.Warn("claimed box: finishing it with a reconcile", "box", b.Name, "err", err)
		return k.Core.ReconcileFor(ctx, "box."+b.Name)
	}
	k.Log.Info("box claimed from the warm pool", "box", b.Name, "key", b.Engine)
	k.foregroundClaimed(ctx, b)
	return k.Store.SetObserved(b.Name, "running", "")
}

// After a claim, how long the engine's update of the box's CPU share
// waits for a lull in requests people wait on, and at most.
const (
	claimShareQuiet = 500 * time.Millisecond
	claimShareMax   = 2 * time.Second
)

// foregroundClaimed gives a box claimed from the pool the CPU share of a
// box someone waits on (it was made in the background with a small one),
// in the background. The engine's update runs a process of the runtime,
// whose CPU time the box's first commands would wait behind (measured:
// the first two execs through the API 19 ms p50 beside it, 10 ms
// without), so it waits for a lull, of at most claimShareMax: until then
// the box keeps the small share, which matters only while every CPU is
// busy. A box left with it still works: the error is said, not returned.
func (k Keeper) foregroundClaimed(ctx context.Context, b store.Box) {
	if !driver.Foreground.Has(k.Driver) {
		return
	}
	ctx = context.WithoutCancel(ctx)
	go func() {
		k.Fore.Lull(ctx, claimShareQuiet, claimShareMax)
		if _, err := driver.Foreground.Do(ctx, k.Driver, b.Key()); err != nil {
			k.Log.Warn("claimed box keeps a pool box's CPU share", "box", b.Name, "err", err)
		}
	}()
}

// ForegroundClaimed gives every running box claimed from the pool a box's
// CPU share if it still has a pool box's: one claimed just before paddockd
// stopped, before foregroundClaimed's update ran, would keep the small
// share for good. paddockd runs it once at its start; a box that has the
// usual share is only looked at.
func (k Keeper) ForegroundClaimed(ctx context.Context) {
	if !driver.Foreground.Has(k.Driver) {
		return
	}
	boxes, err := k.Store.ListBoxes()
	if err != nil {
		k.Log.Warn("claimed boxes' CPU shares not checked", "err", err)
		return
	}
	for _, b := range boxes {
		// A claimed box runs in its pool box's container (Engine).
		if b.Engine == "" || b.Observed != "running" {
			continue
		}
		if _, err := driver.Foreground.Do(ctx, k.Driver, b.Key()); err != nil {
			k.Log.Warn("claimed box keeps a pool box's CPU share", "box", b.Name, "err", err)
		}
	}
}

// Keep makes the declared pool what the configuration asks for and
// marks the pool boxes that answer ready. Pool boxes of a type no longer
// asked for, beyond the count, of another image or desktop setting, or
// made from an image that has since moved (a new build or pull under the
// same name) are removed (the reconciler then removes their containers).
// It returns how many pool boxes are not ready yet.
func (k Keeper) Keep(ctx context.Context) (int, error) {
	changed, err := k.declare(ctx)
	if err != nil {
		return 0, err
	}
	if changed {
		if _, err := k.Rec.Run(ctx); err != nil {
			return 0, err
		}
	}
	return k.probe(ctx)
}

func (k Keeper) declare(ctx context.Context) (bool, error) {
	pool, err := k.Store.ListPool()
	if err != nil {
		return false, err
	}
	ns, err := k.Store.ListNodes()
	if err != nil {
		return false, err
	}
	own, err := k.ownPools(ns)
	if err != nil {
		return false, err
	}
	want := 0
	for _, n := range k.Cfg.WarmPool {
		want += n
	}
	for _, types := range own {
		for _, n := range types {
			want += n
		}
	}
	if want == 0 && len(pool) == 0 {
		return false, nil // no pool (nor the image to look at)
	}
	imageID := ""
	if driver.ImageID.Has(k.Driver) {
		id, err := driver.ImageID.Do(ctx, k.Driver, k.Cfg.Image)
		if err != nil {
			return false, err
		}
		imageID = id
	}
	// Each pool box counts first towards its server's own pool, then
	// towards warm_pool's (wherever it is); one beyond both goes.
	haveOwn := map[string]map[string]int{}
	haveAny := map[string]int{}
	var drop []string
	for _, p := range pool {
		stale := p.Image != k.Cfg.Image || p.Desktop != k.Cfg.DesktopDefault || (imageID != "" && p.ImageID != imageID)
		switch {
		case stale:
			drop = append(drop, p.Key)
		case haveOwn[p.Node][p.Type] < own[p.Node][p.Type]:
			if haveOwn[p.Node] == nil {
				haveOwn[p.Node] = map[string]int{}
			}
			haveOwn[p.Node][p.Type]++
		case haveAny[p.Type] < k.Cfg.WarmPool[p.Type]:
			haveAny[p.Type]++
		default:
			drop = append(drop, p.Key)
		}
	}
	// What to add: on a server ("": any, where there is most room), of a
	// type, how many.
	type addition struct {
		node, typ string
		n         int
	}
	var add []addition
	if imageID != "" { // no image, no pool boxes (and no box at all)
		for _, node := range slices.Sorted(maps.Keys(own)) {
			if _, err := k.Core.Wanted(k.Core.NodeDisplay(node), ns); err != nil {
				continue // down or drained: its own pool waits for it
			}
			for _, t := range slices.Sorted(maps.Keys(own[node])) {
				if n := own[node][t] - haveOwn[node][t]; n > 0 {
					add = append(add, addition{k.Core.NodeDisplay(node), t, n})
				}
			}
		}
		for _, t := range slices.Sorted(maps.Keys(k.Cfg.WarmPool)) {
			if n := k.Cfg.WarmPool[t] - haveAny[t]; n > 0 {
				add = append(add, addition{"", t, n})
			}
		}
	}
	if len(drop) == 0 && len(add) == 0 {
		return false, nil
	}
	if len(add) > 0 {
		// New pool boxes (their engine work, their desktops starting)
		// wait for a lull in the requests people wait on.
		if waited := k.Fore.Lull(ctx, lullQuiet, lullMax); waited > 0 {
			k.Log.Debug("warm pool waited for a lull", "waited", waited)
		}
	}
	added := 0
	err = k.Store.Declare(func(tx *store.Tx) error {
		added = 0
		for _, k := range drop {
			if err := tx.RemovePool(k); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		for _, a := range add {
			for range a.n {
				uid := store.NewUID()
				p := store.PoolBox{Key: "pool-" + uid, UID: uid, Type: a.typ, Image: k.Cfg.Image, ImageID: imageID,
					Desktop: k.Cfg.DesktopDefault, Created: k.Core.Time()}
				b := reconcile.PoolAsBox(p)
				if err := k.Core.PlaceOn(tx, &b, a.node); err != nil {
					if a.node != "" {
						// Gone down or drained since: its own pool waits
						// until it takes boxes again.
						k.Log.Debug("warm pool: not on this server now", "node", a.node, "err", err)
						break
					}
					return err
				}
				p.IP, p.Node = b.IP, b.Node
				if err := tx.AddPool(p); err != nil {
					return err
				}
				added++
			}
		}
		return nil
	})
	if err == nil {
		k.Log.Info("warm pool", "added", added, "removed", len(drop))
	}
	return err == nil && (added > 0 || len(drop) > 0), err
}

// ownPools is each server's own warm pool (SetNodePool) that is kept now:
// a type this server knows, on a server that joined (of ns).
func (k Keeper) ownPools(ns []store.Node) (map[string]map[string]int, error) {
	all, err := k.Store.NodePools()
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]int{}
	for node, types := range all {
		if node != "" && !slices.ContainsFunc(ns, func(n store.Node) bool { return n.Name == node }) {
			continue
		}
		for t, n := range types {
			if _, ok := k.Cfg.Types[t]; ok && n > 0 {
				if out[node] == nil {
					out[node] = map[string]int{}
				}
				out[node][t] = n
			}
		}
	}
	return out, nil
}

// probe runs a command in each pool box not yet ready whose container
// runs (and, with a desktop, asks its X server), starts the process of
// its first command ahead (warmExec), and marks those that answer ready;
// a ready one whose container no longer runs is not ready until it
// answers again. It returns how many are not ready.
func (k Keeper) probe(ctx context.Context) (int, error) {
	pool, err := k.Store.ListPool()
	if err != nil {
		return 0, err
	}
	k.forgetCold(pool)
	if len(pool) == 0 {
		return 0, nil
	}
	obs, err := k.Driver.Boxes(ctx)
	if err != nil {
		return 0, err
	}
	running := map[string]bool{}
	for _, o := range obs {
		running[o.Name] = o.Running
	}
	waiting := 0
	for _, p := range pool {
		if !running[p.Key] {
			waiting++
			if p.Ready {
				if err := k.Store.SetPoolReady(p.Key, false); err != nil {
					return waiting, err
				}
			}
			continue
		}
		if p.Ready {
			k.warmExec(ctx, p.Key, false) // one a restart of paddockd ended
			continue
		}
		cmd := []string{"true"}
		var env []string
		if p.Desktop {
			cmd, env = []string{"xdpyinfo"}, []string{"DISPLAY=" + driver.Display}
		}
		pctx, cancel := context.WithTimeout(ctx, poolProbeTimeout)
		code, err := k.Driver.Exec(pctx, p.Key, driver.ExecSpec{Cmd: cmd, Env: env, Stdout: io.Discard, Stderr: io.Discard})
		cancel()
		if err != nil || code != 0 {
			waiting++
			continue
		}
		// Warm before ready: a box claimed has its first command's
		// process already started.
		k.warmExec(ctx, p.Key, true)
		if err := k.Store.SetPoolReady(p.Key, true); err != nil {
			return waiting, fmt.Errorf("pool box %s: %w", p.Key, err)
		}
		k.Log.Info("warm pool box ready", "key", p.Key, "type", p.Type, "took", k.Core.Time().Sub(p.Created).Round(time.Millisecond))
	}
	return waiting, nil
}

// warmExec has the driver start, in a ready pool box, the process that
// will start its commands (driver.ExecWarmer), so that a claimed box's
// first command does not wait for the runtime. A box that cannot have
// one is said once, when its start fails, and not asked about again:
// the driver keeps a failed start's error a while and gives it again,
// and each pool pass would log it again (on another server, after a
// round trip to its agent). Its commands start as usual. That it has
// one is said when the box becomes ready (its readiness probe may have
// had it started: keepWarm), and after that only when one was started.
func (k Keeper) warmExec(ctx context.Context, key string, becameReady bool) {
	if !driver.WarmExec.Has(k.Driver) {
		return
	}
	k.Cold.mu.Lock()
	cold := k.Cold.keys[key]
	k.Cold.mu.Unlock()
	if cold {
		return
	}
	// Its readiness probe may have had one started already (keepWarm).
	started, err := driver.WarmExec.Do(ctx, k.Driver, key)
	if err == nil && (started || becameReady) {
		k.Log.Info("warm pool box: the process that starts its commands started ahead", "key", key)
	}
	if err != nil && ctx.Err() == nil {
		k.Cold.mu.Lock()
		if k.Cold.keys == nil {
			k.Cold.keys = map[string]bool{}
		}
		k.Cold.keys[key] = true
		k.Cold.mu.Unlock()
		k.Log.Warn("warm pool box: its commands will start as usual", "key", key, "err", err)
	}
}

// forgetCold keeps Cold to the pool boxes there are.
func (k Keeper) forgetCold(pool []store.PoolBox) {
	k.Cold.mu.Lock()
	defer k.Cold.mu.Unlock()
	for key := range k.Cold.keys {
		if !slices.ContainsFunc(pool, func(p store.PoolBox) bool { return p.Key == key }) {
			delete(k.Cold.keys, key)
		}
	}
}

// Status says how many pool boxes of each type are ready and how many
// the configuration asks for, e.g. "small: 2 of 2 ready" ("" with no pool).
func (k Keeper) Status() (string, error) {
	pool, err := k.Store.ListPool()
	if err != nil {
		return "", err
	}
	ready := map[string]int{}
	for _, p := range pool {
		if p.Ready {
			ready[p.Type]++
		}
	}
	// What is kept: warm_pool's, and each server's own.
	want := map[string]int{}
	maps.Copy(want, k.Cfg.WarmPool)
	ns, err := k.Store.ListNodes()
	if err != nil {
		return "", err
	}
	own, err := k.ownPools(ns)
	if err != nil {
		return "", err
	}
	for _, types := range own {
		for t, n := range types {
			want[t] += n
		}
	}
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(want)) {
		if n := want[t]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d of %d ready", t, ready[t], n))
		}
	}
	return strings.Join(parts, ", "), nil
}
