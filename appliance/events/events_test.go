package events

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/service/coretest"
	"github.com/paddock-dev/paddock/appliance/store"
)

// The events stream shows a change whoever wrote it (the API, the
// reconciler's observation, a job), and nothing while nothing changes.
func TestWatchShowsEveryWriterAndIsQuietWhenIdle(t *testing.T) {
	s, _ := coretest.New(t)
	ev := New(s, s.Store, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "one"}); err != nil {
		t.Fatal(err)
	}
	events := make(chan Event, 100)
	go ev.Watch(ctx, 10*time.Millisecond, false, func(e Event) error { events <- e; return nil })
	next := func(what string) Event {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(5 * time.Second):
			t.Fatalf("no event for %s", what)
		}
		return Event{}
	}
	if e := next("the box"); e.Kind != "box" {
		t.Fatalf("first event %+v", e)
	}
	if e := next("ready"); e.Kind != "ready" {
		t.Fatalf("second event %+v", e)
	}
	idle := func() {
		t.Helper()
		select {
		case e := <-events:
			t.Fatalf("an event with nothing changed: %s %s", e.Kind, raw(e))
		case <-time.After(100 * time.Millisecond):
		}
	}
	idle()

	if err := s.Store.SetObserved("one", "error", "the engine said no"); err != nil {
		t.Fatal(err)
	}
	if e := next("the observed error"); e.Kind != "box" || !strings.Contains(raw(e), "the engine said no") {
		t.Fatalf("after SetObserved: %s %s", e.Kind, raw(e))
	}
	idle()
	if err := s.Store.AddJob(store.Job{ID: "j1", Box: "one", Cmd: []string{"true"}, State: "running", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if e := next("the job"); e.Kind != "job" || !strings.Contains(raw(e), `"j1"`) {
		t.Fatalf("after AddJob: %s %s", e.Kind, raw(e))
	}
	idle()
}

func raw(e Event) string {
	b, _ := json.Marshal(e.Data)
	return string(b)
}

// Many streams of one audience read the store's view once per change, not
// once each: the change is computed for all of them together.
func TestWatchReadsEachChangeOnceForAllStreams(t *testing.T) {
	s, _ := coretest.New(t)
	ev := New(s, s.Store, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const streams = 20
	var ready, sawBox sync.WaitGroup
	ready.Add(streams)
	sawBox.Add(streams)
	for range streams {
		go func() {
			readied, saw := false, false
			ev.Watch(ctx, 20*time.Millisecond, false, func(e Event) error {
				if e.Kind == "ready" && !readied {
					readied = true
					ready.Done()
				}
				if e.Kind == "box" && !saw {
					saw = true
					sawBox.Done()
				}
				return nil
			})
		}()
	}
	ready.Wait()
	before := ev.viewsRead.Load()
	if _, err := s.CreateBox(context.Background(), api.BoxPost{Name: "web"}); err != nil {
		t.Fatal(err)
	}
	sawBox.Wait()
	if n := ev.viewsRead.Load() - before; n >= streams {
		t.Fatalf("%d streams read the view %d times for one change", streams, n)
	}
}
