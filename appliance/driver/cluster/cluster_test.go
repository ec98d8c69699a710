package cluster_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/cluster"
	"github.com/paddock-dev/paddock/appliance/driver/drivertest"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
)

// byPrefix places what is named "n1-..." on n1 and the rest on n2.
func byPrefix(kind, name string) (string, error) {
	if strings.HasPrefix(name, "n1-") {
		return "n1", nil
	}
	return "n2", nil
}

// Over two nodes, the cluster keeps the driver contract, and each call
// reaches only the node that holds its object.
func TestContract(t *testing.T) {
	n1, n2 := fake.New("base:1"), fake.New("base:1")
	ctx := context.Background()
	if err := n1.CreateBox(ctx, driver.BoxSpec{Name: "n1-other", Image: "base:1"}); err != nil {
		t.Fatal(err)
	}
	c := &cluster.Driver{Nodes: map[string]driver.Driver{"n1": n1, "n2": n2}, Where: byPrefix}
	drivertest.Lifecycle(t, c, "base:1")

	// What the contract made and removed was n2's alone.
	bs, _ := n1.Boxes(ctx)
	if len(bs) != 1 || bs[0].Name != "n1-other" {
		t.Fatalf("n1's boxes after the contract on n2: %+v", bs)
	}
	if err := c.CreateBox(ctx, driver.BoxSpec{Name: "n2-box", Image: "base:1"}); err != nil {
		t.Fatal(err)
	}
	all, err := c.Boxes(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("the cluster's boxes: %+v %v", all, err)
	}
	if err := c.StopBox(ctx, "n1-other"); err != nil {
		t.Fatal(err)
	}
	if _, err := n2.Boxes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n2.StartBox(ctx, "n1-other"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("n1's box on n2: %v", err)
	}
}

// downDriver is a node that does not answer.
type downDriver struct{ *fake.Driver }

func (downDriver) Boxes(context.Context) ([]driver.BoxState, error) {
	return nil, errors.New("connection refused")
}

// A node that does not answer makes the list an error that names it
// (*driver.NodesDown), with what the other nodes have: it is not read as
// a node without boxes. Objects placed on a node the cluster does not
// have are errors that say so.
func TestANodeDownIsNoEmptyNode(t *testing.T) {
	up := fake.New("base:1")
	ctx := context.Background()
	spec := drivertest.Spec("n2-box", "base:1")
	spec.Mounts = nil
	if err := up.CreateBox(ctx, spec); err != nil {
		t.Fatal(err)
	}
	c := &cluster.Driver{Nodes: map[string]driver.Driver{"n1": downDriver{fake.New("base:1")}, "n2": up}, Where: byPrefix}
	bs, err := c.Boxes(ctx)
	var down *driver.NodesDown
	if !errors.As(err, &down) || len(down.Nodes) != 1 || down.Nodes["n1"] == nil || !strings.Contains(err.Error(), "n1") {
		t.Fatalf("boxes with n1 down: %+v, %v", bs, err)
	}
	if len(bs) != 1 || bs[0].Name != "n2-box" {
		t.Fatalf("the boxes of the node that answered: %+v", bs)
	}
	c.Where = func(string, string) (string, error) { return "n9", nil }
	if err := c.StartBox(context.Background(), "x"); !errors.Is(err, cluster.ErrNoSuchNode) || !strings.Contains(err.Error(), "n9") {
		t.Fatalf("a box on a node the cluster has not: %v", err)
	}
}

// liar is a node that adds another node's objects to its lists.
type liar struct {
	*fake.Driver
	boxes []driver.BoxState
	snaps []driver.SnapshotState
	vols  []driver.VolumeRef
}

func (l liar) Boxes(ctx context.Context) ([]driver.BoxState, error) {
	bs, err := l.Driver.Boxes(ctx)
	return append(bs, l.boxes...), err
}

func (l liar) Snapshots(ctx context.Context) ([]driver.SnapshotState, error) {
	ss, err := l.Driver.Snapshots(ctx)
	return append(ss, l.snaps...), err
}

func (l liar) Volumes(ctx context.Context) ([]driver.VolumeRef, error) {
	vs, err := l.Driver.Volumes(ctx)
	return append(vs, l.vols...), err
}

// A node is believed about what was placed on it and nothing else: its
// claims of another node's box (with another spec), of a snapshot placed
// elsewhere and of another node's drive are left out of the lists, and
// the log says so once for each, naming the node. What nothing declares
// is the reporting node's own (the sweeper removes it there); what a move
// under way ships is left out without a word.
func TestANodeIsBelievedAboutItsOwnOnly(t *testing.T) {
	ctx := context.Background()
	n1 := fake.New("base:1")
	spec := drivertest.Spec("n1-victim", "base:1")
	spec.Mounts = nil
	if err := n1.CreateBox(ctx, spec); err != nil {
		t.Fatal(err)
	}
	n2 := liar{Driver: fake.New("base:1"),
		boxes: []driver.BoxState{{Name: "n1-victim", ID: "forged", SpecHash: "bogus"}, {Name: "stray", ID: "s1"}, {Name: "n1-moving", ID: "m1"}},
		snaps: []driver.SnapshotState{{ID: "n1-pending", Box: "n1-victim"}},
		vols:  []driver.VolumeRef{{Kind: driver.KindDrive, Name: "n1-data"}},
	}
	where := func(kind, name string) (string, error) {
		if name == "stray" {
			return "", driver.ErrNotFound
		}
		return byPrefix(kind, name)
	}
	var logs strings.Builder
	c := &cluster.Driver{Nodes: map[string]driver.Driver{"n1": n1, "n2": n2}, Where: where,
		InTransit: func(node, kind, name string) bool { return node == "n2" && name == "n1-moving" },
		Log:       slog.New(slog.NewTextHandler(&logs, nil))}
	for range 3 {
		bs, err := c.Boxes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, b := range bs {
			got = append(got, b.Name+"="+b.SpecHash)
		}
		if want := []string{"n1-victim=" + spec.Hash(), "stray="}; !slices.Equal(got, want) {
			t.Fatalf("the cluster's boxes: %v, want %v", got, want)
		}
		if ss, err := c.Snapshots(ctx); err != nil || len(ss) != 0 {
			t.Fatalf("the cluster's snapshots: %+v %v", ss, err)
		}
		if vs, err := c.Volumes(ctx); err != nil || slices.ContainsFunc(vs, func(v driver.VolumeRef) bool { return v.Name == "n1-data" }) {
			t.Fatalf("the cluster's volumes: %+v %v", vs, err)
		}
	}
	log := logs.String()
	for _, what := range []string{"kind=box name=n1-victim", "kind=snapshot name=n1-pending", "kind=drive name=n1-data"} {
		if n := strings.Count(log, "node=n2 "+what+" placed_on=n1"); n != 1 {
			t.Errorf("the log says %d times that n2 lied of %s:\n%s", n, what, log)
		}
	}
	if strings.Contains(log, "n1-moving") || strings.Contains(log, "stray") {
		t.Errorf("the log calls a move's copy or an undeclared box a lie:\n%s", log)
	}
	// The undeclared box is removed where it was seen: on n2.
	n2.Driver.CreateBox(ctx, driver.BoxSpec{Name: "stray", Image: "base:1"})
	if err := c.RemoveBox(ctx, "stray"); err != nil {
		t.Fatal(err)
	}
	if bs, _ := n2.Driver.Boxes(ctx); len(bs) != 0 {
		t.Fatalf("the stray box on n2: %+v", bs)
	}
	if bs, _ := n1.Boxes(ctx); len(bs) != 1 || bs[0].SpecHash != spec.Hash() {
		t.Fatalf("the victim on n1: %+v", bs)
	}
}
