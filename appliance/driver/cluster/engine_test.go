package cluster_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/cluster"
	"github.com/paddock-dev/paddock/appliance/driver/drivertest"
	"github.com/paddock-dev/paddock/appliance/node"
	"github.com/paddock-dev/paddock/testbed/drivers"
)

// Two nodes, each a real engine driver behind its agent (two instances on
// this machine's engine, reached only through mutual TLS): the cluster
// keeps the runtime contract on one of them, and a box of each node runs
// its commands there and nowhere else.
func TestEngineNodes(t *testing.T) {
	ca, err := node.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	d1, image := drivers.Docker(t)
	d2, _ := drivers.Docker(t)
	c := &cluster.Driver{
		Nodes: map[string]driver.Driver{"n1": drivers.Node(t, ca, "n1", d1), "n2": drivers.Node(t, ca, "n2", d2)},
		Where: byPrefix,
	}
	t.Run("runtime", func(t *testing.T) { drivertest.Runtime(t, c, image) })

	ctx := context.Background()
	if err := c.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"n1-box", "n2-box"} {
		spec := drivertest.Spec(name, image)
		spec.Mounts = nil
		if err := c.CreateBox(ctx, spec); err != nil {
			t.Fatal(err)
		}
		if err := c.StartBox(ctx, name); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if code, err := c.Exec(ctx, name, driver.ExecSpec{Cmd: []string{"sh", "-c", "echo $0 > /tmp/where; cat /tmp/where", name}, Stdout: &out}); err != nil || code != 0 || out.String() != name+"\n" {
			t.Fatalf("exec in %s: %d %q %v", name, code, out.String(), err)
		}
	}
	// Each node's own driver has its box and not the other's.
	for n, d := range map[string]driver.Driver{"n1": d1, "n2": d2} {
		bs, err := d.Boxes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, b := range bs {
			names = append(names, b.Name)
		}
		if len(names) != 1 || names[0] != n+"-box" {
			t.Fatalf("node %s's own engine has %v", n, names)
		}
	}
}
