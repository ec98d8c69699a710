package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The end of an empty input.
//
// An exec's input goes from the engine to the command through a fifo
// that the runtime's shim reads (EXEC-stdin, in the engine's run folder)
// and copies to the command's stdin pipe. The shim opens its end of the
// fifo in a goroutine of its own, and the engine closes the fifo as
// soon as the input has ended: when the input is empty, that can be
// before the shim's open has even begun (the engine only waits for the
// process to start). The shim's open then waits for a writer that never
// comes, the command never reads the end of its input, and an exec of
// `cat` or `head` with no input runs until it is killed. Seen here: 3 of
// about 25,000 engine execs of `head -c 1000` with empty input hung, six
// at a time, all three in the first 4,000 while two runs of the byte test
// went on beside them, on the Debian engine (20.10.24, containerd
// 1.6.20); the shim held the command's stdin pipe and no end of the fifo
// but a handle.
// Input with data in it cannot meet this: the engine's first write
// waits for the shim's open.
//
// So after an empty input, endEmptyInput opens the fifo for writing
// itself and closes it, until the shim no longer holds it. A shim's
// open that is waiting counts as a reader, so this open succeeds and
// completes it, and the shim then reads the end of the input that
// closing gave it. When the shim reads or waits normally, an open and
// close of a writer with nothing written changes nothing: the input
// was empty, and its end is all there is to give.

// endEmptyInput gives exec id, whose input was empty and has ended,
// its end of input in case the engine's was lost (above), until ctx
// ends. It does nothing on an engine whose shims this machine cannot
// see (a remote one).
func (d *Driver) endEmptyInput(ctx context.Context, id string) {
	if pid, err := d.execPID(ctx, id); err == nil {
		endInput(ctx, pid, id)
	}
}

// endInput opens and closes for writing the input fifo of exec id, whose
// process is pid, until its shim no longer holds the fifo, ctx ends, or
// a minute has gone by.
func endInput(ctx context.Context, pid int, id string) {
	shim, fifo := stdinFifo(pid, id)
	if fifo == "" {
		return
	}
	wait := 5 * time.Millisecond
	for end := time.Now().Add(time.Minute); time.Now().Before(end); {
		if !holds(shim, fifo) {
			return
		}
		fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err == nil {
			syscall.Close(fd)
		} else if errors.Is(err, syscall.ENOENT) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// stdinFifo finds the input fifo of exec id, whose process is pid,
// among what its parent (the shim, which adopts the processes it
// starts) holds open: the shim and the fifo's path, or "" when the shim
// holds none (its copy of the input has ended) or cannot be read.
func stdinFifo(pid int, id string) (shim int, fifo string) {
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

// holds says whether process pid has path open (as a handle, for reading
// or for writing).
func holds(pid int, path string) bool {
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
