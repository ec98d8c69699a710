// Package drivers gives tests the real drivers of this machine's engines,
// each with an instance of its own that goes when the test ends, and
// node agents serving them.
package drivers

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/docker"
	"github.com/paddock-dev/paddock/appliance/node"
	"github.com/paddock-dev/paddock/policies"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// Docker is a Docker driver on the machine's engine with an
// instance of its own (swept when the test ends), and the test image.
// Where there is no engine it skips, saying why, outside CI; in CI it
// fails.
func Docker(t testing.TB, opts ...func(*docker.Config)) (*docker.Driver, string) {
	t.Helper()
	if reason := harness.EngineReason(); reason != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(reason)
		}
		t.Skip("SKIP: " + reason)
	}
	image, err := harness.Image()
	if err != nil {
		t.Fatal(err)
	}
	inst := fmt.Sprintf("pdkct-%d", time.Now().UnixNano()%1e9)
	// A /24 that no network of the engine, interface or other live test
	// has, chosen under the runs' lock: test packages run at once.
	n, err := policies.NetworkFor(inst, harness.FreeSubnet())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := docker.Config{Instance: inst, Runtime: "runc", User: "paddock", Bridge: n.Bridge, Subnet: n.Subnet, Gateway: n.Gateway}
	for _, o := range opts {
		o(&cfg)
	}
	d, err := docker.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		harness.Sweep(inst)
		d.Close()
	})
	return d, image
}

// Node serves d as node name's agent on loopback, behind the mutual TLS
// of ca, for the test's time, and returns the control plane's driver of
// it (node.Remote).
func Node(t testing.TB, ca *node.CA, name string, d driver.Driver) *node.Remote {
	t.Helper()
	cert, err := ca.Issue(name)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&node.Agent{Driver: d}).Serve(ctx, l, ca.ServerConfig(cert)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the agent of %s: %v", name, err)
		}
	})
	cp, err := ca.Issue(node.ControlPlane)
	if err != nil {
		t.Fatal(err)
	}
	return node.NewRemote(name, l.Addr().String(), ca.ClientConfig(cp, name, nil))
}
