package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/placement"
	"github.com/paddock-dev/paddock/appliance/reconcile"
	"github.com/paddock-dev/paddock/appliance/store"
)

// The warm pool.
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

// poolProbeTimeout bounds one readiness probe of a pool box.
const poolProbeTimeout = 10 * time.Second

// poolFits says whether a new box can be claimed from the pool: requests
// for another image, for drives or from a snapshot are made cold.
// (Whether a pool box of its type is ready, here or on the server it
// asks for, is the claim's to find.)
func (s *Service) poolFits(b store.Box) bool {
	return b.Image == s.Cfg.Image && b.Desktop == s.Cfg.DesktopDefault && len(b.Mounts) == 0 && b.From == ""
}

// TakePool, in the transaction that declares b, gives b a ready pool
// box's container: its engine name, id and address. False when none fits
// or is ready (b is then made cold). want is the server the user asked
// for ("": any).
func (s *Service) TakePool(tx *store.Tx, b *store.Box, want string) (bool, error) {
	if !s.poolFits(*b) {
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
		n, err := s.Wanted(want, ns)
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

// settleClaim finishes a claim once it is declared: the box's rules and
// hostname, then its observed state. If that cannot be done in place, a
// reconcile does it. The pool is refilled after the answer.
func (s *Service) settleClaim(ctx context.Context, b store.Box) error {
	defer s.NotePoolChange()
	if err := s.Rec.Claimed(ctx, b); err != nil {
		s.Log.Warn("claimed box: finishing it with a reconcile", "box", b.Name, "err", err)
		return s.ReconcileFor(ctx, "box."+b.Name)
	}
	s.Log.Info("box claimed from the warm pool", "box", b.Name, "key", b.Engine)
	s.foregroundClaimed(ctx, b)
	return s.Store.SetObserved(b.Name, "running", "")
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
func (s *Service) foregroundClaimed(ctx context.Context, b store.Box) {
	fg, ok := s.Driver.(driver.Foregrounder)
	if !ok {
		return
	}
	ctx = context.WithoutCancel(ctx)
	go func() {
		s.Fore.Lull(ctx, claimShareQuiet, claimShareMax)
		if err := fg.Foreground(ctx, b.Key()); err != nil {
			s.Log.Warn("claimed box keeps a pool box's CPU share", "box", b.Name, "err", err)
		}
	}()
}

// ForegroundClaimed gives every running box claimed from the pool a box's
// CPU share if it still has a pool box's: one claimed just before paddockd
// stopped, before foregroundClaimed's update ran, would keep the small
// share for good. paddockd runs it once at its start; a box that has the
// usual share is only looked at.
func (s *Service) ForegroundClaimed(ctx context.Context) {
	fg, ok := s.Driver.(driver.Foregrounder)
	if !ok {
		return
	}
	boxes, err := s.Store.ListBoxes()
	if err != nil {
		s.Log.Warn("claimed boxes' CPU shares not checked", "err", err)
		return
	}
	for _, b := range boxes {
		// A claimed box runs in its pool box's container (Engine).
		if b.Engine == "" || b.Observed != "running" {
			continue
		}
		if err := fg.Foreground(ctx, b.Key()); err != nil {
			s.Log.Warn("claimed box keeps a pool box's CPU share", "box", b.Name, "err", err)
		}
	}
}

// NotePoolChange tells the pool's keeper (PoolChanged) that what it
// keeps changed.
func (s *Service) NotePoolChange() {
	if s.PoolChanged != nil {
		s.PoolChanged()
	}
}

// KeepPool makes the declared pool what the configuration asks for and
// marks the pool boxes that answer ready. Pool boxes of a type no longer
// asked for, beyond the count, of another image or desktop setting, or
// made from an image that has since moved (a new build or pull under the
// same name) are removed (the reconciler then removes their containers).
// It returns how many pool boxes are not ready yet.
func (s *Service) KeepPool(ctx context.Context) (int, error) {
	changed, err := s.declarePool(ctx)
	if err != nil {
		return 0, err
	}
	if changed {
		if _, err := s.Rec.Run(ctx); err != nil {
			return 0, err
		}
	}
	return s.probePool(ctx)
}

func (s *Service) declarePool(ctx context.Context) (bool, error) {
	pool, err := s.Store.ListPool()
	if err != nil {
		return false, err
	}
	ns, err := s.Store.ListNodes()
	if err != nil {
		return false, err
	}
	own, err := s.ownPools(ns)
	if err != nil {
		return false, err
	}
	want := 0
	for _, n := range s.Cfg.WarmPool {
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
	if ider, ok := s.Driver.(driver.ImageIDer); ok {
		id, err := ider.ImageID(ctx, s.Cfg.Image)
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
		stale := p.Image != s.Cfg.Image || p.Desktop != s.Cfg.DesktopDefault || (imageID != "" && p.ImageID != imageID)
		switch {
		case stale:
			drop = append(drop, p.Key)
		case haveOwn[p.Node][p.Type] < own[p.Node][p.Type]:
			if haveOwn[p.Node] == nil {
				haveOwn[p.Node] = map[string]int{}
			}
			haveOwn[p.Node][p.Type]++
		case haveAny[p.Type] < s.Cfg.WarmPool[p.Type]:
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
			if _, err := s.Wanted(s.NodeDisplay(node), ns); err != nil {
				continue // down or drained: its own pool waits for it
			}
			for _, t := range slices.Sorted(maps.Keys(own[node])) {
				if n := own[node][t] - haveOwn[node][t]; n > 0 {
					add = append(add, addition{s.NodeDisplay(node), t, n})
				}
			}
		}
		for _, t := range slices.Sorted(maps.Keys(s.Cfg.WarmPool)) {
			if n := s.Cfg.WarmPool[t] - haveAny[t]; n > 0 {
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
		if waited := s.Fore.Lull(ctx, lullQuiet, lullMax); waited > 0 {
			s.Log.Debug("warm pool waited for a lull", "waited", waited)
		}
	}
	added := 0
	err = s.Store.Declare(func(tx *store.Tx) error {
		added = 0
		for _, k := range drop {
			if err := tx.RemovePool(k); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		for _, a := range add {
			for range a.n {
				uid := store.NewUID()
				p := store.PoolBox{Key: "pool-" + uid, UID: uid, Type: a.typ, Image: s.Cfg.Image, ImageID: imageID,
					Desktop: s.Cfg.DesktopDefault, Created: s.now()}
				b := reconcile.PoolAsBox(p)
				if err := s.PlaceOn(tx, &b, a.node); err != nil {
					if a.node != "" {
						// Gone down or drained since: its own pool waits
						// until it takes boxes again.
						s.Log.Debug("warm pool: not on this server now", "node", a.node, "err", err)
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
		s.Log.Info("warm pool", "added", added, "removed", len(drop))
	}
	return err == nil && (added > 0 || len(drop) > 0), err
}

// ownPools is each server's own warm pool (SetNodePool) that is kept now:
// a type this server knows, on a server that joined (of ns).
func (s *Service) ownPools(ns []store.Node) (map[string]map[string]int, error) {
	all, err := s.Store.NodePools()
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]int{}
	for node, types := range all {
		if node != "" && !slices.ContainsFunc(ns, func(n store.Node) bool { return n.Name == node }) {
			continue
		}
		for t, n := range types {
			if _, ok := s.Cfg.Types[t]; ok && n > 0 {
				if out[node] == nil {
					out[node] = map[string]int{}
				}
				out[node][t] = n
			}
		}
	}
	return out, nil
}

// probePool runs a command in each pool box not yet ready whose container
// runs (and, with a desktop, asks its X server), starts the process of
// its first command ahead (warmExec), and marks those that answer ready;
// a ready one whose container no longer runs is not ready until it
// answers again. It returns how many are not ready.
func (s *Service) probePool(ctx context.Context) (int, error) {
	pool, err := s.Store.ListPool()
	if err != nil {
		return 0, err
	}
	s.forgetCold(pool)
	if len(pool) == 0 {
		return 0, nil
	}
	obs, err := s.Driver.Boxes(ctx)
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
				if err := s.Store.SetPoolReady(p.Key, false); err != nil {
					return waiting, err
				}
			}
			continue
		}
		if p.Ready {
			s.warmExec(ctx, p.Key, false) // one a restart of paddockd ended
			continue
		}
		cmd := []string{"true"}
		var env []string
		if p.Desktop {
			cmd, env = []string{"xdpyinfo"}, []string{"DISPLAY=" + Display}
		}
		pctx, cancel := context.WithTimeout(ctx, poolProbeTimeout)
		code, err := s.Driver.Exec(pctx, p.Key, driver.ExecSpec{Cmd: cmd, Env: env, Stdout: io.Discard, Stderr: io.Discard})
		cancel()
		if err != nil || code != 0 {
			waiting++
			continue
		}
		// Warm before ready: a box claimed has its first command's
		// process already started.
		s.warmExec(ctx, p.Key, true)
		if err := s.Store.SetPoolReady(p.Key, true); err != nil {
			return waiting, fmt.Errorf("pool box %s: %w", p.Key, err)
		}
		s.Log.Info("warm pool box ready", "key", p.Key, "type", p.Type, "took", s.now().Sub(p.Created).Round(time.Millisecond))
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
func (s *Service) warmExec(ctx context.Context, key string, becameReady bool) {
	w, ok := s.Driver.(driver.ExecWarmer)
	if !ok {
		return
	}
	s.memMu.Lock()
	cold := s.coldPool[key]
	s.memMu.Unlock()
	if cold {
		return
	}
	// Its readiness probe may have had one started already (keepWarm).
	started, err := w.WarmExec(ctx, key)
	if err == nil && (started || becameReady) {
		s.Log.Info("warm pool box: the process that starts its commands started ahead", "key", key)
	}
	if err != nil && ctx.Err() == nil {
		s.memMu.Lock()
		if s.coldPool == nil {
			s.coldPool = map[string]bool{}
		}
		s.coldPool[key] = true
		s.memMu.Unlock()
		s.Log.Warn("warm pool box: its commands will start as usual", "key", key, "err", err)
	}
}

// forgetCold keeps coldPool to the pool boxes there are.
func (s *Service) forgetCold(pool []store.PoolBox) {
	s.memMu.Lock()
	defer s.memMu.Unlock()
	for k := range s.coldPool {
		if !slices.ContainsFunc(pool, func(p store.PoolBox) bool { return p.Key == k }) {
			delete(s.coldPool, k)
		}
	}
}

// PoolStatus says how many pool boxes of each type are ready and how many
// the configuration asks for, e.g. "small: 2 of 2 ready" ("" with no pool).
func (s *Service) PoolStatus() (string, error) {
	pool, err := s.Store.ListPool()
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
	maps.Copy(want, s.Cfg.WarmPool)
	ns, err := s.Store.ListNodes()
	if err != nil {
		return "", err
	}
	own, err := s.ownPools(ns)
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

// withoutPool drops what a run did to the warm pool: nobody's boxes, and
// not news to anyone.
func withoutPool(res reconcile.Result) reconcile.Result {
	out := reconcile.Result{Errors: res.Errors}
	for _, c := range res.Changes {
		if !c.Pool {
			out.Changes = append(out.Changes, c)
		}
	}
	return out
}
