package service

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Each running box is sampled: CPU as a percentage of one CPU between two
// samples, rates of its network bytes, memory, processes and bounds as
// read; its disk from the last measure, measured again once older than
// metrics_disk_interval; the kernel's OOM kills counted on the box (a
// count that went back is a container started again: all new), with
// the time; a member sees the samples of their own boxes only; the
// events stream sends them when asked; old samples are thinned, then
// dropped; a removed box's go with it.
func TestMetrics(t *testing.T) {
	s, drv := newService(t)
	var mu sync.Mutex
	now := time.Now().UTC().Truncate(time.Minute)
	s.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	later := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s.Cfg.MetricsDiskInterval = time.Minute
	// Small boxes have no disk bound at first: the sampler measures them.
	bt := s.Cfg.Types["small"]
	bt.DiskGiB = 0
	s.Cfg.Types["small"] = bt
	mia, err := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	asMia := caller.With(context.Background(), mia)
	ctx := context.Background()
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "web"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(asMia, api.BoxPost{Name: "hers"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "off"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StopBox(ctx, "off", "user"); err != nil {
		t.Fatal(err)
	}
	sample := func() {
		t.Helper()
		if err := s.SampleMetrics(ctx); err != nil {
			t.Fatal(err)
		}
	}
	latest := func(c context.Context) map[string]api.Sample {
		t.Helper()
		ms, err := s.LatestMetrics(c)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]api.Sample{}
		for _, m := range ms {
			out[m.Box] = m
		}
		return out
	}
	drv.Usage = map[string]int64{"web": 50 << 20}
	drv.Use = map[string]driver.Usage{
		"web":  {CPU: time.Second, Memory: 200 << 20, MemoryLimit: 2 << 30, Processes: 7, NetRx: 1000, NetTx: 500},
		"hers": {CPU: time.Second, Memory: 1 << 20, Processes: 1},
	}
	sample()
	first := latest(ctx)["web"]
	if first.CPU != 0 || first.Memory != 200<<20 || first.MemoryLimit != 2<<30 || first.Processes != 7 || first.Disk != 50<<20 || first.NetRx != 1000 {
		t.Fatalf("the first sample: %+v", first)
	}
	if first.DiskLimit != int64(s.Cfg.Types["small"].DiskGiB*(1<<30)) {
		t.Fatalf("disk bound %d, want the type's disk_gib", first.DiskLimit)
	}
	if _, ok := latest(ctx)["off"]; ok {
		t.Fatal("a stopped box was sampled")
	}
	// One CPU busy for 5 s of 5: 100%; 5000 bytes in over 5 s: 1000/s.
	later(5 * time.Second)
	drv.Use["web"] = driver.Usage{CPU: 6 * time.Second, Memory: 300 << 20, MemoryLimit: 2 << 30, Processes: 9, NetRx: 6000, NetTx: 500}
	drv.Usage["web"] = 80 << 20
	sample()
	m := latest(ctx)["web"]
	if m.CPU != 100 || m.NetRxRate != 1000 || m.NetTxRate != 0 || m.Memory != 300<<20 || m.Processes != 9 {
		t.Fatalf("the second sample: %+v", m)
	}
	if m.Disk != 50<<20 {
		t.Fatalf("disk measured again within metrics_disk_interval: %d", m.Disk)
	}
	later(time.Minute)
	sample()
	if m := latest(ctx)["web"]; m.Disk != 80<<20 || m.CPU != 0 {
		t.Fatalf("after metrics_disk_interval, and with no CPU used: %+v", m)
	}
	// The disk check's measure is the figure too.
	drv.Usage["web"] = 90 << 20
	bt.DiskGiB = 1
	s.Cfg.Types["small"] = bt
	if err := s.CheckDisk(ctx); err != nil {
		t.Fatal(err)
	}
	later(time.Second)
	sample()
	if m := latest(ctx)["web"]; m.Disk != 90<<20 {
		t.Fatalf("after the disk check measured 90 MiB: %d", m.Disk)
	}

	// Two processes killed for the memory bound.
	drv.Use["web"] = driver.Usage{CPU: 7 * time.Second, OOMKills: 2}
	later(time.Second)
	killedAt := s.now()
	sample()
	b, _ := s.GetBox("web")
	if b.OOMKills != 2 || b.OOMAt == nil || !b.OOMAt.Equal(killedAt) {
		t.Fatalf("after 2 OOM kills: %d at %v", b.OOMKills, b.OOMAt)
	}
	seen, _ := s.Store.Seen()
	later(time.Second)
	sample()
	if b, _ := s.GetBox("web"); b.OOMKills != 2 || !b.OOMAt.Equal(killedAt) {
		t.Fatalf("no new kill: %d at %v", b.OOMKills, b.OOMAt)
	}
	if n, _ := s.Store.Seen(); n != seen {
		t.Fatal("a sample with nothing new about the box wrote the box (the events stream would show it)")
	}
	// Its container started again, and one more was killed.
	drv.Use["web"] = driver.Usage{OOMKills: 1}
	later(time.Second)
	sample()
	if b, _ := s.GetBox("web"); b.OOMKills != 3 {
		t.Fatalf("a count that went back to 1: %d in all, want 3", b.OOMKills)
	}

	// A member sees their own boxes' samples.
	if got := latest(asMia); len(got) != 1 || got["hers"].Box != "hers" {
		t.Fatalf("a member's samples: %+v", got)
	}
	if got := latest(ctx); len(got) != 2 {
		t.Fatalf("the owner's samples: %d boxes", len(got))
	}

	// The events stream, asked for them, sends each box's sample at each
	// pass after "ready".
	wctx, cancel := context.WithCancel(asMia)
	defer cancel()
	events := make(chan Event, 64)
	go s.Watch(wctx, 10*time.Millisecond, true, func(e Event) error { events <- e; return nil })
	for e := range events {
		if e.Kind == "ready" {
			break
		}
	}
	sample()
	deadline := time.After(10 * time.Second)
	for got := false; !got; {
		select {
		case e := <-events:
			if e.Kind != "metrics" {
				continue
			}
			if m := e.Data.(api.Sample); m.Box != "hers" {
				t.Fatalf("a member's stream sent the samples of %s", m.Box)
			}
			got = true
		case <-deadline:
			t.Fatal("no metrics event after a pass")
		}
	}

	// History: every sample for the last hour, then one a minute.
	h, err := s.BoxMetrics("web", now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Samples) != 8 || h.Samples[0].At.After(h.Samples[7].At) {
		t.Fatalf("samples of web: %d", len(h.Samples))
	}
	later(2 * time.Hour)
	sample()
	if h, _ := s.BoxMetrics("web", now.Add(-3*time.Hour)); len(h.Samples) != 3 {
		// The 8 older samples fell in the first two minutes: one of
		// each, and the new one.
		t.Fatalf("after two hours, thinned to one a minute: %d samples", len(h.Samples))
	}
	later(s.Cfg.MetricsKeep + time.Minute)
	sample()
	if h, _ := s.BoxMetrics("web", now.Add(-48*time.Hour)); len(h.Samples) != 1 {
		t.Fatalf("after metrics_keep: %d samples, want the newest only", len(h.Samples))
	}
	if err := s.RemoveBox(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if ms, _ := s.Store.Samples("web", time.Time{}); len(ms) != 0 {
		t.Fatalf("a removed box's samples: %d left", len(ms))
	}
}
