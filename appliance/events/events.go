// Package events is the events stream (GET /v1/events): every object
// a user sees (boxes, drives, jobs, snapshots), then each change as it is
// written, whoever wrote it, and, if asked, each sampling pass's figures;
// with its bounds on the streams open and its API route (Routes).
//
// Changes are found by comparing views of the store, read once per
// audience and store change (the store's Seen counter), not by events
// sent by each writer: nothing that writes the store has to know the
// stream exists.
package events

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Event is one change on the events stream: Kind is "box", "drive",
// "job" or "snapshot" with the object as the API shows it, or the same
// with "-removed" and the object's key ({"name"} or {"id","box"}).
type Event struct {
	Kind string
	Data any
}

// WatchEvery is how often Watch compares the caller's view.
const WatchEvery = 500 * time.Millisecond

// Bounds on the events streams open at once: per user, and in all.
const (
	MaxWatchesPerUser = 16
	MaxWatches        = 256
)

// Core is what the events stream needs of paddockd's core (package
// service's Service has it): the boxes and drives the caller of ctx sees,
// as the API shows them.
type Core interface {
	ListBoxes(ctx context.Context) ([]api.Box, error)
	ListDrives(ctx context.Context) ([]api.Drive, error)
}

// Metrics is the sampler of boxes' use (package metrics), as the stream
// follows it: Pass counts the sampling passes done; LatestSeen is the
// newest pass's sample of each running box the caller of ctx sees.
type Metrics interface {
	Pass() int64
	LatestSeen(ctx context.Context) ([]api.Sample, error)
}

// Events is the events streams of one server.
type Events struct {
	core    Core
	store   *store.Store
	metrics Metrics
	watches watches
	// viewsRead counts the streams' reads of the store's view (the
	// tests see that streams of one audience share them).
	viewsRead atomic.Int64
}

// New is the events streams over core and the store, following metrics'
// passes (nil: no metrics events).
func New(core Core, st *store.Store, metrics Metrics) *Events {
	return &Events{core: core, store: st, metrics: metrics}
}

// watches counts the events streams open, and keeps the newest view of
// the store each audience (all, for owners; a member's own) was shown, so
// that a change is read once for all the streams that see it, not once
// per stream.
type watches struct {
	mu      sync.Mutex
	perUser map[int64]int
	total   int
	views   map[string]*sharedView
}

// sharedView is an audience's view of the store at one value of its Seen
// counter, computed once (ready closes when view and err are set).
type sharedView struct {
	seen  int64
	ready chan struct{}
	view  map[string]watched
	err   error
}

// Open admits one more events stream for the user of ctx, or says
// why not (too many open: theirs, or the server's); release ends it.
func (ev *Events) Open(ctx context.Context) (release func(), err error) {
	u, _ := caller.From(ctx)
	w := &ev.watches
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.perUser == nil {
		w.perUser = map[int64]int{}
	}
	switch {
	case w.perUser[u.ID] >= MaxWatchesPerUser:
		return nil, &api.Error{Code: api.CodeTooMany, Message: fmt.Sprintf("you have %d events streams open, the most a user may: close one first", w.perUser[u.ID])}
	case w.total >= MaxWatches:
		return nil, &api.Error{Code: api.CodeTooMany, Message: fmt.Sprintf("the server has %d events streams open, the most it keeps: try again later", w.total)}
	}
	w.perUser[u.ID]++
	w.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.total--
			if w.perUser[u.ID]--; w.perUser[u.ID] <= 0 {
				delete(w.perUser, u.ID)
			}
		})
	}, nil
}

// audience names who sees what the user of ctx sees: owners and admins
// (and the daemon) see all, a member their own.
func audience(ctx context.Context) string {
	u, ok := caller.From(ctx)
	if !ok || u.SeesAll() {
		return "all"
	}
	return fmt.Sprint("user:", u.ID)
}

// sharedViewAt is the view of the audience of ctx at Seen counter n,
// computed by the first stream that asks and shared with the others.
func (ev *Events) sharedViewAt(ctx context.Context, n int64) (map[string]watched, error) {
	key := audience(ctx)
	w := &ev.watches
	w.mu.Lock()
	if w.views == nil {
		w.views = map[string]*sharedView{}
	}
	sv := w.views[key]
	if sv == nil || sv.seen != n {
		sv = &sharedView{seen: n, ready: make(chan struct{})}
		w.views[key] = sv
		w.mu.Unlock()
		// For every stream of the audience: not ended by the first one's end.
		sv.view, sv.err = ev.view(context.WithoutCancel(ctx))
		ev.viewsRead.Add(1)
		close(sv.ready)
	} else {
		w.mu.Unlock()
		select {
		case <-sv.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return sv.view, sv.err
}

// Watch sends, through send, every object the user of ctx sees, then
// "ready", then each change until ctx ends or send fails. The changes are
// found by comparing the user's view of the store (boxes, drives, jobs,
// snapshots) every interval, so that every change shows whoever made it:
// an API call, a Boxfile apply, the reconciler observing the engine, a
// TTL running out. The view is read again only once the store's Seen
// counter moved: an idle follower costs one small query per interval.
// With metrics, after "ready" each sampling pass (package metrics) sends a
// "metrics" event (an api.Sample) for each running box the user sees.
func (ev *Events) Watch(ctx context.Context, every time.Duration, metrics bool, send func(Event) error) error {
	if every <= 0 {
		every = WatchEvery
	}
	seen := map[string]watched{}
	first := true
	var last int64
	pass := ev.pass()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		// Read before the view: a write after this read moves it again,
		// so the next tick looks.
		n, err := ev.store.Seen()
		if err != nil {
			return err
		}
		if first || n != last {
			last = n
			if seen, err = ev.sendChanges(ctx, n, seen, send); err != nil {
				return err
			}
		}
		if first {
			first = false
			if err := send(Event{Kind: "ready", Data: map[string]string{}}); err != nil {
				return err
			}
		}
		if p := ev.pass(); metrics && p != pass {
			pass = p
			ms, err := ev.metrics.LatestSeen(ctx)
			if err != nil {
				return err
			}
			for _, m := range ms {
				if err := send(Event{Kind: "metrics", Data: m}); err != nil {
					return err
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// sendChanges sends what differs between the view seen and the user's
// view now, and returns the view now.
func (ev *Events) sendChanges(ctx context.Context, n int64, seen map[string]watched, send func(Event) error) (map[string]watched, error) {
	now, err := ev.sharedViewAt(ctx, n)
	if err != nil {
		return seen, err
	}
	for k, v := range now {
		if old, ok := seen[k]; ok && bytes.Equal(old.raw, v.raw) {
			continue
		}
		if err := send(Event{Kind: v.kind, Data: json.RawMessage(v.raw)}); err != nil {
			return seen, err
		}
	}
	for k, v := range seen {
		if _, ok := now[k]; !ok {
			if err := send(Event{Kind: v.kind + "-removed", Data: v.key}); err != nil {
				return seen, err
			}
		}
	}
	return now, nil
}

type watched struct {
	kind string
	raw  []byte
	key  map[string]string
}

// view is what the user of ctx sees now, by "kind:key".
func (ev *Events) view(ctx context.Context) (map[string]watched, error) {
	out := map[string]watched{}
	add := func(kind string, key map[string]string, v any) {
		raw, _ := json.Marshal(v)
		id := key["name"]
		if key["id"] != "" {
			id = key["id"]
		}
		out[kind+":"+id] = watched{kind: kind, raw: raw, key: key}
	}
	boxes, err := ev.core.ListBoxes(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range boxes {
		add("box", map[string]string{"name": b.Name}, b)
		jobs, err := ev.store.ListJobs(b.Name, "")
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			add("job", map[string]string{"id": j.ID, "box": b.Name}, j.API())
		}
		sns, err := ev.store.ListSnapshots(b.Name)
		if err != nil {
			return nil, err
		}
		for _, sn := range sns {
			if sn.State != "deleting" {
				add("snapshot", map[string]string{"id": sn.ID, "box": b.Name}, sn.API())
			}
		}
	}
	drives, err := ev.core.ListDrives(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range drives {
		add("drive", map[string]string{"name": d.Name}, d)
	}
	return out, nil
}

// pass is the number of sampling passes done (0 with no sampler).
func (ev *Events) pass() int64 {
	if ev.metrics == nil {
		return 0
	}
	return ev.metrics.Pass()
}
