package service

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/cluster"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
	"github.com/paddock-dev/paddock/appliance/node"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/policies"
)

// fakeNode is a node whose engine is the fake driver, and which says it
// has 8 GiB, or does not answer (down).
type fakeNode struct {
	*fake.Driver
	down bool
}

func (f *fakeNode) Info(context.Context) (node.Info, error) {
	if f.down {
		return node.Info{}, errors.New("no answer")
	}
	return node.Info{CPUs: 4, MemoryBytes: 8 << 30}, nil
}

// clustered is a service over three nodes of the same size: its own
// ("") and n2, n3, joined through the store.
func clustered(t *testing.T) (*Service, map[string]*fakeNode) {
	t.Helper()
	s, _ := newService(t)
	nodes := map[string]*fakeNode{}
	cd := &cluster.Driver{Where: func(kind, name string) (string, error) {
		n, err := s.Store.Where(kind, name)
		if errors.Is(err, store.ErrNotFound) {
			return "", driver.ErrNotFound
		}
		return n, err
	}}
	var err error
	if s.Net, err = policies.NetworkFor("t", "10.213.0.0/24"); err != nil {
		t.Fatal(err)
	}
	for i, n := range []string{"", "n2", "n3"} {
		nodes[n] = &fakeNode{Driver: fake.New("img", "img2")}
		cd.SetNode(n, nodes[n])
		if n == "" {
			continue
		}
		if err := s.Store.AddJoinToken(n, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.Store.JoinNode(n, store.Node{Name: n, Addr: "10.0.0.1:7443", Subnet: "10.214." + string(rune('0'+i)) + ".0/24", Joined: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	s.Driver, s.Rec.Driver = cd, cd
	s.Cluster = &Cluster{Driver: cd, Firewall: &cluster.Firewall{}, Name: "cp",
		Local: func(ctx context.Context) (node.Info, error) { return nodes[""].Info(ctx) }}
	s.LookAtNodes(context.Background())
	return s, nodes
}

func nodeOf(t *testing.T, s *Service, box string) string {
	t.Helper()
	b, err := s.Store.GetBox(box)
	if err != nil {
		t.Fatal(err)
	}
	return b.Node
}

// Boxes spread over nodes of the same size; each is made on its node's
// engine, with an address of its node's network. A fork is made where its
// snapshot is, and boxes that mount a drive where the drive is. A node
// that does not answer gets no new box.
func TestPlacement(t *testing.T) {
	s, nodes := clustered(t)
	ctx := context.Background()
	per := map[string]int{}
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		b, err := s.CreateBox(ctx, api.BoxPost{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		n := nodeOf(t, s, name)
		per[n]++
		wantNet := s.Net.Subnet.String()
		if n != "" {
			nd, _ := s.Store.GetNode(n)
			wantNet = nd.Subnet
		}
		if !strings.HasPrefix(b.IP, strings.TrimSuffix(wantNet, "0/24")) {
			t.Errorf("box %s on node %q has address %s, not of %s", name, n, b.IP, wantNet)
		}
		bs, _ := nodes[n].Boxes(ctx)
		found := false
		for _, x := range bs {
			found = found || x.Name == name
		}
		if !found {
			t.Errorf("box %s is not on its node %q's engine", name, n)
		}
	}
	if per[""] != 2 || per["n2"] != 2 || per["n3"] != 2 {
		t.Fatalf("six boxes on three equal nodes: %v", per)
	}

	// A fork goes where its source's snapshot is.
	var src string
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		if nodeOf(t, s, name) == "n3" {
			src = name
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Fork(ctx, src, api.ForkPost{Name: "fk"})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a fork in a cluster did not end in 30 s")
	}
	if n := nodeOf(t, s, "fk"); n != "n3" {
		t.Fatalf("the fork of a box on n3 is on %q", n)
	}

	// Drives: boxes that mount one go where it is.
	if _, err := s.CreateDrive(ctx, api.DrivePost{Name: "d1"}); err != nil {
		t.Fatal(err)
	}
	d1, _ := s.Store.ListDrives()
	for i, name := range []string{"m1", "m2"} {
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name, Mounts: []api.Mount{{Drive: "d1", Path: "/mnt/d"}}}); err != nil {
			t.Fatal(err)
		}
		if n := nodeOf(t, s, name); n != d1[0].Node {
			t.Fatalf("box %d that mounts d1 (on %q) is on %q", i, d1[0].Node, n)
		}
	}
	// Two drives on two nodes: no box may mount both.
	if err := s.Store.Declare(func(tx *store.Tx) error {
		other := "n2"
		if d1[0].Node == "n2" {
			other = "n3"
		}
		return tx.CreateDrive(store.Drive{Name: "d2", State: "ready", Created: time.Now(), Node: other})
	}); err != nil {
		t.Fatal(err)
	}
	_, err := s.CreateBox(ctx, api.BoxPost{Name: "both", Mounts: []api.Mount{{Drive: "d1", Path: "/mnt/1"}, {Drive: "d2", Path: "/mnt/2"}}})
	if err == nil || !strings.Contains(err.Error(), "two servers") {
		t.Fatalf("a box mounting drives on two nodes: %v", err)
	}

	// A node that does not answer gets nothing new.
	nodes["n2"].down = true
	s.LookAtNodes(ctx)
	for i := range 4 {
		name := "late" + string(rune('0'+i))
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name}); err != nil {
			t.Fatal(err)
		}
		if n := nodeOf(t, s, name); n == "n2" {
			t.Fatalf("box %s was placed on n2, which is down", name)
		}
	}
}

// A box asked for on a server goes there, if the server is up and holds
// its data; a server that holds nothing may be forgotten, one that holds
// anything may not.
func TestNodeChosenAndRemoved(t *testing.T) {
	s, _ := clustered(t)
	ctx := context.Background()
	for _, c := range []struct{ want, node string }{{"n3", "n3"}, {"cp", ""}, {"n2", "n2"}} {
		name := "on-" + c.want
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name, Node: c.want}); err != nil {
			t.Fatal(err)
		}
		if n := nodeOf(t, s, name); n != c.node {
			t.Fatalf("a box asked for on %s is on %q", c.want, n)
		}
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "x", Node: "nope"}); err == nil || !strings.Contains(err.Error(), "cp, n2, n3") {
		t.Fatalf("a server that is not there: %v", err)
	}
	if err := s.Store.Declare(func(tx *store.Tx) error {
		return tx.CreateDrive(store.Drive{Name: "d", State: "ready", Created: time.Now(), Node: "n2"})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "y", Node: "n3", Mounts: []api.Mount{{Drive: "d", Path: "/mnt/d"}}}); err == nil || !strings.Contains(err.Error(), "on n2") {
		t.Fatalf("a box on n3 with a drive of n2: %v", err)
	}

	if err := s.RemoveNode(ctx, "n3"); err == nil || !strings.Contains(err.Error(), "1 box") {
		t.Fatalf("removing a server that holds a box: %v", err)
	}
	if err := s.RemoveBox(ctx, "on-n3"); err != nil {
		t.Fatal(err)
	}
	waitTomb(t, s)
	if err := s.RemoveNode(ctx, "n3"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "z", Node: "n3"}); err == nil {
		t.Fatal("a box was made on a removed server")
	}
	for i := range 3 {
		name := "after" + string(rune('0'+i))
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name}); err != nil {
			t.Fatal(err)
		}
		if n := nodeOf(t, s, name); n == "n3" {
			t.Fatalf("box %s placed on a removed server", name)
		}
	}
}

// waitTomb runs the reconciler until no removed box holds its name.
func waitTomb(t *testing.T, s *Service) {
	t.Helper()
	for range 20 {
		if _, err := s.Rec.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if ts, _ := s.Store.ListTombstones(); len(ts) == 0 {
			return
		}
	}
	t.Fatal("the removed box's tombstone stayed")
}
