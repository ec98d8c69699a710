package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/capped"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Bounds of file watches.
const (
	MaxPerBox  = 8
	Queue      = 4096
	maxFolders = 20000
	maxLine    = 64 << 10
)

// Core is what file watch needs of paddockd's core (package service's
// Service has it): a box in use while a watch runs (a sleeping one
// wakes), the box as it runs, and a command in it.
type Core interface {
	Use(ctx context.Context, box string) (done func(), woke bool, err error)
	RunningBox(name string) (store.Box, error)
	RunIn(ctx context.Context, b store.Box, spec driver.ExecSpec) (int, error)
}

// Watcher is file watch's verb and its API route; it counts each box's
// watches.
type Watcher struct {
	Core Core

	mu sync.Mutex
	n  map[string]int // watches by box engine name
}

// New is file watch over core.
func New(core Core) *Watcher { return &Watcher{Core: core, n: map[string]int{}} }

// Dir is a watch on a box's path.
type Dir struct {
	// C carries the events; it closes when the watch ends.
	C       <-chan api.WatchEvent
	dropped atomic.Int64
	stop    func()
	done    chan struct{}
	err     error
}

// Dropped is how many events did not fit in the queue since it was last
// asked.
func (w *Dir) Dropped() int64 { return w.dropped.Swap(0) }

// Close ends the watch and waits for its program to end.
func (w *Dir) Close() {
	w.stop()
	<-w.done
}

// Err is why the watch ended (after C closed): nil when it was closed.
func (w *Dir) Err() error { return w.err }

// take counts a watch on box key, or says the box has its most.
func (wr *Watcher) take(name, key string) (release func(), err error) {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	if wr.n[key] >= MaxPerBox {
		return nil, &api.Error{Code: api.CodeTooMany, Message: fmt.Sprintf("box %s has %d file watches, the most it may: end one first", name, MaxPerBox)}
	}
	wr.n[key]++
	return func() {
		wr.mu.Lock()
		defer wr.mu.Unlock()
		if wr.n[key]--; wr.n[key] == 0 {
			delete(wr.n, key)
		}
	}, nil
}

// Watch starts a watch on p in a box. It returns once the watches are
// set (the first event on C is then "ready"), or with why they could not
// be: the box's user cannot read p, p is not there.
func (wr *Watcher) Watch(ctx context.Context, name, p string, recursive bool) (*Dir, error) {
	if !path.IsAbs(p) {
		return nil, api.Invalid("path", "path %q must be absolute", p)
	}
	p = path.Clean(p)
	used, _, err := wr.Core.Use(ctx, name)
	if err != nil {
		return nil, err
	}
	b, err := wr.Core.RunningBox(name)
	if err != nil {
		used()
		return nil, err
	}
	taken, err := wr.take(name, b.Key())
	if err != nil {
		used()
		return nil, err
	}
	release := func() {
		taken()
		used()
	}

	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := make(chan api.WatchEvent, Queue)
	w := &Dir{C: c, done: make(chan struct{})}
	// The program's input stays open while the watch runs: its end (or
	// its cut, which kills it) ends the program.
	inR, inW := io.Pipe()
	var once sync.Once
	w.stop = func() { once.Do(func() { inW.Close(); cancel() }) }
	// The program's first line (ready, or why not) goes to first.
	first := make(chan api.WatchEvent, 1)
	started := false
	lines := &lineSplitter{max: maxLine, line: func(b []byte) {
		var e api.WatchEvent
		if json.Unmarshal(b, &e) != nil {
			return
		}
		if !started {
			started = true
			first <- e
			if e.Type != "ready" {
				return
			}
		}
		select {
		case c <- e:
		default:
			w.dropped.Add(1)
		}
	}}
	rec := "0"
	if recursive {
		rec = "1"
	}
	errb := &capped.Buffer{Max: 16 << 10}
	go func() {
		defer close(w.done)
		defer close(c)
		defer release()
		defer cancel()
		code, err := wr.Core.RunIn(wctx, b, driver.ExecSpec{
			Cmd: []string{"python3", "-c", Script, p, rec, fmt.Sprint(maxFolders)}, Stdin: inR, Stdout: lines, Stderr: errb,
		})
		lines.flush()
		switch {
		case wctx.Err() != nil:
		case err != nil:
			w.err = err
		case code != 0:
			w.err = fmt.Errorf("the file watch in box %s ended (exit %d): %s", name, code, strings.TrimSpace(errb.String()))
		default:
			w.err = fmt.Errorf("the file watch in box %s ended", name)
		}
		select {
		case first <- api.WatchEvent{Type: "error", Message: fmt.Sprint(w.err)}:
		default:
		}
	}()
	select {
	case e := <-first:
		switch {
		case e.Type == "ready":
			return w, nil
		case e.Errno == "EACCES" || e.Errno == "EPERM":
			w.Close()
			return nil, &api.Error{Code: api.CodeForbidden, Field: "path", Message: fmt.Sprintf("box %s's user may not read %s: %s", name, e.Path, e.Message)}
		case e.Errno == "ENOENT":
			w.Close()
			return nil, &api.Error{Code: api.CodeNotFound, Field: "path", Message: fmt.Sprintf("no %s in box %s", p, name)}
		case e.Errno != "":
			w.Close()
			return nil, api.Invalid("path", "watching %s in box %s: %s", e.Path, name, e.Message)
		default:
			w.Close()
			return nil, fmt.Errorf("the file watch in box %s did not start: %s", name, e.Message)
		}
	case <-ctx.Done():
		w.Close()
		return nil, ctx.Err()
	}
}

// WatchDir is Watch as its events and its end: end closes the watch and
// says why it ended (nil when it was closed).
func (wr *Watcher) WatchDir(ctx context.Context, name, p string, recursive bool) (<-chan api.WatchEvent, func() error, error) {
	d, err := wr.Watch(ctx, name, p, recursive)
	if err != nil {
		return nil, nil, err
	}
	return d.C, func() error { d.Close(); return d.Err() }, nil
}
