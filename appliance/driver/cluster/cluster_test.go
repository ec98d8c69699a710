package cluster_test

import (
	"context"
	"errors"
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
