// Package procs is a box's processes as this machine sees them: what
// its cgroup used (CPU, memory, processes, OOM kills) and its network
// namespace moved, a process's cgroup, parent and group, its children,
// and signals sent only inside the box's cgroup, through pidfds (the
// docker driver's timeouts and a warm exec's signals). Linux only; an
// engine on another machine is never read this way.
package procs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Signals to a box's processes (a command's timeout).
//
// A process number read from the engine or from /proc can be stale by
// the time it is used: the process may have ended and the number gone to
// another, anywhere on this machine, and a box that starts processes
// quickly can make that happen on purpose. So paddockd signals only
// processes that are inside the box's own cgroup, named when the command
// started (boxCgroup), and each through a pidfd: it opens the process,
// reads what it is (its group, its parent, its cgroup), checks with the
// pidfd that the process it read is still the one it opened, and only
// then sends the signal through that pidfd. A host process can never be
// signalled, whatever numbers the box arranges.

// CgroupOf is the cgroup of process pid as the pids controller sees it
// (cgroup v1), or its unified cgroup (v2).
func CgroupOf(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	unified := ""
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "pids" {
				return f[2], nil
			}
		}
		if f[0] == "0" && f[1] == "" {
			unified = f[2]
		}
	}
	if unified == "" {
		return "", fmt.Errorf("process %d: no pids or unified cgroup", pid)
	}
	return unified, nil
}

// inCgroup says whether cgroup path c is box or below it (a box's own
// containers, with Docker in it, have cgroups below the box's).
func inCgroup(c, box string) bool {
	return box != "" && box != "/" && (c == box || strings.HasPrefix(c, box+"/"))
}

// Stat is what /proc/PID/stat says of a process: its parent and its
// process group.
func Stat(pid int) (ppid, pgid int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 3 {
		return 0, 0, fmt.Errorf("process %d: unreadable stat", pid)
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("process %d: unreadable stat", pid)
	}
	return ppid, pgid, nil
}

// signalInBox sends sig to every process in the box's cgroup (box, as
// CgroupOf says) that match says yes to (given its parent and group),
// each through a pidfd; it returns how many it signalled.
func signalInBox(box string, sig syscall.Signal, match func(pid, ppid, pgid int) bool) int {
	if box == "" || box == "/" {
		return 0
	}
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		ppid, pgid, err := Stat(pid)
		cg, cerr := CgroupOf(pid)
		// Alive after the reads: the number was not yet anyone else's, so
		// what was read is the pidfd's process.
		alive := unix.PidfdSendSignal(fd, 0, nil, 0) == nil
		if err == nil && cerr == nil && alive && inCgroup(cg, box) && match(pid, ppid, pgid) {
			if unix.PidfdSendSignal(fd, unix.Signal(sig), nil, 0) == nil {
				n++
			}
		}
		unix.Close(fd)
	}
	return n
}

// SignalGroup signals the process group pgid, of the box's processes only.
func SignalGroup(box string, pgid int, sig syscall.Signal) int {
	if pgid <= 1 {
		return 0
	}
	return signalInBox(box, sig, func(_, _, g int) bool { return g == pgid })
}

// SignalTree signals root's process group and root and every process
// below it (of the box's processes only): a command's whole tree, also
// what it started in groups of their own, as long as it did not leave
// the tree (a daemon that reparented itself).
func SignalTree(box string, root int, sig syscall.Signal) int {
	if root <= 1 {
		return 0
	}
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 1 {
			if ppid, _, err := Stat(pid); err == nil {
				parent[pid] = ppid
			}
		}
	}
	under := func(pid int) bool {
		for i := 0; i < 64 && pid > 1; i++ {
			if pid == root {
				return true
			}
			pid = parent[pid]
		}
		return false
	}
	return signalInBox(box, sig, func(pid, ppid, pgid int) bool {
		// The parent read now is the one of the first pass: the number
		// is the same process's.
		return pgid == root || (under(pid) && (pid == root || parent[pid] == ppid))
	})
}

// ChildrenOf lists the children of process pid (none for pid <= 0), from
// its task's children file, or where the kernel has none, from the
// parent of every process.
func ChildrenOf(pid int) []int {
	if pid <= 0 {
		return nil
	}
	var kids []int
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err == nil {
		for _, f := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(f); err == nil && k > 0 {
				kids = append(kids, k)
			}
		}
		return kids
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		k, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if f := strings.Fields(string(b[i+1:])); i > 0 && len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, k)
		}
	}
	return kids
}
