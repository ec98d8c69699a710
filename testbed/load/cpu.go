package load

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver/docker/procs"
)

// The machine's time during the load, and whose it was: so that a run
// says what an exec costs the whole machine (client, server, engine, box
// and command together) and, from that, the least mean round trip the
// load's streams can have on it (Little's law: as many in flight as
// there are streams, each taking its share of the CPUs). On a machine
// with more CPUs the same streams leave it idle for longer.

// cpuSample is the CPU time spent up to one moment.
type cpuSample struct {
	at      time.Time
	busy    time.Duration // all CPUs, from /proc/stat: not idle nor waiting for I/O
	daemon  time.Duration // paddockd
	engine  time.Duration // dockerd, containerd and its shims
	boxes   time.Duration // the boxes' cgroups: commands, their warm execs
	client  time.Duration // this process: the load's client
	probes  time.Duration // this process's children: the docker exec beside the load (and, in a test, the test's others)
	boxesOK bool
}

// CPUUse is what the load cost the machine, each part's CPU time for one
// exec (completed), and the bound it sets.
type CPUUse struct {
	CPUs                   int
	Busy                   float64 // of the machine's time during the load
	PerExec                time.Duration
	Daemon, Engine, Client time.Duration
	Boxes                  time.Duration // -1: not known
	Probes, Other          time.Duration
}

const userHZ = 100 // the clock ticks of /proc's times (USER_HZ)

func ticks(s string) time.Duration {
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.Duration(n) * time.Second / userHZ
}

// machineBusy is the CPU time all CPUs spent other than idle since boot.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var busy time.Duration
	for i, v := range f[1:min(len(f), 9)] {
		if i != 3 && i != 4 {
			busy += ticks(v)
		}
	}
	return busy
}

// procCPU is a process's own CPU time (user and system): not that of the
// children it waited for (an engine's: runc, but also an exec's process,
// which the box's cgroup counts).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	// state is f[0]; utime and stime are fields 14 and 15
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	return ticks(f[11]) + ticks(f[12])
}

// engineCPU is the CPU time of the engine's processes running now.
func engineCPU() time.Duration {
	ents, _ := os.ReadDir("/proc")
	var sum time.Duration
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil {
			continue
		}
		switch c := strings.TrimSpace(string(comm)); {
		case c == "dockerd", c == "containerd", strings.HasPrefix(c, "containerd-shim"):
			sum += procCPU(pid)
		}
	}
	return sum
}

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sampleCPU reads every part's time now; boxPIDs are the boxes' first
// processes (each box's cgroup is read once).
func sampleCPU(daemonPID int, boxPIDs []int) cpuSample {
	s := cpuSample{at: time.Now(), busy: machineBusy(), daemon: procCPU(daemonPID), engine: engineCPU(),
		client: rusage(syscall.RUSAGE_SELF), probes: rusage(syscall.RUSAGE_CHILDREN), boxesOK: len(boxPIDs) > 0}
	for _, pid := range boxPIDs {
		u, err := procs.Usage(pid)
		s.boxes += u.CPU
		s.boxesOK = s.boxesOK && err == nil
	}
	return s
}

// use is what the load cost between two samples, for each of its n
// execs.
func use(a, b cpuSample, n int64) CPUUse {
	u := CPUUse{CPUs: runtime.NumCPU(), Boxes: -1}
	took := b.at.Sub(a.at)
	if n <= 0 || took <= 0 {
		return u
	}
	per := func(d time.Duration) time.Duration { return d / time.Duration(n) }
	busy := b.busy - a.busy
	u.Busy = float64(busy) / float64(took*time.Duration(u.CPUs))
	u.PerExec = per(busy)
	u.Daemon, u.Engine = per(b.daemon-a.daemon), per(b.engine-a.engine)
	u.Client, u.Probes = per(b.client-a.client), per(b.probes-a.probes)
	u.Other = u.PerExec - u.Daemon - u.Engine - u.Client - u.Probes
	if a.boxesOK && b.boxesOK {
		u.Boxes = per(b.boxes - a.boxes)
		u.Other -= u.Boxes
	}
	return u
}

// String says each part's share of an exec and the bound: streams in
// flight, each exec taking PerExec of CPUs, make a mean round trip of
// at least streams × PerExec / CPUs.
func (u CPUUse) String(streams int, idleP95, mean time.Duration) string {
	if u.PerExec <= 0 {
		return "  the machine's time: not measured\n"
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }
	boxes := "not known"
	if u.Boxes >= 0 {
		boxes = ms(u.Boxes)
	}
	floor := time.Duration(streams) * u.PerExec / time.Duration(u.CPUs)
	need := 3 * idleP95 * time.Duration(u.CPUs) / time.Duration(max(streams, 1))
	return fmt.Sprintf("  the machine's time an exec: %s ms (%d CPUs, %.0f%% busy): paddockd %s, boxes (commands, warm execs) %s, engine %s, the load's client %s, its children (docker exec) %s, other (runc, the kernel's threads) %s\n",
		ms(u.PerExec), u.CPUs, 100*u.Busy, ms(u.Daemon), boxes, ms(u.Engine), ms(u.Client), ms(u.Probes), ms(u.Other)) +
		fmt.Sprintf("  bound: %d streams at %s ms an exec on %d CPUs make a mean round trip of at least %s (measured %s); a mean within 3x the idle p95 (%s) needs at most %s ms an exec\n",
			streams, ms(u.PerExec), u.CPUs, floor.Round(time.Millisecond), mean.Round(time.Millisecond), (3*idleP95).Round(time.Millisecond), ms(need))
}
