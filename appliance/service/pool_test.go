package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
	"github.com/paddock-dev/paddock/appliance/reconcile"
	"github.com/paddock-dev/paddock/appliance/store"
)

// poolService is a service with a warm pool of n small boxes, filled and
// ready; commands "run" in a box that runs.
func poolService(t *testing.T, n int) (*Service, *fake.Driver) {
	t.Helper()
	s, drv := newService(t)
	s.Cfg.WarmPool = map[string]int{"small": n}
	s.Cfg.DesktopDefault = false
	drv.ExecFunc = func(box string, _ driver.ExecSpec) (int, error) {
		if drv.Hostname(box) == "" {
			return -1, fmt.Errorf("%w: box %s does not run", driver.ErrNotFound, box)
		}
		return 0, nil
	}
	fillPool(t, s, n)
	return s, drv
}

// fillPool runs KeepPool until the pool has n ready boxes.
func fillPool(t *testing.T, s *Service, n int) {
	t.Helper()
	for range 3 {
		if _, err := s.KeepPool(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := s.PoolStatus(); st != fmt.Sprintf("small: %d of %d ready", n, n) {
		t.Fatalf("pool: %s", st)
	}
}

func engineBoxes(t *testing.T, drv *fake.Driver) map[string]driver.BoxState {
	t.Helper()
	bs, err := drv.Boxes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]driver.BoxState{}
	for _, b := range bs {
		m[b.Name] = b
	}
	return m
}

// A claimed box runs in the pool box's container, made and started
// before the request: the claim makes and starts nothing, gives the box
// its own hostname, and the next reconcile has nothing to change. The
// box then lives as any box does: its hostname comes back after a stop
// and start, and removing it removes the container.
func TestClaimKeepsThePoolBoxContainer(t *testing.T) {
	s, drv := poolService(t, 1)
	ctx := context.Background()
	pool, _ := s.Store.ListPool()
	key := pool[0].Key
	before := len(drv.Ops)

	b, err := s.CreateBox(ctx, api.BoxPost{Name: "web", Env: map[string]string{"A": "1"}, TTL: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != "running" || b.IP != pool[0].IP {
		t.Fatalf("claimed box: status %s, ip %s; want running, %s", b.Status, b.IP, pool[0].IP)
	}
	sb, _ := s.Store.GetBox("web")
	if sb.Engine != key || sb.UID != pool[0].UID {
		t.Fatalf("box engine %q uid %q, want the pool box's %q %q", sb.Engine, sb.UID, key, pool[0].UID)
	}
	if ops := drv.Ops[before:]; !slices.Equal(ops, []string{"hostname " + key + " web"}) {
		t.Fatalf("the claim did %v to the engine, want only the hostname", ops)
	}
	if got := drv.Hostname(key); got != "web" {
		t.Fatalf("hostname %q, want web", got)
	}
	if left, _ := s.Store.ListPool(); len(left) != 0 {
		t.Fatalf("pool box still declared after its claim: %v", left)
	}
	res, err := s.Rec.Run(ctx)
	if err != nil || len(res.Changes) != 0 {
		t.Fatalf("reconcile after a claim: %v %v, want no change", res.Changes, err)
	}
	fillPool(t, s, 1)
	if n := len(engineBoxes(t, drv)); n != 2 {
		t.Fatalf("%d containers after the refill, want the claimed box and a new pool box", n)
	}

	// What the API says of it is what it says of any box, and the pool is
	// in no list.
	list, err := s.ListBoxes(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "web" {
		t.Fatalf("list: %v %v", list, err)
	}

	if _, err := s.StopBox(ctx, "web", "stop"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartBox(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if got := drv.Hostname(key); got != "web" {
		t.Fatalf("hostname after a stop and start %q, want web", got)
	}
	if err := s.RemoveBox(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if _, ok := engineBoxes(t, drv)[key]; ok {
		t.Fatal("the claimed box's container outlived the box")
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "web"}); err != nil {
		t.Fatalf("the name of a removed claimed box: %v", err)
	}
}

// Requests the pool cannot serve are made cold: another type, another
// image, a drive, a desktop when the pool has none; so is every request
// when no pool box is ready.
func TestColdWhenThePoolDoesNotFit(t *testing.T) {
	s, _ := poolService(t, 1)
	ctx := context.Background()
	if _, err := drivesOf(s).Create(ctx, api.DrivePost{Name: "dr"}); err != nil {
		t.Fatal(err)
	}
	yes := true
	for i, p := range []api.BoxPost{
		{Type: "medium"},
		{Image: "img2"},
		{Mounts: []api.Mount{{Drive: "dr", Path: "/mnt/dr"}}},
		{Desktop: &yes},
	} {
		p.Name = fmt.Sprintf("cold%d", i)
		if _, err := s.CreateBox(ctx, p); err != nil {
			t.Fatal(err)
		}
		if b, _ := s.Store.GetBox(p.Name); b.Engine != "" {
			t.Errorf("%+v was claimed from the pool", p)
		}
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "warm"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "after"}); err != nil {
		t.Fatal(err)
	}
	warm, _ := s.Store.GetBox("warm")
	after, _ := s.Store.GetBox("after")
	if warm.Engine == "" || after.Engine != "" {
		t.Fatalf("warm engine %q (want the pool's), after %q (want its own: the pool is empty)", warm.Engine, after.Engine)
	}
}

// A claim cut off just after it is declared (paddockd died) leaves the
// user's box, not the pool box: after a restart, the first reconcile
// gives the box its hostname and its policy without touching its
// container, and the pool is refilled. No box is lost or given twice.
func TestClaimCutOffIsFinishedByTheNextRun(t *testing.T) {
	s, drv := poolService(t, 2)
	ctx := context.Background()
	pool, _ := s.Store.ListPool()
	s.claimCut = func() error { return errors.New("cut") }
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "a", Policy: "deny-all"}); err == nil {
		t.Fatal("claim was not cut")
	}
	a, err := s.Store.GetBox("a")
	if err != nil || a.Engine != pool[0].Key {
		t.Fatalf("after the cut: box %+v %v, want declared on %s", a, err, pool[0].Key)
	}
	left, _ := s.Store.ListPool()
	if len(left) != 1 || left[0].Key != pool[1].Key {
		t.Fatalf("pool after the cut: %v, want only %s", left, pool[1].Key)
	}

	// A new paddockd over the same state and engine.
	rec := &reconcile.Reconciler{Store: s.Store, Driver: drv, Types: s.Rec.Types, Log: s.Log}
	s2 := &Service{Store: s.Store, Rec: rec, Driver: drv, Cfg: s.Cfg, Log: s.Log, Life: ctx}
	before := len(drv.Ops)
	if _, err := rec.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if ops := drv.Ops[before:]; !slices.Equal(ops, []string{"hostname " + a.Engine + " a"}) {
		t.Fatalf("the run after the cut did %v, want only the hostname", ops)
	}
	if b, _ := s2.GetBox("a"); b.Status != "running" {
		t.Fatalf("box a is %s, want running", b.Status)
	}
	fillPool(t, s2, 2)
	keys := map[string]int{}
	boxes, _ := s2.Store.ListBoxes()
	for _, b := range boxes {
		keys[b.Key()]++
	}
	pl, _ := s2.Store.ListPool()
	for _, p := range pl {
		keys[p.Key]++
	}
	eng := engineBoxes(t, drv)
	for k, n := range keys {
		if n != 1 {
			t.Errorf("%s declared %d times", k, n)
		}
		if _, ok := eng[k]; !ok {
			t.Errorf("%s has no container", k)
		}
	}
	if len(eng) != len(keys) || len(keys) != 3 {
		t.Fatalf("%d containers for %d declared boxes, want 3 and 3", len(eng), len(keys))
	}
}

// A pool box made from an image that moved since (a new build under the
// same name), or of a type or desktop setting no longer asked for, is
// swept and made again; a pool of 0 is none.
func TestPoolFollowsItsImageAndConfig(t *testing.T) {
	s, drv := poolService(t, 2)
	ctx := context.Background()
	old, _ := s.Store.ListPool()
	drv.SetImageID("img", "id-new")
	fillPool(t, s, 2)
	now, _ := s.Store.ListPool()
	for _, p := range now {
		if p.ImageID != "id-new" || slices.ContainsFunc(old, func(o store.PoolBox) bool { return o.Key == p.Key }) {
			t.Fatalf("pool box %s of image %s kept after the image moved", p.Key, p.ImageID)
		}
	}
	if n := len(engineBoxes(t, drv)); n != 2 {
		t.Fatalf("%d containers, want the 2 new pool boxes", n)
	}
	s.Cfg.WarmPool = map[string]int{"small": 0}
	if _, err := s.KeepPool(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(engineBoxes(t, drv)); n != 0 {
		t.Fatalf("%d containers with warm_pool 0", n)
	}
	if st, _ := s.PoolStatus(); st != "" {
		t.Fatalf("pool status %q with none", st)
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "x"}); err != nil || mustBox(t, s, "x").Key() != "x" {
		t.Fatalf("box without a pool: %v", err)
	}
}

func mustBox(t *testing.T, s *Service, name string) store.Box {
	t.Helper()
	b, err := s.Store.GetBox(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A Boxfile's new box that fits the pool takes a pool box's container
// too: the apply's reconcile gives it its hostname, and changes nothing
// else in the engine.
func TestBoxfileApplyClaims(t *testing.T) {
	s, drv := poolService(t, 1)
	pool, _ := s.Store.ListPool()
	before := len(drv.Ops)
	planApply(t, s, api.PlanRequest{Spec: api.ProjectSpec{Project: "p", Boxes: []api.BoxSpec{{Name: "web"}}}})
	if b := mustBox(t, s, "web"); b.Engine != pool[0].Key {
		t.Fatalf("Boxfile box on engine name %q, want the pool box's %s", b.Engine, pool[0].Key)
	}
	if ops := drv.Ops[before:]; !slices.Equal(ops, []string{"hostname " + pool[0].Key + " web"}) {
		t.Fatalf("the apply did %v, want only the hostname", ops)
	}
}

// A pool box whose container stopped is not claimed until it runs and
// answers again.
func TestStoppedPoolBoxIsNotClaimed(t *testing.T) {
	s, drv := poolService(t, 1)
	ctx := context.Background()
	pool, _ := s.Store.ListPool()
	s.Rec.Run(ctx) // observed, as a running daemon has
	if err := drv.StopBox(ctx, pool[0].Key); err != nil {
		t.Fatal(err)
	}
	if _, err := s.KeepPool(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if mustBox(t, s, "a").Engine != "" {
		t.Fatal("a stopped pool box was claimed")
	}
	fillPool(t, s, 1) // the reconciler starts it; it answers
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if mustBox(t, s, "b").Engine != pool[0].Key {
		t.Fatal("the pool box was not claimed once it ran again")
	}
}

// noWarm is a driver whose boxes cannot have a warm exec (an image
// without python3): it counts the tries.
type noWarm struct {
	*fake.Driver
	mu    sync.Mutex
	tries map[string]int
}

func (n *noWarm) WarmExec(_ context.Context, box string) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.tries[box]++
	return false, errors.New("no warm exec (python3 in the image?)")
}

func (n *noWarm) DropWarm(string) {}

// A pool box that cannot have a warm exec is tried once, not at each
// pass of the pool (each try is an exec in it, and a warning): passes
// that refill the pool after claims look at every pool box.
func TestPoolTriesAWarmExecOnce(t *testing.T) {
	s, drv := poolService(t, 2)
	nw := &noWarm{Driver: drv, tries: map[string]int{}}
	s.Driver = nw
	ctx := context.Background()
	for i := range 4 {
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: fmt.Sprintf("c%d", i)}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := s.KeepPool(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if len(nw.tries) < 4 {
		t.Fatalf("warm execs tried in %d pool boxes, want every new one: %v", len(nw.tries), nw.tries)
	}
	for key, n := range nw.tries {
		if n != 1 {
			t.Fatalf("pool box %s: %d tries of a warm exec, want 1 (%v)", key, n, nw.tries)
		}
	}
}
