package store

import (
	"errors"
	"net/netip"
	"testing"
	"time"
)

// Engine names are one namespace: a pool box's key is no box's name or
// engine name (nor a removed one's), and the reverse; addresses are given
// once across boxes and pool boxes; only ready pool boxes of the asked
// type, image and desktop are taken, oldest first.
func TestPoolNamesAddressesAndTakes(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	declare := func(fn func(*Tx) error) error { return s.Declare(fn) }
	box := Box{Name: "web", Type: "small", Image: "img", Desired: "running", Created: now}
	if err := declare(func(tx *Tx) error { return tx.CreateBox(box) }); err != nil {
		t.Fatal(err)
	}
	p := PoolBox{Key: "web", UID: "u0", Type: "small", Image: "img", IP: "10.0.0.9", Created: now}
	if err := declare(func(tx *Tx) error { return tx.AddPool(p) }); !errors.Is(err, ErrConflict) {
		t.Fatalf("a pool box named as a box: %v", err)
	}
	p1 := PoolBox{Key: "pool-1", UID: "u1", Type: "small", Image: "img", IP: "10.0.0.2", Created: now}
	p2 := PoolBox{Key: "pool-2", UID: "u2", Type: "small", Image: "img", IP: "10.0.0.3", Created: now.Add(time.Second)}
	// The medium one is the oldest of all: a take that did not ask for
	// the type would get it first.
	p3 := PoolBox{Key: "pool-3", UID: "u3", Type: "medium", Image: "img", IP: "10.0.0.4", Created: now.Add(-time.Second)}
	for _, p := range []PoolBox{p1, p2, p3} {
		if err := declare(func(tx *Tx) error { return tx.AddPool(p) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := declare(func(tx *Tx) error { return tx.CreateBox(Box{Name: "pool-1", Type: "small", Created: now}) }); !errors.Is(err, ErrConflict) {
		t.Fatalf("a box named as a pool box's key: %v", err)
	}
	var ip netip.Addr
	if err := declare(func(tx *Tx) error {
		var err error
		ip, err = tx.FreeIP(netip.MustParsePrefix("10.0.0.0/24"), netip.MustParseAddr("10.0.0.1"))
		return err
	}); err != nil || ip.String() != "10.0.0.5" {
		t.Fatalf("free address %s %v, want 10.0.0.5 (pool boxes hold .2 to .4)", ip, err)
	}

	take := func(typ string, desktop bool) (PoolBox, error) {
		var got PoolBox
		err := declare(func(tx *Tx) error {
			var err error
			got, err = tx.TakePool(typ, "img", desktop)
			return err
		})
		return got, err
	}
	if _, err := take("small", false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("took a pool box that is not ready: %v", err)
	}
	for _, k := range []string{"pool-2", "pool-1", "pool-3"} {
		if err := s.SetPoolReady(k, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := take("small", true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("took a pool box without a desktop for one with: %v", err)
	}
	if got, err := take("small", false); err != nil || got.Key != "pool-1" {
		t.Fatalf("took %s %v, want the oldest small one, pool-1", got.Key, err)
	}
	// A claimed box keeps the key, and so does its tombstone.
	claimed := Box{Name: "mine", Engine: "pool-1", Type: "small", Created: now}
	if err := declare(func(tx *Tx) error { return tx.CreateBox(claimed) }); err != nil {
		t.Fatal(err)
	}
	if err := declare(func(tx *Tx) error { return tx.CreateBox(Box{Name: "other", Engine: "pool-1", Created: now}) }); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second box on one engine name: %v", err)
	}
	if err := declare(func(tx *Tx) error { return tx.DeleteBox("mine") }); err != nil {
		t.Fatal(err)
	}
	ts, _ := s.ListTombstones()
	if len(ts) != 1 || ts[0].Key() != "pool-1" {
		t.Fatalf("tombstones %+v, want mine on pool-1", ts)
	}
	if err := declare(func(tx *Tx) error { return tx.AddPool(PoolBox{Key: "pool-1", Created: now}) }); !errors.Is(err, ErrConflict) {
		t.Fatalf("a pool box on a removed box's engine name: %v", err)
	}
}
