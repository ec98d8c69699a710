package confine_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/appliance/driver/docker/confine"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// A thread that joins a box's namespaces ends after; the process's first
// thread cannot end, and /proc/self is its view, so it is never used.
func TestSpareThreadIsNeverTheFirst(t *testing.T) {
	firsts := 0
	for range 2000 {
		var tid int
		confine.OnSpareThread(func() { tid = unix.Gettid() })
		if tid == unix.Getpid() {
			firsts++
		}
	}
	if firsts > 0 {
		t.Fatalf("%d of 2000 ran on the process's first thread", firsts)
	}
}

// inVolume's thread sees the folder as /, cannot open a device node in
// it (one open to all, with /dev/null's numbers, so that a failure harms
// nothing), resolves an absolute symlink inside it, and changes nothing
// of this machine's mounts.
func TestInVolume(t *testing.T) {
	harness.NeedRoot(t, "a private mount namespace and chroot")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "plain"), []byte("in the volume"), 0o644)
	if err := unix.Mknod(filepath.Join(dir, "node"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/plain", filepath.Join(dir, "abs"))
	before, _ := os.ReadFile("/proc/self/mountinfo")
	var nodeErr, readErr error
	var got []byte
	confine.OnSpareThread(func() {
		err := confine.InVolume(dir, confine.VolumeCaps, func() error {
			f, err := os.Open("/node")
			if err == nil {
				f.Close()
			}
			nodeErr = err
			got, readErr = os.ReadFile("/abs")
			return nil
		})
		if err != nil {
			readErr = err
		}
	})
	if readErr != nil || string(got) != "in the volume" {
		t.Fatalf("reading /abs inside the volume: %q, %v", got, readErr)
	}
	if !errors.Is(nodeErr, fs.ErrPermission) {
		t.Fatalf("opening a device node in the volume: %v, want permission denied (nodev)", nodeErr)
	}
	if after, _ := os.ReadFile("/proc/self/mountinfo"); string(after) != string(before) {
		t.Fatal("this machine's mounts changed")
	}
}
