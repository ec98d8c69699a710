package docker_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/appliance/driver/docker"
	"github.com/paddock-dev/paddock/appliance/driver/drivertest"
	"github.com/paddock-dev/paddock/testbed/drivers"
)

// engine returns a driver on the real engine with an instance of its own,
// and the test image.
func engine(t *testing.T, opts ...func(*docker.Config)) (*docker.Driver, string) {
	return drivers.Docker(t, opts...)
}

// runningBox makes and starts a box without drives, named from prefix, and
// returns its name and its container's full ID.
func runningBox(t *testing.T, d *docker.Driver, image, prefix string) (string, string) {
	t.Helper()
	ctx := context.Background()
	box := fmt.Sprintf("%s%d", prefix, time.Now().UnixNano()%1e6)
	spec := drivertest.Spec(box, image)
	spec.Mounts = nil
	if err := d.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.CreateBox(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := d.StartBox(ctx, box); err != nil {
		t.Fatal(err)
	}
	id, err := exec.Command("docker", "ps", "-q", "--no-trunc", "--filter", "name=-"+box+"$").Output()
	if err != nil || len(strings.TrimSpace(string(id))) == 0 {
		t.Fatalf("finding the box's container: %v %q", err, id)
	}
	return box, strings.TrimSpace(string(id))
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

// A device node in a box (made here from this machine, in the box's files,
// as a box's root with the capability could) cannot be opened by AsBoxUser's thread, which
// is not under the box's device rules; the box itself still opens it. The
// node has /dev/null's numbers, so that a failure harms nothing.
func TestAsBoxUserOpensNoDeviceNode(t *testing.T) {
	d, image := engine(t)
	ctx := context.Background()
	box, ctr := runningBox(t, d, image, "node")
	merged, err := exec.Command("docker", "inspect", "-f", "{{.GraphDriver.Data.MergedDir}}", ctr).Output()
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimSpace(string(merged))
	if err := unix.Mknod(root+"/tmp/node", unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	unix.Chmod(root+"/tmp/node", 0o666)
	if err := os.WriteFile(root+"/tmp/plain", []byte("made"), 0o644); err != nil {
		t.Fatal(err)
	}
	var nodeErr, plainErr error
	if err := d.AsBoxUser(ctx, box, 1000, func() error {
		f, err := os.Open("/tmp/node")
		if err == nil {
			f.Close()
		}
		nodeErr = err
		_, plainErr = os.ReadFile("/tmp/plain")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(nodeErr, fs.ErrPermission) || plainErr != nil {
		t.Fatalf("opening the box's device node: %v (want permission denied); its plain file: %v", nodeErr, plainErr)
	}
	if out, err := exec.Command("docker", "exec", "-u", "0", ctr, "head", "-c", "0", "/tmp/node").CombinedOutput(); err != nil {
		t.Fatalf("the box's own mounts changed: its node does not open in it: %v %s", err, out)
	}
}

// A box made in the background (a pool box) has a small CPU weight in the
// kernel until Foreground gives it a box's usual one; a box made for a
// request has that from the start.
func TestBackgroundBoxYieldsCPU(t *testing.T) {
	d, image := engine(t)
	ctx := context.Background()
	if err := d.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	weight := func(box string) string {
		t.Helper()
		id, err := exec.Command("docker", "ps", "-q", "--no-trunc", "--filter", "name=-"+box+"$").Output()
		if err != nil || len(strings.TrimSpace(string(id))) == 0 {
			t.Fatalf("finding the box's container: %v %q", err, id)
		}
		pid, err := exec.Command("docker", "inspect", "-f", "{{.State.Pid}}", strings.TrimSpace(string(id))).Output()
		if err != nil {
			t.Fatal(err)
		}
		cg, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		// cgroup v1: the cpu controller's shares; v2: the unified weight.
		file := ""
		for _, l := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
			f := strings.SplitN(l, ":", 3)
			if len(f) != 3 {
				continue
			}
			if slices.Contains(strings.Split(f[1], ","), "cpu") {
				file = "/sys/fs/cgroup/cpu" + f[2] + "/cpu.shares"
				break
			}
			if f[0] == "0" && f[1] == "" {
				file = "/sys/fs/cgroup" + f[2] + "/cpu.weight"
			}
		}
		w, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(w))
	}
	// The same shares as v1 has them, or as the engine makes them weights
	// under v2.
	small, usual := "128", "1024"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		small, usual = "5", "39"
	}
	made := func(name string, background bool) string {
		box := fmt.Sprintf("%s%d", name, time.Now().UnixNano()%1e6)
		spec := drivertest.Spec(box, image)
		spec.Mounts, spec.Background = nil, background
		if err := d.CreateBox(ctx, spec); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.RemoveBox(context.Background(), box) })
		if err := d.StartBox(ctx, box); err != nil {
			t.Fatal(err)
		}
		return box
	}
	bg, fg := made("bg", true), made("fg", false)
	if w, u := weight(bg), weight(fg); w != small || u != usual {
		t.Fatalf("CPU shares: a background box %s, a box %s (want %s and %s)", w, u, small, usual)
	}
	if err := d.Foreground(ctx, bg); err != nil {
		t.Fatal(err)
	}
	if w := weight(bg); w != usual {
		t.Fatalf("a background box brought to the foreground has CPU share %s, want %s", w, usual)
	}
}

// Boxes gives each running box's first process as it is now: a box whose
// container restarted behind Paddock's back (its process killed, the
// container started again) is seen with its new process, not the one
// kept from before.
func TestBoxesSeeARestartedProcess(t *testing.T) {
	d, image := engine(t)
	ctx := context.Background()
	box, id := runningBox(t, d, image, "pid")
	t.Cleanup(func() { d.RemoveBox(context.Background(), box) })
	enginePid := func() int {
		t.Helper()
		out, err := exec.Command("docker", "inspect", "-f", "{{.State.Pid}}", id).Output()
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		return n
	}
	seen := func() int {
		t.Helper()
		boxes, err := d.Boxes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range boxes {
			if b.ID == id && b.Running {
				return b.Pid
			}
		}
		t.Fatalf("box %s not seen running", box)
		return 0
	}
	first := seen()
	if first != enginePid() || first <= 0 {
		t.Fatalf("Boxes gives pid %d, the engine %d", first, enginePid())
	}
	for i := 0; i < 2; i++ {
		if out, err := exec.Command("docker", "kill", id).CombinedOutput(); err != nil {
			t.Fatalf("docker kill: %v %s", err, out)
		}
		if out, err := exec.Command("docker", "start", id).CombinedOutput(); err != nil {
			t.Fatalf("docker start: %v %s", err, out)
		}
		now := enginePid()
		if got := seen(); got != now || got == first {
			t.Fatalf("after a restart Boxes gives pid %d, the engine %d (before: %d)", got, now, first)
		}
		if got := seen(); got != now {
			t.Fatalf("asked again, Boxes gives pid %d, the engine %d", got, now)
		}
		first = now
	}
}

// When another network of the engine holds the box network's subnet,
// Prepare names it and says what to set, not the engine's "Pool
// overlaps with other one on this address space"; nothing is made.
func TestPrepareNamesTheNetworkThatHoldsTheSubnet(t *testing.T) {
	var subnet string
	d, _ := engine(t, func(c *docker.Config) { subnet = c.Subnet.String() })
	other := fmt.Sprintf("pdkct-clash-%d", time.Now().UnixNano()%1e6)
	if out, err := exec.Command("docker", "network", "create", "--subnet", subnet, other).CombinedOutput(); err != nil {
		t.Fatalf("making the other network: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "network", "rm", other).Run() })
	err := d.Prepare(context.Background())
	if err == nil {
		t.Fatal("the box network was made over another network's subnet")
	}
	for _, want := range []string{other, subnet, "set subnet in paddockd's configuration"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
}
