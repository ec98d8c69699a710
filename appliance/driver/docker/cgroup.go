package docker

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
)

// cgroupCPU is the CPU time used by the cgroup of process pid: cgroup
// v1's cpuacct.usage (nanoseconds), else v2's cpu.stat usage_usec.
func cgroupCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return 0, err
	}
	var v1, v2 string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			v2 = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "cpuacct" {
				v1 = f[2]
			}
		}
	}
	mounts, err := cgroupMountsOnce()
	if err != nil {
		return 0, err
	}
	if dir, ok := mounts["cpuacct"]; ok && v1 != "" {
		b, err := os.ReadFile(filepath.Join(dir, v1, "cpuacct.usage"))
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return time.Duration(n), err
	}
	if dir, ok := mounts["cgroup2"]; ok && v2 != "" {
		f, err := os.Open(filepath.Join(dir, v2, "cpu.stat"))
		if err != nil {
			return 0, err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == "usage_usec" {
				n, err := strconv.ParseInt(v, 10, 64)
				return time.Duration(n) * time.Microsecond, err
			}
		}
		return 0, errors.New("cpu.stat has no usage_usec")
	}
	return 0, fmt.Errorf("no CPU accounting cgroup for process %d", pid)
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
