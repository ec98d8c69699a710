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
