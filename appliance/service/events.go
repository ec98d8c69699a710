package service

import (
	"bytes"
	"context"
	"encoding/json"
	"time"
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

// Watch sends, through send, every object the user of ctx sees, then
// "ready", then each change until ctx ends or send fails. The changes are
// found by comparing the user's view of the store (boxes, drives, jobs,
// snapshots) every interval, so that every change shows whoever made it:
// an API call, a Boxfile apply, the reconciler observing the engine, a
// TTL running out. The view is read again only once the store's Seen
// counter moved: an idle follower costs one small query per interval.
func (s *Service) Watch(ctx context.Context, every time.Duration, send func(Event) error) error {
	if every <= 0 {
		every = WatchEvery
	}
	seen := map[string]watched{}
	first := true
	var last int64
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
			if seen, err = s.sendChanges(ctx, seen, send); err != nil {
				return err
			}
		}
		if first {
			first = false
			if err := send(Event{Kind: "ready", Data: map[string]string{}}); err != nil {
				return err
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
func (s *Service) sendChanges(ctx context.Context, seen map[string]watched, send func(Event) error) (map[string]watched, error) {
	now, err := s.view(ctx)
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
			add("job", map[string]string{"id": j.ID, "box": b.Name}, toAPIJob(j))
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
