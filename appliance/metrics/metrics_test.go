package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// core is the core as the sampler sees it, over a real store: the boxes
// the caller sees (their owner's, or all for the owner), and a clock.
type core struct {
	st  *store.Store
	mu  sync.Mutex
	now time.Time
}

func (c *core) ListBoxes(ctx context.Context) ([]api.Box, error) {
	bs, err := c.st.ListBoxes()
	if err != nil {
		return nil, err
	}
	var out []api.Box
	for _, b := range bs {
		if caller.Visible(ctx, b.Owner) {
			out = append(out, api.Box{Name: b.Name})
		}
	}
	return out, nil
}

func (c *core) GetBox(name string) (api.Box, error) {
	if _, err := c.st.GetBox(name); errors.Is(err, store.ErrNotFound) {
		return api.Box{}, &api.Error{Code: api.CodeNotFound, Message: "no box named " + name}
	} else if err != nil {
		return api.Box{}, err
	}
	return api.Box{Name: name}, nil
}

func (c *core) Time() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *core) later(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// meter is the engine's measures, as set by the test: a driver that
// has only these (its other methods are not called).
type meter struct {
	driver.Driver
	mu   sync.Mutex
	use  map[string]driver.Usage
	disk map[string]int64
}

func (m *meter) BoxUsage(_ context.Context, box string) (driver.Usage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.use[box]
	if !ok {
		return u, driver.ErrNotFound
	}
	return u, nil
}

func (m *meter) DiskUsage(_ context.Context, box string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.disk[box], nil
}

func (m *meter) VolumeUsage(context.Context, driver.VolumeRef) (int64, error) { return 0, nil }

func (m *meter) set(box string, u driver.Usage) { m.mu.Lock(); m.use[box] = u; m.mu.Unlock() }

func (m *meter) setDisk(box string, n int64) { m.mu.Lock(); m.disk[box] = n; m.mu.Unlock() }

// Each running box is sampled: CPU as a percentage of one CPU between two
// samples, rates of its network bytes, memory, processes and bounds as
// read; its disk from the last measure (the disk check's, or its own),
// measured again once older than metrics_disk_interval; the kernel's OOM
// kills counted on the box (a count that went back is a container
// started again: all new), with the time; a member sees the samples of
// their own boxes only; old samples are thinned, then dropped.
func TestMetrics(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg, err := config.Load(nil, []string{"PADDOCK_CONFIG=" + os.DevNull, "PADDOCK_STATE_DIR=" + dir, "PADDOCK_IMAGE=img"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.MetricsDiskInterval = time.Minute
	// Small boxes have no disk bound at first: the sampler measures them.
	bt := cfg.Types["small"]
	bt.DiskGiB = 0
	cfg.Types["small"] = bt
	c := &core{st: st, now: time.Now().UTC().Truncate(time.Minute)}
	mtr := &meter{use: map[string]driver.Usage{}, disk: map[string]int64{}}
	m := New(c, st, mtr, &cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()

	owner, err := st.CreateUser(store.User{Name: "olga", Role: store.RoleOwner, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	mia, err := st.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	asMia := caller.With(ctx, mia)
	for _, b := range []store.Box{{Name: "web", Owner: owner.ID}, {Name: "hers", Owner: mia.ID}, {Name: "off", Owner: owner.ID}} {
		b.Type, b.Image, b.Desired, b.Created = "small", "img", "running", time.Now()
		if b.Name == "off" {
			b.Desired = "stopped"
		}
		if err := st.Declare(func(tx *store.Tx) error { return tx.CreateBox(b) }); err != nil {
			t.Fatal(err)
		}
		if err := st.SetObserved(b.Name, b.Desired, ""); err != nil {
			t.Fatal(err)
		}
	}
	sample := func() {
		t.Helper()
		if err := m.Sample(ctx); err != nil {
			t.Fatal(err)
		}
	}
	latest := func(ctx context.Context) map[string]api.Sample {
		t.Helper()
		ms, err := m.LatestSeen(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]api.Sample{}
		for _, s := range ms {
			out[s.Box] = s
		}
		return out
	}
	mtr.setDisk("web", 50<<20)
	mtr.set("web", driver.Usage{CPU: time.Second, Memory: 200 << 20, MemoryLimit: 2 << 30, Processes: 7, NetRx: 1000, NetTx: 500})
	mtr.set("hers", driver.Usage{CPU: time.Second, Memory: 1 << 20, Processes: 1})
	mtr.set("off", driver.Usage{CPU: time.Second})
	sample()
	first := latest(ctx)["web"]
	if first.CPU != 0 || first.Memory != 200<<20 || first.MemoryLimit != 2<<30 || first.Processes != 7 || first.Disk != 50<<20 || first.NetRx != 1000 {
		t.Fatalf("the first sample: %+v", first)
	}
	if first.DiskLimit != 0 {
		t.Fatalf("disk bound %d, want the type's disk_gib (none)", first.DiskLimit)
	}
	if _, ok := latest(ctx)["off"]; ok {
		t.Fatal("a stopped box was sampled")
	}
	// One CPU busy for 5 s of 5: 100%; 5000 bytes in over 5 s: 1000/s.
	c.later(5 * time.Second)
	mtr.set("web", driver.Usage{CPU: 6 * time.Second, Memory: 300 << 20, MemoryLimit: 2 << 30, Processes: 9, NetRx: 6000, NetTx: 500})
	mtr.setDisk("web", 80<<20)
	sample()
	s := latest(ctx)["web"]
	if s.CPU != 100 || s.NetRxRate != 1000 || s.NetTxRate != 0 || s.Memory != 300<<20 || s.Processes != 9 {
		t.Fatalf("the second sample: %+v", s)
	}
	if s.Disk != 50<<20 {
		t.Fatalf("disk measured again within metrics_disk_interval: %d", s.Disk)
	}
	c.later(time.Minute)
	sample()
	if s := latest(ctx)["web"]; s.Disk != 80<<20 || s.CPU != 0 {
		t.Fatalf("after metrics_disk_interval, and with no CPU used: %+v", s)
	}
	// A box with a disk bound is measured by the disk check: its figure
	// is the sample's, and the sampler does not walk the disk itself.
	bt.DiskGiB = 1
	cfg.Types["small"] = bt
	mtr.setDisk("web", 1)
	m.NoteDisk("web", 90<<20)
	c.later(2 * time.Minute)
	sample()
	if s := latest(ctx)["web"]; s.Disk != 90<<20 || s.DiskLimit != 1<<30 {
		t.Fatalf("after the disk check measured 90 MiB: %d of %d", s.Disk, s.DiskLimit)
	}

	// Two processes killed for the memory bound.
	mtr.set("web", driver.Usage{CPU: 7 * time.Second, OOMKills: 2})
	c.later(time.Second)
	killedAt := c.Time()
	sample()
	b, _ := st.GetBox("web")
	if b.OOMKills != 2 || b.OOMAt == nil || !b.OOMAt.Equal(killedAt) {
		t.Fatalf("after 2 OOM kills: %d at %v", b.OOMKills, b.OOMAt)
	}
	seen, _ := st.Seen()
	c.later(time.Second)
	sample()
	if b, _ := st.GetBox("web"); b.OOMKills != 2 || !b.OOMAt.Equal(killedAt) {
		t.Fatalf("no new kill: %d at %v", b.OOMKills, b.OOMAt)
	}
	if n, _ := st.Seen(); n != seen {
		t.Fatal("a sample with nothing new about the box wrote the box (the events stream would show it)")
	}
	// Its container started again, and one more was killed.
	mtr.set("web", driver.Usage{OOMKills: 1})
	c.later(time.Second)
	sample()
	if b, _ := st.GetBox("web"); b.OOMKills != 3 {
		t.Fatalf("a count that went back to 1: %d in all, want 3", b.OOMKills)
	}

	// A member sees their own boxes' samples; the owner, all.
	if got := latest(asMia); len(got) != 1 || got["hers"].Box != "hers" {
		t.Fatalf("a member's samples: %+v", got)
	}
	if got := latest(caller.With(ctx, owner)); len(got) != 2 {
		t.Fatalf("the owner's samples: %d boxes", len(got))
	}
	if p := m.Pass(); p != 7 {
		t.Fatalf("%d passes counted, want 7", p)
	}

	// History: every sample for the last hour, then one a minute.
	start := c.Time()
	h, err := m.History("web", start.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Samples) != 7 || h.Samples[0].At.After(h.Samples[6].At) || h.Interval != cfg.MetricsInterval.String() {
		t.Fatalf("samples of web: %d (interval %s)", len(h.Samples), h.Interval)
	}
	if _, err := m.History("nosuch", start); err == nil {
		t.Fatal("the history of a box that is not there")
	}
	c.later(2 * time.Hour)
	sample()
	if h, _ := m.History("web", start.Add(-3*time.Hour)); len(h.Samples) != 4 {
		// The 7 older samples fell in three minutes: one of each, and
		// the new one.
		t.Fatalf("after two hours, thinned to one a minute: %d samples", len(h.Samples))
	}
	c.later(cfg.MetricsKeep + time.Minute)
	sample()
	if h, _ := m.History("web", start.Add(-48*time.Hour)); len(h.Samples) != 1 {
		t.Fatalf("after metrics_keep: %d samples, want the newest only", len(h.Samples))
	}
}
