package service

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A job that prints far more than the bound keeps only the tail on disk,
// marked with how much was dropped; a reader gets the tail, and one that
// followed from the start read on across the moves without error.
func TestJobLogKeepsTheTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j1.log")
	const bound = 4 << 10
	w, err := newJobLogWriter(path, bound)
	if err != nil {
		t.Fatal(err)
	}
	follower, err := openJobLog(path)
	if err != nil {
		t.Fatal(err)
	}
	var followed bytes.Buffer
	var all strings.Builder
	for i := 0; i < 2000; i++ {
		line := fmt.Sprintf("line %05d\n", i)
		all.WriteString(line)
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			io.Copy(&followed, follower) // a follower reading as it goes
		}
	}
	w.Close()
	io.Copy(&followed, follower)
	follower.Close()

	var onDisk int64
	for _, p := range []string{path, path + ".1"} {
		if fi, err := os.Stat(p); err == nil {
			onDisk += fi.Size()
		}
	}
	if onDisk > bound+200 {
		t.Fatalf("%d bytes on disk for a bound of %d", onDisk, bound)
	}
	r, err := openJobLog(path)
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := io.ReadAll(r)
	r.Close()
	if !strings.HasSuffix(string(kept), "line 01999\n") || !strings.Contains(string(kept), "bytes of earlier output dropped") {
		t.Fatalf("kept %d bytes: %.200s ... %s", len(kept), kept, kept[max(0, len(kept)-40):])
	}
	if !strings.HasPrefix(followed.String(), "line 00000\n") || !strings.HasSuffix(followed.String(), "line 01999\n") {
		t.Fatalf("the follower read %d bytes: %.100s ... ", followed.Len(), followed.String())
	}
	if len(all.String()) < 5*bound {
		t.Fatal("the test wrote too little to pass the bound")
	}
}
