package docker

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// An empty input's end reaches a command whose shim's open of the input
// fifo began only after every writer had gone (stdin.go), the state the
// engine leaves an exec in when it loses the end. This process plays
// the shim: it starts the command (so it is the command's parent), holds
// a handle to the fifo, and waits in a blocking open for reading, which
// nothing else would ever complete.
func TestEmptyInputEndsAWaitingShim(t *testing.T) {
	const id = "0123456789abcdef"
	fifo := filepath.Join(t.TempDir(), id+"-stdin")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	handle, err := os.OpenFile(fifo, unix.O_PATH, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer handle.Close()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	// The shim's copy of the input: open, read to the end, close.
	ended := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_RDONLY, 0)
		if err != nil {
			ended <- err
			return
		}
		_, err = io.Copy(io.Discard, f)
		f.Close()
		handle.Close()
		ended <- err
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		endInput(ctx, cmd.Process.Pid, id)
		close(done)
	}()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("the shim's copy of the input: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the waiting open was never completed: the command would wait for its input's end forever")
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("endInput went on after the shim let the fifo go")
	}
}
