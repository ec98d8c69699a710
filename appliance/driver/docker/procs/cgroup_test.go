package procs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver"
)

// writeTree writes files (path → contents) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A box's use is read from cgroup v2's files (this machine may run v1,
// where the contract test reads the real ones) and v1's, each with the
// page cache the kernel can drop left out of its memory, and "no bound"
// as 0.
func TestCgroupFiles(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"v2/system.slice/box/cpu.stat":       "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n",
		"v2/system.slice/box/memory.current": "300000000\n",
		"v2/system.slice/box/memory.stat":    "anon 150000000\nfile 150000000\nactive_file 50000000\ninactive_file 100000000\n",
		"v2/system.slice/box/memory.max":     "268435456\n",
		"v2/system.slice/box/memory.events":  "low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\n",
		"v2/system.slice/box/pids.current":   "12\n",
		"v2/free/cpu.stat":                   "usage_usec 1\n",
		"v2/free/memory.current":             "4096\n",
		"v2/free/memory.max":                 "max\n",

		"cpuacct/docker/x/cpuacct.usage":              "2000000000\n",
		"memory/docker/x/memory.usage_in_bytes":       "500000000\n",
		"memory/docker/x/memory.stat":                 "cache 1\ninactive_file 7\ntotal_inactive_file 300000000\n",
		"memory/docker/x/memory.limit_in_bytes":       "9223372036854771712\n",
		"memory/docker/x/memory.oom_control":          "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
		"pids/docker/x/pids.current":                  "5\n",
		"unified/docker/x/memory.current":             "1\n",
		"cpuacct/docker/bounded/cpuacct.usage":        "1\n",
		"memory/docker/bounded/memory.usage_in_bytes": "1\n",
		"memory/docker/bounded/memory.limit_in_bytes": "268435456\n",
	})
	v2 := map[string]string{"cgroup2": filepath.Join(dir, "v2")}
	v1 := map[string]string{"cpuacct": filepath.Join(dir, "cpuacct"), "cpu": filepath.Join(dir, "cpuacct"), "memory": filepath.Join(dir, "memory"),
		"pids": filepath.Join(dir, "pids"), "cgroup2": filepath.Join(dir, "unified")}
	for _, c := range []struct {
		name, cg string
		mounts   map[string]string
		want     driver.Usage
	}{
		{"v2", "0::/system.slice/box\n", v2, driver.Usage{CPU: 1500 * time.Millisecond, Memory: 200000000, MemoryLimit: 268435456, OOMKills: 2, Processes: 12}},
		{"v2 with no bound", "0::/free\n", v2, driver.Usage{CPU: time.Microsecond, Memory: 4096}},
		{"v1 (systemd's hybrid)", "12:pids:/docker/x\n5:memory:/docker/x\n3:cpu,cpuacct:/docker/x\n1:name=systemd:/docker/x\n0::/docker/x\n", v1,
			driver.Usage{CPU: 2 * time.Second, Memory: 200000000, OOMKills: 1, Processes: 5}},
		{"v1 with a bound", "5:memory:/docker/bounded\n3:cpu,cpuacct:/docker/bounded\n", v1, driver.Usage{CPU: 1, Memory: 1, MemoryLimit: 268435456}},
	} {
		got, err := cgroupFiles(c.cg, c.mounts)
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	if _, err := cgroupFiles("0::/gone\n", v2); err == nil {
		t.Error("a cgroup with no files: no error")
	}
}

func TestParseNetDev(t *testing.T) {
	const dev = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:  999999      10    0    0    0     0          0         0   999999      10    0    0    0     0       0          0
  eth0: 3000000    2000    0    0    0     0          0         0    40000     300    0    0    0     0       0          0
  eth1:     100       1    0    0    0     0          0         0      200       2    0    0    0     0       0          0
`
	if rx, tx := parseNetDev(dev); rx != 3000100 || tx != 40200 {
		t.Fatalf("rx %d, tx %d; want 3000100, 40200 (loopback left out)", rx, tx)
	}
}
