package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
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

// OpenWatch admits one more events stream for the user of ctx, or says
// why not (too many open: theirs, or the server's); release ends it.
func (s *Service) OpenWatch(ctx context.Context) (release func(), err error) {
	u, _ := caller.From(ctx)
	w := &s.watches
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
func (s *Service) sharedViewAt(ctx context.Context, n int64) (map[string]watched, error) {
	key := audience(ctx)
	w := &s.watches
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
		sv.view, sv.err = s.view(context.WithoutCancel(ctx))
		s.viewsRead.Add(1)
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
func (s *Service) Watch(ctx context.Context, every time.Duration, metrics bool, send func(Event) error) error {
	if every <= 0 {
		every = WatchEvery
	}
	seen := map[string]watched{}
	first := true
	var last int64
	pass := s.metricsPass()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		// Read before the view: a write after this read moves it again,
		// so the next tick looks.
		n, err := s.Store.Seen()
		if err != nil {
			return err
		}
		if first || n != last {
			last = n
			if seen, err = s.sendChanges(ctx, n, seen, send); err != nil {
				return err
			}
		}
		if first {
			first = false
			if err := send(Event{Kind: "ready", Data: map[string]string{}}); err != nil {
				return err
			}
		}
		if p := s.metricsPass(); metrics && p != pass {
			pass = p
			ms, err := s.Metrics.LatestSeen(ctx)
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
func (s *Service) sendChanges(ctx context.Context, n int64, seen map[string]watched, send func(Event) error) (map[string]watched, error) {
	now, err := s.sharedViewAt(ctx, n)
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
func (s *Service) view(ctx context.Context) (map[string]watched, error) {
	out := map[string]watched{}
	add := func(kind string, key map[string]string, v any) {
		raw, _ := json.Marshal(v)
		id := key["name"]
		if key["id"] != "" {
			id = key["id"]
		}
		out[kind+":"+id] = watched{kind: kind, raw: raw, key: key}
	}
	boxes, err := s.ListBoxes(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range boxes {
		add("box", map[string]string{"name": b.Name}, b)
		jobs, err := s.Store.ListJobs(b.Name, "")
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			add("job", map[string]string{"id": j.ID, "box": b.Name}, j.API())
		}
		sns, err := s.Store.ListSnapshots(b.Name)
		if err != nil {
			return nil, err
		}
		for _, sn := range sns {
			if sn.State != "deleting" {
				add("snapshot", map[string]string{"id": sn.ID, "box": b.Name}, toAPISnapshot(sn))
			}
		}
	}
	drives, err := s.ListDrives(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range drives {
		add("drive", map[string]string{"name": d.Name}, d)
	}
	return out, nil
}
