package reconcile

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/cluster"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
	"github.com/paddock-dev/paddock/appliance/store"
)

// unlisted is a server whose lists fail (it does not answer them) while
// the calls that make things would still go through: the worst case for
// a reconciler that took a list it could not make for an empty server.
type unlisted struct{ *fake.Driver }

var errNoAnswer = errors.New("no answer")

func (unlisted) Boxes(context.Context) ([]driver.BoxState, error)          { return nil, errNoAnswer }
func (unlisted) Volumes(context.Context) ([]driver.VolumeRef, error)       { return nil, errNoAnswer }
func (unlisted) Snapshots(context.Context) ([]driver.SnapshotState, error) { return nil, errNoAnswer }

// What is on a server that does not answer is left alone: its boxes are
// neither made again nor touched, their drives neither, and they say
// "node down"; the other servers' boxes are reconciled as ever.
func TestNothingIsMadeOnAServerThatIsDown(t *testing.T) {
	rec, _ := newRec(t)
	here, there := fake.New("img"), fake.New("img")
	rec.Driver = &cluster.Driver{Nodes: map[string]driver.Driver{"": here, "n2": unlisted{there}}, Where: func(kind, name string) (string, error) {
		n, err := rec.Store.Where(kind, name)
		if errors.Is(err, store.ErrNotFound) {
			return "", driver.ErrNotFound
		}
		return n, err
	}}
	err := rec.Store.Declare(func(tx *store.Tx) error {
		if err := tx.CreateDrive(store.Drive{Name: "data", State: "ready", Created: time.Now(), Node: "n2"}); err != nil {
			return err
		}
		if err := tx.CreateBox(store.Box{Name: "far", Type: "small", Image: "img", Desired: "running", Created: time.Now(), Node: "n2",
			Mounts: []store.Mount{{Drive: "data", Path: "/mnt/data"}}}); err != nil {
			return err
		}
		return tx.CreateBox(store.Box{Name: "near", Type: "small", Image: "img", Desired: "running", Created: time.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(there.Ops) != 0 {
		t.Fatalf("calls to the server that is down: %v", there.Ops)
	}
	far, _ := rec.Store.GetBox("far")
	near, _ := rec.Store.GetBox("near")
	if far.Observed != "node down" || near.Observed != "running" {
		t.Fatalf("far is %q, near is %q", far.Observed, near.Observed)
	}
}

// flapping is an engine that did not answer at a pass's start and
// answers its lists a moment later (restarting).
type flapping struct{ *fake.Driver }

func (flapping) Prepare(context.Context) error {
	return &driver.NodesDown{Nodes: map[string]error{"": errNoAnswer}}
}

// A pass that found the engine down leaves its boxes as they are even
// if the engine answers its lists later in the pass: they are neither
// removed as undeclared nor made again (CI's TestEngineRestart: a box's
// container removed and made anew, its files lost).
func TestAServerBackMidPassKeepsItsBoxes(t *testing.T) {
	rec, drv := newRec(t)
	err := rec.Store.Declare(func(tx *store.Tx) error {
		return tx.CreateBox(store.Box{Name: "kept", Type: "small", Image: "img", Desired: "running", Created: time.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := len(drv.Ops)
	rec.Driver = flapping{drv}
	if _, err := rec.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ops := drv.Ops[before:]; len(ops) != 0 {
		t.Fatalf("a pass that found the engine down changed it: %v", ops)
	}
}
