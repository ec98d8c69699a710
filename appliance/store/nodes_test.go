package store

import (
	"errors"
	"testing"
	"time"
)

// A join token lets one node in, once, before it expires; a node's boxes,
// their volumes, snapshots and tombstones are found on it.
func TestJoinTokensAndWhere(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n2 := Node{Name: "n2", Addr: "10.0.0.2:7443", Subnet: "10.214.0.0/24", Joined: time.Now(), Cert: "pem"}
	if err := s.JoinNode("nope", n2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an unknown token: %v", err)
	}
	if err := s.AddJoinToken("h1", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.AddJoinToken("old", time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.JoinNode("old", n2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an expired token: %v", err)
	}
	if err := s.JoinNode("h1", n2); err != nil {
		t.Fatal(err)
	}
	n3 := n2
	n3.Name = "n3"
	if err := s.JoinNode("h1", n3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a token used twice: %v", err)
	}
	// A second node on the same subnet is refused, and spends its token.
	if err := s.AddJoinToken("h2", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.JoinNode("h2", n3); !errors.Is(err, ErrConflict) {
		t.Fatalf("a taken subnet: %v", err)
	}
	n3.Subnet = "10.214.1.0/24"
	if err := s.JoinNode("h2", n3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a token spent on a conflict: %v", err)
	}
	if ns, err := s.ListNodes(); err != nil || len(ns) != 1 || ns[0].Name != "n2" || ns[0].Labels == nil {
		t.Fatalf("nodes: %+v %v", ns, err)
	}

	err = s.Declare(func(tx *Tx) error {
		if err := tx.CreateBox(Box{Name: "web", Type: "small", Image: "i", Desired: "running", Created: time.Now(), Node: "n2"}); err != nil {
			return err
		}
		if err := tx.CreateBox(Box{Name: "api", Type: "small", Image: "i", Desired: "running", Created: time.Now(), Engine: "pool-1"}); err != nil {
			return err
		}
		if err := tx.CreateDrive(Drive{Name: "data", State: "ready", Created: time.Now(), Node: "n2"}); err != nil {
			return err
		}
		return tx.AddSnapshot(Snapshot{ID: "s1", Box: "web", State: "pending", Created: time.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ kind, name, node string }{
		{"box", "web", "n2"}, {"boxdata", "web", "n2"}, {"box", "pool-1", ""}, {"snapshot", "s1", "n2"}, {"drive", "data", "n2"},
	} {
		if got, err := s.Where(c.kind, c.name); err != nil || got != c.node {
			t.Errorf("%s %s is on %q (%v), want %q", c.kind, c.name, got, err, c.node)
		}
	}
	// "api" is known by its engine name only.
	if _, err := s.Where("box", "api"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a claimed box by its own name: %v", err)
	}
	if err := s.Declare(func(tx *Tx) error { return tx.DeleteBox("web") }); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Where("box", "web"); err != nil || got != "n2" {
		t.Errorf("a removed box's tombstone is on %q (%v)", got, err)
	}
	if b, _, _, sn, err := s.NodeObjects("n2"); err != nil || b != 1 || sn != 1 {
		t.Errorf("n2 holds %d boxes, %d snapshots (%v)", b, sn, err)
	}
}

// A lost server's snapshots that were never shipped are forgotten (and
// named), its shipped ones that no box took along go to the control
// plane's server, the snapshots a box took along stay with it; nothing
// is left counted on it but its own row.
func TestLoseNode(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.AddJoinToken("h", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.JoinNode("h", Node{Name: "n2", Addr: "10.0.0.2:7443", Subnet: "10.214.0.0/24", Joined: time.Now(), Cert: "pem"}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	err = s.Declare(func(tx *Tx) error {
		for _, b := range []string{"web", "old"} {
			if err := tx.CreateBox(Box{Name: b, Type: "small", Image: "i", Desired: "running", Created: t0, Node: "n2"}); err != nil {
				return err
			}
		}
		for i, id := range []string{"local1", "shipped1", "shipped2", "other1"} {
			box := "web"
			if id == "other1" {
				box = "old"
			}
			if err := tx.AddSnapshot(Snapshot{ID: id, Box: box, State: "ready", Created: t0.Add(time.Duration(i) * time.Second)}); err != nil {
				return err
			}
		}
		return tx.DeleteBox("old") // a tombstone on n2
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"shipped1", "shipped2", "other1"} {
		if err := s.SetSnapshotShipped(id, "shipped", ""); err != nil {
			t.Fatal(err)
		}
	}
	var lost []string
	err = s.Declare(func(tx *Tx) error {
		if err := tx.MoveBox("web", "n3", "10.214.1.9", "shipped2", []string{"shipped2"}); err != nil {
			return err
		}
		lost, err = tx.LoseNode("n2")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != 1 || lost[0] != "local1" {
		t.Fatalf("lost snapshots: %v, want [local1]", lost)
	}
	for id, want := range map[string]string{"shipped1": "", "shipped2": "n3", "other1": ""} {
		if got, err := s.Where("snapshot", id); err != nil || got != want {
			t.Errorf("snapshot %s on %q (%v), want %q", id, got, err, want)
		}
	}
	if _, err := s.Where("snapshot", "local1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the unshipped snapshot of the lost server is still declared: %v", err)
	}
	boxes, pool, drives, snaps, err := s.NodeObjects("n2")
	if err != nil || boxes+pool+drives+snaps != 0 {
		t.Fatalf("left on the lost server: %d boxes, %d pool, %d drives, %d snapshots (%v)", boxes, pool, drives, snaps, err)
	}
}
