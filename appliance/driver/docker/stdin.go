package docker

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver/docker/procs"
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
	shim, fifo := procs.StdinFifo(pid, id)
	if fifo == "" {
		return
	}
	wait := 5 * time.Millisecond
	for end := time.Now().Add(time.Minute); time.Now().Before(end); {
		if !procs.Holds(shim, fifo) {
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
