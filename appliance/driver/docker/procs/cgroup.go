package procs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver"
)

// Usage is what the cgroup of process pid uses (its CPU time,
// memory, bound, processes, OOM kills: cgroup v1's cpuacct, memory and
// pids controllers, else v2's files) and what the interfaces of its
// network namespace moved.
// The driver reads a box's with it (BoxUsage), the testbed's load its
// boxes' CPU time.
func Usage(pid int) (driver.Usage, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return driver.Usage{}, err
	}
	mounts, err := cgroupMountsOnce()
	if err != nil {
		return driver.Usage{}, err
	}
	u, err := cgroupFiles(string(b), mounts)
	if err != nil {
		return u, fmt.Errorf("process %d: %w", pid, err)
	}
	u.NetRx, u.NetTx, err = netBytes(pid)
	return u, err
}

// cgroupFiles reads what a cgroup uses: cg is the process's
// /proc/PID/cgroup, mounts where each hierarchy is (cgroupMounts).
func cgroupFiles(cg string, mounts map[string]string) (driver.Usage, error) {
	var u driver.Usage
	v1 := map[string]string{} // controller → path
	var v2 string
	for _, line := range strings.Split(strings.TrimSpace(cg), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			v2 = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			v1[c] = f[2]
		}
	}
	// file is a cgroup file of a v1 controller, or else of the v2 tree.
	file := func(controller, v1name, v2name string) string {
		if dir, ok := mounts[controller]; ok && v1[controller] != "" {
			return filepath.Join(dir, v1[controller], v1name)
		}
		if dir, ok := mounts["cgroup2"]; ok && v2 != "" && v2name != "" {
			return filepath.Join(dir, v2, v2name)
		}
		return ""
	}
	if p := file("cpuacct", "cpuacct.usage", ""); p != "" {
		n, err := readInt(p)
		if err != nil {
			return u, err
		}
		u.CPU = time.Duration(n)
	} else if p := file("", "", "cpu.stat"); p != "" {
		n, err := statField(p, "usage_usec")
		if err != nil {
			return u, err
		}
		u.CPU = time.Duration(n) * time.Microsecond
	} else {
		return u, errors.New("no CPU accounting cgroup")
	}
	if p := file("memory", "memory.usage_in_bytes", ""); p != "" {
		used, err := readInt(p)
		if err != nil {
			return u, err
		}
		inactive, _ := statField(file("memory", "memory.stat", ""), "total_inactive_file")
		u.Memory = max(used-inactive, 0)
		if lim, err := readInt(file("memory", "memory.limit_in_bytes", "")); err == nil && lim < 1<<60 {
			u.MemoryLimit = lim
		}
		u.OOMKills, _ = statField(file("memory", "memory.oom_control", ""), "oom_kill")
	} else if p := file("", "", "memory.current"); p != "" {
		used, err := readInt(p)
		if err != nil {
			return u, err
		}
		inactive, _ := statField(file("", "", "memory.stat"), "inactive_file")
		u.Memory = max(used-inactive, 0)
		u.MemoryLimit, _ = readInt(file("", "", "memory.max")) // "max": none
		u.OOMKills, _ = statField(file("", "", "memory.events"), "oom_kill")
	}
	if n, err := readInt(file("pids", "pids.current", "pids.current")); err == nil {
		u.Processes = int(n)
	}
	return u, nil
}

// readInt reads a file that holds one integer.
func readInt(p string) (int64, error) {
	if p == "" {
		return 0, errors.New("no such cgroup file")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// statField reads the value of key in a cgroup file of "key value" lines.
func statField(p, key string) (int64, error) {
	if p == "" {
		return 0, errors.New("no such cgroup file")
	}
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == key {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s has no %s", p, key)
}

// netBytes sums the bytes received and sent by the interfaces of the
// network namespace of process pid, loopback left out.
func netBytes(pid int) (rx, tx int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/dev", pid))
	if err != nil {
		return 0, 0, err
	}
	rx, tx = parseNetDev(string(b))
	return rx, tx, nil
}

// parseNetDev sums the bytes columns of a /proc/net/dev, loopback left
// out.
func parseNetDev(b string) (rx, tx int64) {
	// Inter-|   Receive                                                |  Transmit
	//  face |bytes    packets errs drop fifo frame compressed multicast|bytes ...
	for _, line := range strings.Split(b, "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "lo" {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 9 {
			continue
		}
		r, err1 := strconv.ParseInt(f[0], 10, 64)
		t, err2 := strconv.ParseInt(f[8], 10, 64)
		if err1 != nil || err2 != nil {
			continue // the header
		}
		rx, tx = rx+r, tx+t
	}
	return rx, tx
}

// cgroupMountsOnce is cgroupMounts, read once: the hierarchies are
// mounted at boot.
var cgroupMountsOnce = sync.OnceValues(cgroupMounts)

// cgroupMounts is where this machine mounts its cgroup hierarchies: each
// v1 controller's mount point, and "cgroup2" for the v2 one.
func cgroupMounts() (map[string]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 {
			continue
		}
		switch qf[0] {
		case "cgroup2":
			if _, seen := out["cgroup2"]; !seen {
				out["cgroup2"] = pf[4]
			}
		case "cgroup":
			for _, o := range strings.Split(qf[2], ",") {
				if _, seen := out[o]; !seen {
					out[o] = pf[4]
				}
			}
		}
	}
	return out, sc.Err()
}
