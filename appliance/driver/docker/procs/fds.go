package procs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// StdinFifo finds the input fifo of exec id, whose process is pid,
// among what its parent (the shim, which adopts the processes it
// starts) holds open: the shim and the fifo's path, or "" when the shim
// holds none (its copy of the input has ended) or cannot be read.
func StdinFifo(pid int, id string) (shim int, fifo string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, ""
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, ""
	}
	if shim, err = strconv.Atoi(f[1]); err != nil || shim <= 1 {
		return 0, ""
	}
	suffix := "/" + id + "-stdin"
	return shim, opened(shim, func(p string) bool { return strings.HasSuffix(p, suffix) })
}

// Holds says whether process pid has path open (as a handle, for reading
// or for writing).
func Holds(pid int, path string) bool {
	return opened(pid, func(p string) bool { return p == path }) != ""
}

// opened is the first path that process pid has open and ok accepts.
func opened(pid int, ok func(string) bool) string {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range fds {
		if p, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && ok(p) {
			return p
		}
	}
	return ""
}
