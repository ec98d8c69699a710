package procs_test

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/paddock-dev/paddock/appliance/driver/docker/procs"
	"github.com/paddock-dev/paddock/appliance/driver/docker/procs/procstest"
)

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
	box := procstest.CgroupFor(t, boxed.Process.Pid)
	if n := procs.SignalGroup(box, host.Process.Pid, syscall.SIGKILL); n != 0 {
		t.Fatalf("signalled %d processes outside the box", n)
	}
	if n := procs.SignalGroup("/", host.Process.Pid, syscall.SIGKILL); n != 0 {
		t.Fatalf("the root cgroup taken for a box: signalled %d", n)
	}
	if err := host.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the process outside the box: %v", err)
	}
	if n := procs.SignalGroup(box, boxed.Process.Pid, syscall.SIGKILL); n != 1 {
		t.Fatalf("the group inside the box: %d signalled, want 1", n)
	}
	if err := boxed.Wait(); err == nil {
		t.Fatal("the process inside the box was not killed")
	}
}
