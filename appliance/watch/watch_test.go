package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// core is a Core whose one box runs the program run gives it, and which
// counts the uses still open.
type core struct {
	mu   sync.Mutex
	uses int
	run  func(spec driver.ExecSpec) (int, error)
}

func (c *core) Use(ctx context.Context, box string) (func(), bool, error) {
	if box != "wb" {
		return nil, false, &api.Error{Code: api.CodeNotFound, Message: "no box " + box}
	}
	c.mu.Lock()
	c.uses++
	c.mu.Unlock()
	return func() { c.mu.Lock(); c.uses--; c.mu.Unlock() }, false, nil
}

func (c *core) RunningBox(name string) (store.Box, error) {
	return store.Box{Name: name, Engine: "pool-7"}, nil
}

func (c *core) RunIn(ctx context.Context, b store.Box, spec driver.ExecSpec) (int, error) {
	if b.Key() != "pool-7" {
		return 0, fmt.Errorf("ran in %s", b.Key())
	}
	return c.run(spec)
}

func (c *core) open() int { c.mu.Lock(); defer c.mu.Unlock(); return c.uses }

// untilClosed is a program that says it is ready and runs until its
// input ends, as the box's does.
func untilClosed(spec driver.ExecSpec) (int, error) {
	fmt.Fprintln(spec.Stdout, `{"type":"ready","path":"/w","watches":1}`)
	io.Copy(io.Discard, spec.Stdin)
	return 0, nil
}

// A watch whose client does not read keeps Queue events and counts
// the rest as dropped: the box's program is never held up, and nothing
// is lost without being said.
func TestFileWatchDropsAndCounts(t *testing.T) {
	const flood = 10000
	written := make(chan struct{})
	c := &core{run: func(spec driver.ExecSpec) (int, error) {
		fmt.Fprintln(spec.Stdout, `{"type":"ready","path":"/w","watches":1}`)
		for i := 0; i < flood; i++ {
			fmt.Fprintf(spec.Stdout, `{"type":"created","path":"/w/f%d"}`+"\n", i)
		}
		close(written)
		// The watch runs until its input ends.
		buf := make([]byte, 1)
		spec.Stdin.Read(buf)
		return 0, nil
	}}
	w, err := New(c).Watch(context.Background(), "wb", "/w", false)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing was read while the flood came; now all of it.
	<-written
	dropped := w.Dropped()
	w.Close()
	got := 0
	for e := range w.C {
		if e.Type == "created" {
			got++
		}
	}
	// The queue held the ready event and Queue-1 others.
	if int64(got)+dropped != flood || got != Queue-1 {
		t.Fatalf("%d delivered and %d dropped of %d", got, dropped, flood)
	}
	if w.Err() != nil {
		t.Fatalf("a closed watch's error: %v", w.Err())
	}
	if n := c.open(); n != 0 {
		t.Fatalf("%d uses of the box still open after the watch ended", n)
	}
}

// A box has at most MaxPerBox watches; one ended makes room for another,
// and a refused one leaves the box's use as it found it.
func TestFileWatchesPerBox(t *testing.T) {
	c := &core{run: untilClosed}
	wr := New(c)
	var ws []*Dir
	for i := 0; i < MaxPerBox; i++ {
		w, err := wr.Watch(context.Background(), "wb", "/w", true)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	_, err := wr.Watch(context.Background(), "wb", "/w", false)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeTooMany || !strings.Contains(ae.Message, "has 8 file watches") {
		t.Fatalf("watch %d: %v", MaxPerBox+1, err)
	}
	if n := c.open(); n != MaxPerBox {
		t.Fatalf("%d uses open for %d watches", n, MaxPerBox)
	}
	ws[0].Close()
	w, err := wr.Watch(context.Background(), "wb", "/w", false)
	if err != nil {
		t.Fatalf("after one ended: %v", err)
	}
	w.Close()
	for _, w := range ws[1:] {
		w.Close()
	}
	if n := c.open(); n != 0 || len(wr.n) != 0 {
		t.Fatalf("%d uses open and counts %v after all ended", n, wr.n)
	}
}

// Why a watch could not start is said as the error of its kind, with the
// field it is about.
func TestFileWatchRefusals(t *testing.T) {
	for _, c := range []struct {
		path, first, code, says string
	}{
		{"w", "", api.CodeInvalid, `path "w" must be absolute`},
		{"/root", `{"type":"error","errno":"EACCES","path":"/root","message":"Permission denied"}`, api.CodeForbidden, "may not read /root"},
		{"/nope", `{"type":"error","errno":"ENOENT","path":"/nope","message":"No such file"}`, api.CodeNotFound, "no /nope in box wb"},
		{"/w", `{"type":"error","errno":"ENOSPC","path":"/w","message":"No space left"}`, api.CodeInvalid, "watching /w in box wb: No space left"},
	} {
		co := &core{run: func(spec driver.ExecSpec) (int, error) {
			fmt.Fprintln(spec.Stdout, c.first)
			return 0, nil
		}}
		_, err := New(co).Watch(context.Background(), "wb", c.path, false)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != c.code || ae.Field != "path" || !strings.Contains(ae.Message, c.says) {
			t.Errorf("%s: %v, want %s saying %q", c.path, err, c.code, c.says)
		}
		if n := co.open(); n != 0 {
			t.Errorf("%s: %d uses left open", c.path, n)
		}
	}
}
