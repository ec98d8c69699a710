package docker

import (
	"testing"

	"golang.org/x/sys/unix"
)

// A thread that joins a box's namespaces ends after; the process's first
// thread cannot end, and /proc/self is its view, so it is never used.
func TestSpareThreadIsNeverTheFirst(t *testing.T) {
	firsts := 0
	for range 2000 {
		var tid int
		onSpareThread(func() { tid = unix.Gettid() })
		if tid == unix.Getpid() {
			firsts++
		}
	}
	if firsts > 0 {
		t.Fatalf("%d of 2000 ran on the process's first thread", firsts)
	}
}
