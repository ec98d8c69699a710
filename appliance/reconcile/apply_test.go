package reconcile

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
	"github.com/paddock-dev/paddock/appliance/store"
)

func newRec(t *testing.T) (*Reconciler, *fake.Driver) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	drv := fake.New("img")
	return &Reconciler{Store: st, Driver: drv, Types: map[string]BoxType{"small": {CPUs: 1, MemoryMiB: 512}}}, drv
}

func declare(t *testing.T, st *store.Store, names ...string) {
	t.Helper()
	for _, n := range names {
		err := st.Declare(func(tx *store.Tx) error {
			return tx.CreateBox(store.Box{Name: n, Type: "small", Image: "img", Desired: "running", Created: time.Now()})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestApplyConvergesAndIsIdempotent(t *testing.T) {
	rec, drv := newRec(t)
	declare(t, rec.Store, "a", "b")
	res, err := rec.Run(context.Background())
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	if len(res.Changes) != 6 {
		t.Fatalf("first run: %d changes, want 6 (volume, create, start for two boxes)", len(res.Changes))
	}
	ops := len(drv.Ops)
	res, err = rec.Run(context.Background())
	if err != nil || len(res.Changes) != 0 || len(drv.Ops) != ops {
		t.Fatalf("second run changed something: %v %v", res.Changes, err)
	}
	b, _ := rec.Store.GetBox("a")
	if b.Observed != "running" {
		t.Fatalf("observed %q, want running", b.Observed)
	}
}

// A run that dies half way (the engine fails on the second box's start, as
// a crash would leave it) is finished by the next run.
func TestApplyRepairsAnInterruptedRun(t *testing.T) {
	rec, drv := newRec(t)
	declare(t, rec.Store, "a", "b")
	boom := errors.New("engine went away")
	drv.Fail = func(op string) error {
		if op == "start b" {
			return boom
		}
		return nil
	}
	res, err := rec.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.Errors["box.b"], boom) {
		t.Fatalf("errors %v, want box.b to fail", res.Errors)
	}
	b, _ := rec.Store.GetBox("b")
	if b.Observed != "error" || b.ObservedEr == "" {
		t.Fatalf("box b recorded as %q %q", b.Observed, b.ObservedEr)
	}
	drv.Fail = nil
	res, err = rec.Run(context.Background())
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	if got := render(res.Changes); got != "start-box box.b (container exited)" {
		t.Fatalf("repair run:\n%s", got)
	}
	b, _ = rec.Store.GetBox("b")
	if b.Observed != "running" || b.ObservedEr != "" {
		t.Fatalf("box b recorded as %q %q", b.Observed, b.ObservedEr)
	}
}

// A stop with a snapshot stops the box, then commits it stopped (the
// engine need not pause it).
func TestStopThenSnapshot(t *testing.T) {
	rec, drv := newRec(t)
	declare(t, rec.Store, "a")
	ctx := context.Background()
	if _, err := rec.Run(ctx); err != nil {
		t.Fatal(err)
	}
	err := rec.Store.Declare(func(tx *store.Tx) error {
		b, _ := tx.GetBox("a")
		b.Desired = "stopped"
		if err := tx.AddSnapshot(store.Snapshot{ID: "a-1", Box: "a", Reason: "stop", State: "pending", Created: time.Now()}); err != nil {
			return err
		}
		return tx.UpdateBox(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	drv.Ops = nil
	if res, err := rec.Run(ctx); err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	if got := drv.Ops; len(got) != 2 || got[0] != "stop a" || got[1] != "snapshot a-1" {
		t.Fatalf("ops %v, want stop then snapshot", got)
	}
	sn, _ := rec.Store.ListSnapshots("a")
	if len(sn) != 1 || sn[0].State != "ready" {
		t.Fatalf("snapshots %+v", sn)
	}
}

// A container removed outside Paddock is made again from the image; a box
// whose Boxfile push and setup had run goes back to waiting for them, since
// the new container has none of what they did. A box made from a snapshot
// keeps it.
func TestRemadeBoxWaitsForSetupAgain(t *testing.T) {
	rec, drv := newRec(t)
	ctx := context.Background()
	for _, b := range []store.Box{
		{Name: "fresh", Setup: "pending"},
		{Name: "plain"},
		{Name: "restored", Setup: "pending", From: "snap-1"},
	} {
		b.Type, b.Image, b.Desired, b.Created = "small", "img", "running", time.Now()
		if err := rec.Store.Declare(func(tx *store.Tx) error { return tx.CreateBox(b) }); err != nil {
			t.Fatal(err)
		}
	}
	drv.CreateBox(ctx, SpecFor(store.Box{Name: "src", Type: "small", Image: "img"}, rec.Types))
	if err := drv.Snapshot(ctx, "src", "snap-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Run(ctx); err != nil {
		t.Fatal(err)
	}
	// The first containers are made and their setup runs (the CLI reports it).
	for _, name := range []string{"fresh", "restored"} {
		err := rec.Store.Declare(func(tx *store.Tx) error {
			b, err := tx.GetBox(name)
			if err != nil {
				return err
			}
			if b.Setup != "pending" {
				t.Fatalf("box %s: setup %q after its first container, want pending", name, b.Setup)
			}
			b.Setup = "done"
			return tx.UpdateBox(b)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"fresh", "plain", "restored"} {
		if err := drv.RemoveBox(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	res, err := rec.Run(ctx)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	for name, want := range map[string]string{"fresh": "pending", "plain": "", "restored": "done"} {
		if b, _ := rec.Store.GetBox(name); b.Setup != want {
			t.Errorf("box %s: setup %q after its container was made again, want %q", name, b.Setup, want)
		}
	}
}

// removing is a driver that removes box victim (as another hand would)
// while it makes any other box.
type removing struct {
	*fake.Driver
	victim string
}

func (d removing) CreateBox(ctx context.Context, spec driver.BoxSpec) error {
	if err := d.Driver.CreateBox(ctx, spec); err != nil {
		return err
	}
	if spec.Name != d.victim {
		return d.Driver.RemoveBox(ctx, d.victim)
	}
	return nil
}

// keptWithSnapshot is a reconciler that has made box keep and taken its
// snapshot keep-1.
func keptWithSnapshot(t *testing.T) (*Reconciler, *fake.Driver) {
	t.Helper()
	rec, drv := newRec(t)
	ctx := context.Background()
	declare(t, rec.Store, "keep")
	if _, err := rec.Run(ctx); err != nil {
		t.Fatal(err)
	}
	err := rec.Store.Declare(func(tx *store.Tx) error {
		return tx.AddSnapshot(store.Snapshot{ID: "keep-1", Box: "keep", Reason: "user", State: "pending", Created: time.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return rec, drv
}

// A container removed by another hand while a run makes something else
// is found lost by the next run, which makes it again from the box's
// newest snapshot: the run it vanished in does not record the box as
// never made.
func TestContainerRemovedDuringARunComesBackFromItsSnapshot(t *testing.T) {
	rec, drv := keptWithSnapshot(t)
	ctx := context.Background()
	rec.Driver = removing{drv, "keep"}
	declare(t, rec.Store, "other")
	if _, err := rec.Run(ctx); err != nil { // makes other; keep vanishes meanwhile
		t.Fatal(err)
	}
	rec.Driver = drv
	if _, err := rec.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := rec.Store.GetBox("keep"); b.From != "keep-1" {
		t.Fatalf("keep made again from %q, want its snapshot keep-1", b.From)
	}
}

// beingRemoved is an engine on which another hand's removal of box
// victim's container has begun: the container is listed as "removing",
// and starting it fails, as Docker answers.
type beingRemoved struct {
	*fake.Driver
	victim string
}

func (d beingRemoved) Boxes(ctx context.Context) ([]driver.BoxState, error) {
	bs, err := d.Driver.Boxes(ctx)
	for i := range bs {
		if bs[i].Name == d.victim {
			bs[i].Running, bs[i].Status, bs[i].Pid = false, "removing", 0
		}
	}
	return bs, err
}

func (d beingRemoved) StartBox(ctx context.Context, name string) error {
	if name == d.victim {
		return fmt.Errorf("%w: container is marked for removal and cannot be started", driver.ErrInUse)
	}
	return d.Driver.StartBox(ctx, name)
}

// A container seen while another hand removes it is lost already: the
// box is made again from its newest snapshot, not from its image, though
// the run that saw it going failed to start it (and recorded an error).
func TestContainerSeenBeingRemovedComesBackFromItsSnapshot(t *testing.T) {
	rec, drv := keptWithSnapshot(t)
	ctx := context.Background()
	rec.Driver = beingRemoved{drv, "keep"}
	if _, err := rec.Run(ctx); err != nil {
		t.Fatal(err)
	}
	drv.RemoveBox(ctx, "keep") // the removal ends
	rec.Driver = drv
	if _, err := rec.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := rec.Store.GetBox("keep"); b.From != "keep-1" || b.Observed != "running" {
		t.Fatalf("keep made again from %q (%s), want its snapshot keep-1, running", b.From, b.Observed)
	}
}

// While people wait on a request, a run leaves the warm pool's changes to
// a later one and makes the declared boxes; once no one waits, the pool
// box is made.
func TestPoolYieldsToRequests(t *testing.T) {
	rec, drv := newRec(t)
	declare(t, rec.Store, "a")
	err := rec.Store.Declare(func(tx *store.Tx) error {
		return tx.AddPool(store.PoolBox{Key: "pool-1", UID: "u1", Type: "small", Image: "img", Created: time.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}
	busy := true
	rec.Yield = func() bool { return busy }
	running := func() map[string]bool {
		bs, err := drv.Boxes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, b := range bs {
			m[b.Name] = b.Running
		}
		return m
	}
	if _, err := rec.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := running(); !m["a"] || len(m) != 1 {
		t.Fatalf("with a request under way: %v (want box a alone)", m)
	}
	busy = false
	if _, err := rec.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := running(); !m["a"] || !m["pool-1"] {
		t.Fatalf("once no one waits: %v (want a and the pool box)", m)
	}
}

// A pass reads the declared state as of one moment: a pool box claimed
// while it reads (its row moved into the boxes table, in one transaction)
// is in one of the two lists, never in neither, where the pass would
// remove its container from under the box just claimed.
func TestLoadSeesAClaimWhole(t *testing.T) {
	rec, _ := newRec(t)
	st := rec.Store
	const n = 200
	key := func(i int) string { return fmt.Sprintf("pool-%03d", i) }
	err := st.Declare(func(tx *store.Tx) error {
		for i := range n {
			if err := tx.AddPool(store.PoolBox{Key: key(i), UID: key(i), Type: "small", Image: "img", Ready: true, Created: time.Now()}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	claims := make(chan error, 1)
	go func() {
		for i := range n {
			err := st.Declare(func(tx *store.Tx) error {
				p, err := tx.TakePool("small", "img", false)
				if err != nil {
					return err
				}
				return tx.CreateBox(store.Box{Name: fmt.Sprintf("b%03d", i), Engine: p.Key, UID: p.UID, Type: "small", Image: "img", Desired: "running", Created: time.Now()})
			})
			if err != nil {
				claims <- err
				return
			}
		}
		claims <- nil
	}()
	for loads := 0; ; loads++ {
		select {
		case err := <-claims:
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d loads beside %d claims", loads, n)
			return
		default:
		}
		d, _, err := rec.Load()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, b := range d.Boxes {
			seen[b.Spec.Name] = true
		}
		for i := range n {
			if !seen[key(i)] {
				t.Fatalf("load %d: %s is neither a pool box nor a box's container", loads, key(i))
			}
		}
	}
}
