package service

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Metrics: every metrics_interval each running box's use is read from
// the kernel (driver.Meter: its cgroup and its network namespace, on the
// server it runs on) and kept as a sample in the store: CPU as a
// percentage of one CPU between two samples, memory against its bound,
// processes, network bytes and their rates, and its disk as last
// measured (a walk of its files: every disk_check_interval for a box
// with a disk bound, every metrics_disk_interval otherwise). Samples
// older than an hour are thinned to one a minute and dropped after
// metrics_keep. The newest sample of each box is also kept in memory for
// GET /v1/metrics and the events stream.
//
// The kernel's kills of a box's processes for its memory bound are
// counted from the box's own count (which starts again with its
// container) and recorded on the box, with the time the last was seen:
// paddock show and the dashboard say "killed: out of memory at ...", and
// the events stream shows the box's change. A box whose first process
// itself was killed is started again by the reconciler, and its count
// starts again: what was seen before stays.

// thinEvery is how often old samples are thinned and dropped.
const thinEvery = 10 * time.Minute

// MetricsFull is how long samples are kept at full rate before they
// are thinned to one a minute.
const MetricsFull = time.Hour

// metrics is what the sampler keeps between passes.
type metrics struct {
	mu      sync.Mutex
	last    map[string]lastUse // the use read at the box's last sample
	disks   map[string]diskSeen
	latest  []api.Sample // the newest pass's, by box name
	pass    int64        // passes done
	thinned time.Time
}

type lastUse struct {
	at time.Time
	u  driver.Usage
}

type diskSeen struct {
	bytes int64
	at    time.Time
}

// noteDisk records a box's disk as measured now (by the disk check or
// the sampler).
func (s *Service) noteDisk(name string, bytes int64) {
	m := &s.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.disks == nil {
		m.disks = map[string]diskSeen{}
	}
	m.disks[name] = diskSeen{bytes, s.now()}
}

// SampleMetrics reads the use of every running box, records it, and
// records the kernel's new kills for a box's memory bound.
func (s *Service) SampleMetrics(ctx context.Context) error {
	meter, ok := s.Driver.(driver.Meter)
	if !ok {
		return nil
	}
	boxes, err := s.Store.ListBoxes()
	if err != nil {
		return err
	}
	diskMeter, _ := s.Driver.(driver.DiskMeter)
	var samples []store.Sample
	var errs []error
	running := map[string]bool{}
	for _, b := range boxes {
		if b.Desired != "running" || b.Observed != "running" {
			continue
		}
		u, err := meter.BoxUsage(ctx, b.Key())
		if err != nil {
			// Stopped between the list and the look, or its server is
			// away: no sample.
			s.Log.Debug("metrics", "box", b.Name, "err", err)
			continue
		}
		now := s.now()
		running[b.Name] = true
		m := store.Sample{Box: b.Name, At: now, Memory: u.Memory, MemoryLimit: u.MemoryLimit,
			NetRx: u.NetRx, NetTx: u.NetTx, Processes: u.Processes,
			DiskLimit: int64(s.Cfg.Types[b.Type].DiskGiB * (1 << 30))}
		s.metrics.mu.Lock()
		prev, had := s.metrics.last[b.Name]
		if s.metrics.last == nil {
			s.metrics.last = map[string]lastUse{}
		}
		s.metrics.last[b.Name] = lastUse{now, u}
		disk, measured := s.metrics.disks[b.Name]
		s.metrics.mu.Unlock()
		if dt := now.Sub(prev.at); had && dt > 0 {
			// Counts that went back belong to a container started since.
			if u.CPU >= prev.u.CPU {
				m.CPU = 100 * float64(u.CPU-prev.u.CPU) / float64(dt)
			}
			if u.NetRx >= prev.u.NetRx && u.NetTx >= prev.u.NetTx {
				m.RxRate = float64(u.NetRx-prev.u.NetRx) / dt.Seconds()
				m.TxRate = float64(u.NetTx-prev.u.NetTx) / dt.Seconds()
			}
		}
		// A box with a disk bound is measured by the disk check (the
		// sampler takes its figure); another, every metrics_disk_interval.
		checked := s.Cfg.Types[b.Type].DiskGiB > 0 && s.Cfg.DiskCheckInterval > 0
		if diskMeter != nil && (!measured || (!checked && now.Sub(disk.at) >= s.Cfg.MetricsDiskInterval)) {
			if n, err := diskMeter.DiskUsage(ctx, b.Key()); err == nil {
				s.noteDisk(b.Name, n)
				disk = diskSeen{bytes: n}
			}
		}
		m.Disk = disk.bytes
		samples = append(samples, m)
		// The box's own count of OOM kills starts again with its
		// container: one lower than last seen is all new.
		if u.OOMKills != b.OOMSeen {
			kills := u.OOMKills - b.OOMSeen
			if u.OOMKills < b.OOMSeen {
				kills = u.OOMKills
			}
			if kills > 0 {
				s.Log.Warn("box process killed for its memory bound", "box", b.Name, "kills", kills, "memory_limit", u.MemoryLimit)
			}
			errs = append(errs, s.Store.RecordOOM(b.Name, u.OOMKills, kills, now))
		}
	}
	errs = append(errs, s.Store.AddSamples(samples))
	latest := make([]api.Sample, 0, len(samples))
	for _, m := range samples {
		latest = append(latest, toAPISample(m))
	}
	now := s.now()
	m := &s.metrics
	m.mu.Lock()
	for name := range m.last {
		if !running[name] {
			delete(m.last, name)
			delete(m.disks, name)
		}
	}
	m.latest = latest
	m.pass++
	thin := now.Sub(m.thinned) >= thinEvery
	if thin {
		m.thinned = now
	}
	m.mu.Unlock()
	if thin {
		errs = append(errs, s.Store.ThinSamples(now.Add(-s.Cfg.MetricsKeep), now.Add(-MetricsFull)))
	}
	return errors.Join(errs...)
}

func toAPISample(m store.Sample) api.Sample {
	return api.Sample{Box: m.Box, At: m.At, CPU: m.CPU, Memory: m.Memory, MemoryLimit: m.MemoryLimit,
		Disk: m.Disk, DiskLimit: m.DiskLimit, NetRx: m.NetRx, NetTx: m.NetTx,
		NetRxRate: m.RxRate, NetTxRate: m.TxRate, Processes: m.Processes}
}

// metricsPass is the number of sampling passes done.
func (s *Service) metricsPass() int64 {
	s.metrics.mu.Lock()
	defer s.metrics.mu.Unlock()
	return s.metrics.pass
}

// LatestMetrics is the newest sample of each running box the user of ctx
// sees, by name.
func (s *Service) LatestMetrics(ctx context.Context) ([]api.Sample, error) {
	boxes, err := s.ListBoxes(ctx)
	if err != nil {
		return nil, err
	}
	sees := map[string]bool{}
	for _, b := range boxes {
		sees[b.Name] = true
	}
	s.metrics.mu.Lock()
	defer s.metrics.mu.Unlock()
	out := []api.Sample{}
	for _, m := range s.metrics.latest {
		if sees[m.Box] {
			out = append(out, m)
		}
	}
	return out, nil
}

// BoxMetrics is a box's samples since a time (the caller has been shown
// to see the box).
func (s *Service) BoxMetrics(name string, since time.Time) (api.BoxMetrics, error) {
	if _, err := s.GetBox(name); err != nil {
		return api.BoxMetrics{}, err
	}
	if lo := s.now().Add(-s.Cfg.MetricsKeep); since.Before(lo) {
		since = lo
	}
	ms, err := s.Store.Samples(name, since)
	if err != nil {
		return api.BoxMetrics{}, err
	}
	out := api.BoxMetrics{Box: name, Interval: s.Cfg.MetricsInterval.String(), Samples: make([]api.Sample, 0, len(ms))}
	for _, m := range ms {
		out.Samples = append(out.Samples, toAPISample(m))
	}
	return out, nil
}
