package docker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver/docker"
	"github.com/paddock-dev/paddock/appliance/driver/drivertest"
	"github.com/paddock-dev/paddock/policies"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// engine returns a driver on the real engine with an instance of its own,
// and the test image; outside CI it skips (saying why) where there is none.
func engine(t *testing.T) (*docker.Driver, string) {
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
	// The contract tests use 10.214.0.0/16; the e2e daemons 10.213.0.0/16.
	n, err := policies.NetworkFor(inst, fmt.Sprintf("10.214.%d.0/24", time.Now().UnixNano()%256))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := docker.New(ctx, docker.Config{Instance: inst, Runtime: "runc", User: "paddock", Bridge: n.Bridge, Subnet: n.Subnet, Gateway: n.Gateway})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		harness.Sweep(inst)
		d.Close()
	})
	return d, image
}

func TestContractLifecycle(t *testing.T) {
	d, image := engine(t)
	drivertest.Lifecycle(t, d, image)
}

func TestContractRuntime(t *testing.T) {
	d, image := engine(t)
	drivertest.Runtime(t, d, image)
}

func TestNegotiatesAPIVersion(t *testing.T) {
	d, _ := engine(t)
	out, err := exec.Command("docker", "version", "--format", "{{.Server.APIVersion}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	// The client speaks newer versions than Debian 12's engine (1.41): it
	// must come down to the engine's.
	if want := strings.TrimSpace(string(out)); d.APIVersion() != want {
		t.Fatalf("negotiated API %q, engine speaks %q", d.APIVersion(), want)
	}
}
