// Package procstest puts a test's processes in a cgroup of their own, as
// a box's are, for the tests of what signals and measures them.
package procstest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver/docker/procs"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// CgroupFor moves process pid into a new cgroup of the test's own (the
// pids controller's on cgroup v1, the unified one on v2), as a box's
// container is in one, and returns its path as procs.CgroupOf names it. The
// cgroup is emptied and removed when the test ends.
func CgroupFor(t *testing.T, pid int) string {
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
	cg, err := procs.CgroupOf(pid)
	if err != nil || !strings.HasSuffix(cg, "/"+name) {
		t.Fatalf("the test's cgroup: %q %v", cg, err)
	}
	return cg
}
