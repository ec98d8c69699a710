package service

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/events"
	"github.com/paddock-dev/paddock/appliance/store"
)

// sampler is the sampler as the core sees it (the real one is package
// metrics', tested there): passes the test makes, and the disk figures
// the core hands it.
type sampler struct {
	mu    sync.Mutex
	pass  int64
	last  []api.Sample
	disks map[string]int64
}

func (f *sampler) Pass() int64 { f.mu.Lock(); defer f.mu.Unlock(); return f.pass }

func (f *sampler) LatestSeen(context.Context) ([]api.Sample, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.Sample(nil), f.last...), nil
}

func (f *sampler) NoteDisk(box string, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.disks == nil {
		f.disks = map[string]int64{}
	}
	f.disks[box] = n
}

func (f *sampler) passed(ms ...api.Sample) { f.mu.Lock(); f.pass++; f.last = ms; f.mu.Unlock() }

// The core and the sampler: the disk check's measure goes to the sampler
// (its figure is the samples' disk); the events stream, asked for
// metrics, sends the sampler's samples after "ready" at each new pass; a
// removed box's samples go with it.
func TestMetricsWithTheCore(t *testing.T) {
	s, drv := newService(t)
	f := &sampler{}
	s.Metrics = f
	ctx := context.Background()
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "web"}); err != nil {
		t.Fatal(err)
	}
	bt := s.Cfg.Types["small"]
	bt.DiskGiB = 1
	s.Cfg.Types["small"] = bt
	drv.Usage = map[string]int64{"web": 90 << 20}
	if err := s.CheckDisk(ctx); err != nil {
		t.Fatal(err)
	}
	if f.disks["web"] != 90<<20 {
		t.Fatalf("the disk check's measure was not handed to the sampler: %v", f.disks)
	}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	with := make(chan events.Event, 64)
	go events.New(s, s.Store, f).Watch(wctx, 10*time.Millisecond, true, func(e events.Event) error { with <- e; return nil })
	for e := range with {
		if e.Kind == "ready" {
			break
		}
	}
	f.passed(api.Sample{Box: "web", CPU: 42})
	deadline := time.After(10 * time.Second)
	for got := false; !got; {
		select {
		case e := <-with:
			if e.Kind != "metrics" {
				continue
			}
			if m := e.Data.(api.Sample); m.Box != "web" || m.CPU != 42 {
				t.Fatalf("the stream sent %+v", m)
			}
			got = true
		case <-deadline:
			t.Fatal("no metrics event after a pass")
		}
	}

	if err := s.Store.AddSamples([]store.Sample{{Box: "web", At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveBox(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if ms, _ := s.Store.Samples("web", time.Time{}); len(ms) != 0 {
		t.Fatalf("a removed box's samples: %d left", len(ms))
	}
}
