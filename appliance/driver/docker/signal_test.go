package docker

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/testbed/harness"
)

// cgroupFor moves process pid into a new cgroup of the test's own (the
// pids controller's on cgroup v1, the unified one on v2), as a box's
// container is in one, and returns its path as cgroupOf names it. The
// cgroup is emptied and removed when the test ends.
func cgroupFor(t *testing.T, pid int) string {
	t.Helper()
	harness.NeedRoot(t, "making a cgroup")
	base := "/sys/fs/cgroup/pids"
	if _, err := os.Stat(base); err != nil {
		base = "/sys/fs/cgroup" // v2
	}
	name := fmt.Sprintf("pdk-sigtest-%d", pid)
	dir := filepath.Join(base, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for i := 0; i < 50; i++ {
			b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			for _, p := range strings.Fields(string(b)) {
				os.WriteFile(filepath.Join(base, "cgroup.procs"), []byte(p), 0o644)
			}
			if os.Remove(dir) == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	cg, err := cgroupOf(pid)
	if err != nil || !strings.HasSuffix(cg, "/"+name) {
		t.Fatalf("the test's cgroup: %q %v", cg, err)
	}
	return cg
}

// A timeout's signal reaches only the box's processes: a process group
// on this machine outside the box's cgroup is never signalled, even when
// the box names its number; the same group inside it is (the positive
// control); the machine's root cgroup is no box's.
func TestSignalsStayInTheBox(t *testing.T) {
	start := func() *exec.Cmd {
		c := exec.Command("sleep", "3600")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	host, boxed := start(), start()
	box := cgroupFor(t, boxed.Process.Pid)
	if n := signalGroup(box, host.Process.Pid, syscall.SIGKILL); n != 0 {
		t.Fatalf("signalled %d processes outside the box", n)
	}
	if n := signalGroup("/", host.Process.Pid, syscall.SIGKILL); n != 0 {
		t.Fatalf("the root cgroup taken for a box: signalled %d", n)
	}
	if err := host.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the process outside the box: %v", err)
	}
	if n := signalGroup(box, boxed.Process.Pid, syscall.SIGKILL); n != 1 {
		t.Fatalf("the group inside the box: %d signalled, want 1", n)
	}
	if err := boxed.Wait(); err == nil {
		t.Fatal("the process inside the box was not killed")
	}
}
