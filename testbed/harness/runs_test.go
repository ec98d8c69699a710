package harness

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Another live run's instances and subnets are left alone; a run that is
// over is forgotten.
func TestRunsSeeEachOther(t *testing.T) {
	NeedRoot(t, "the runs directory is under /run")
	if _, err := joinRun(); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(RunsDir, "run-test-other")
	over := filepath.Join(RunsDir, "run-test-over")
	t.Cleanup(func() { os.Remove(other); os.Remove(over) })
	os.WriteFile(other, []byte("pdkt-otherrun\nsubnet 10.215.77.0/24\n"), 0o644)
	os.WriteFile(over, []byte("pdkt-overrun\nsubnet 10.215.78.0/24\n"), 0o644)
	// A live run holds its file's lock (here: this process, on another
	// open file, which flock tells apart).
	f, err := os.Open(other)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	live := liveInstances()
	if !live["pdkt-otherrun"] || live["pdkt-overrun"] {
		t.Fatalf("live instances: %v", live)
	}
	if _, err := os.Stat(over); !os.IsNotExist(err) {
		t.Fatalf("the file of a run that is over is still there: %v", err)
	}
	subnetMu.Lock()
	nextSubnet = 76 // the next pick would be 10.215.77.0/24
	subnetMu.Unlock()
	if got := FreeSubnet(); got == "10.215.77.0/24" {
		t.Fatalf("took the subnet another live run chose: %s", got)
	}
	mine := claimedSubnets()
	if len(mine) < 2 {
		t.Fatalf("claimed subnets: %v (want the other run's and this one's)", mine)
	}
}
