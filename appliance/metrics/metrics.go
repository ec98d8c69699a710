// Package metrics is what running boxes use, sampled: every
// metrics_interval each running box's use is read from the kernel
// (driver.Meter: its cgroup and its network namespace, on the server it
// runs on) and kept as a sample in the store: CPU as a percentage of one
// CPU between two samples, memory against its bound, processes, network
// bytes and their rates, and its disk as last measured (a walk of its
// files: every disk_check_interval for a box with a disk bound, by the
// disk check, which hands its figure here (NoteDisk); every
// metrics_disk_interval otherwise, here). Samples older than an hour are
// thinned to one a minute and dropped after metrics_keep. The newest
// sample of each box is also kept in memory, for GET /v1/metrics and the
// events stream (which reads Pass and LatestSeen).
//
// The kernel's kills of a box's processes for its memory bound are
// counted from the box's own count (which starts again with its
// container) and recorded on the box, with the time the last was seen:
// paddock show and the dashboard say "killed: out of memory at ...", and
// the events stream shows the box's change. A box whose first process
// itself was killed is started again by the reconciler, and its count
// starts again: what was seen before stays.
//
// This folder is the capability whole: the sampler (Sampler.Sample, run
// by paddockd every metrics_interval), its API routes (Routes), over the
// core's Core and the store's samples.
package metrics

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// ThinEvery is how often old samples are thinned and dropped.
const ThinEvery = 10 * time.Minute

// Full is how long samples are kept at full rate before they are thinned
// to one a minute.
const Full = time.Hour

// Core is what the metrics need of paddockd's core (package service's
// Service has it): the boxes the caller sees, one box the caller sees,
// and the core's clock.
type Core interface {
	ListBoxes(ctx context.Context) ([]api.Box, error)
	GetBox(name string) (api.Box, error)
	Time() time.Time
}

// Store is where the samples are kept (package store's Store): every
// declared box, the samples, and the kernel's kills recorded on a box.
type Store interface {
	ListBoxes() ([]store.Box, error)
	AddSamples(samples []store.Sample) error
	Samples(box string, since time.Time) ([]store.Sample, error)
	ThinSamples(keepUntil, fullUntil time.Time) error
	RecordOOM(box string, seen, kills int64, at time.Time) error
}

// Sampler samples running boxes and answers for their samples.
type Sampler struct {
	core  Core
	store Store
	drv   driver.Driver // asked driver.BoxUsage (and DiskUsage) where the engine measures
	cfg   *config.Config
	log   *slog.Logger

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

// New is the sampler of the boxes of st, read through drv (nothing is
// sampled where the driver is no driver.Meter), following cfg as it is at
// each pass.
func New(core Core, st Store, drv driver.Driver, cfg *config.Config, log *slog.Logger) *Sampler {
	return &Sampler{core: core, store: st, drv: drv, cfg: cfg, log: log}
}

// NoteDisk records a box's disk as measured now (by the disk check, or
// the sampler itself).
func (m *Sampler) NoteDisk(name string, bytes int64) {
	now := m.core.Time()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.disks == nil {
		m.disks = map[string]diskSeen{}
	}
	m.disks[name] = diskSeen{bytes, now}
}

// Sample reads the use of every running box, records it, and records
// the kernel's new kills for a box's memory bound.
func (m *Sampler) Sample(ctx context.Context) error {
	if !driver.BoxUsage.Has(m.drv) {
		return nil
	}
	boxes, err := m.store.ListBoxes()
	if err != nil {
		return err
	}
	diskMeter := driver.DiskUsage.Has(m.drv)
	var samples []store.Sample
	var errs []error
	running := map[string]bool{}
	for _, b := range boxes {
		if b.Desired != "running" || b.Observed != "running" {
			continue
		}
		u, err := driver.BoxUsage.Do(ctx, m.drv, b.Key())
		if err != nil {
			// Stopped between the list and the look, or its server is
			// away: no sample.
			m.log.Debug("metrics", "box", b.Name, "err", err)
			continue
		}
		now := m.core.Time()
		running[b.Name] = true
		diskGiB := m.cfg.Types[b.Type].DiskGiB
		sm := store.Sample{Box: b.Name, At: now, Memory: u.Memory, MemoryLimit: u.MemoryLimit,
			NetRx: u.NetRx, NetTx: u.NetTx, Processes: u.Processes,
			DiskLimit: int64(diskGiB * (1 << 30))}
		m.mu.Lock()
		prev, had := m.last[b.Name]
		if m.last == nil {
			m.last = map[string]lastUse{}
		}
		m.last[b.Name] = lastUse{now, u}
		disk, measured := m.disks[b.Name]
		m.mu.Unlock()
		if dt := now.Sub(prev.at); had && dt > 0 {
			// Counts that went back belong to a container started since.
			if u.CPU >= prev.u.CPU {
				sm.CPU = 100 * float64(u.CPU-prev.u.CPU) / float64(dt)
			}
			if u.NetRx >= prev.u.NetRx && u.NetTx >= prev.u.NetTx {
				sm.RxRate = float64(u.NetRx-prev.u.NetRx) / dt.Seconds()
				sm.TxRate = float64(u.NetTx-prev.u.NetTx) / dt.Seconds()
			}
		}
		// A box with a disk bound is measured by the disk check (the
		// sampler takes its figure); another, every metrics_disk_interval.
		checked := diskGiB > 0 && m.cfg.DiskCheckInterval > 0
		if diskMeter && (!measured || (!checked && now.Sub(disk.at) >= m.cfg.MetricsDiskInterval)) {
			if n, err := driver.DiskUsage.Do(ctx, m.drv, b.Key()); err == nil {
				m.NoteDisk(b.Name, n)
				disk = diskSeen{bytes: n}
			}
		}
		sm.Disk = disk.bytes
		samples = append(samples, sm)
		// The box's own count of OOM kills starts again with its
		// container: one lower than last seen is all new.
		if u.OOMKills != b.OOMSeen {
			kills := u.OOMKills - b.OOMSeen
			if u.OOMKills < b.OOMSeen {
				kills = u.OOMKills
			}
			if kills > 0 {
				m.log.Warn("box process killed for its memory bound", "box", b.Name, "kills", kills, "memory_limit", u.MemoryLimit)
			}
			errs = append(errs, m.store.RecordOOM(b.Name, u.OOMKills, kills, now))
		}
	}
	errs = append(errs, m.store.AddSamples(samples))
	latest := make([]api.Sample, 0, len(samples))
	for _, sm := range samples {
		latest = append(latest, toAPI(sm))
	}
	now := m.core.Time()
	m.mu.Lock()
	for name := range m.last {
		if !running[name] {
			delete(m.last, name)
			delete(m.disks, name)
		}
	}
	m.latest = latest
	m.pass++
	thin := now.Sub(m.thinned) >= ThinEvery
	if thin {
		m.thinned = now
	}
	m.mu.Unlock()
	if thin {
		errs = append(errs, m.store.ThinSamples(now.Add(-m.cfg.MetricsKeep), now.Add(-Full)))
	}
	return errors.Join(errs...)
}

func toAPI(m store.Sample) api.Sample {
	return api.Sample{Box: m.Box, At: m.At, CPU: m.CPU, Memory: m.Memory, MemoryLimit: m.MemoryLimit,
		Disk: m.Disk, DiskLimit: m.DiskLimit, NetRx: m.NetRx, NetTx: m.NetTx,
		NetRxRate: m.RxRate, NetTxRate: m.TxRate, Processes: m.Processes}
}

// Pass is the number of sampling passes done.
func (m *Sampler) Pass() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pass
}

// LatestSeen is the newest sample of each running box the caller of ctx
// sees.
func (m *Sampler) LatestSeen(ctx context.Context) ([]api.Sample, error) {
	boxes, err := m.core.ListBoxes(ctx)
	if err != nil {
		return nil, err
	}
	sees := map[string]bool{}
	for _, b := range boxes {
		sees[b.Name] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []api.Sample{}
	for _, s := range m.latest {
		if sees[s.Box] {
			out = append(out, s)
		}
	}
	return out, nil
}

// History is a box's samples since a time (at most metrics_keep back;
// the caller has been shown to see the box).
func (m *Sampler) History(name string, since time.Time) (api.BoxMetrics, error) {
	if _, err := m.core.GetBox(name); err != nil {
		return api.BoxMetrics{}, err
	}
	if lo := m.core.Time().Add(-m.cfg.MetricsKeep); since.Before(lo) {
		since = lo
	}
	ms, err := m.store.Samples(name, since)
	if err != nil {
		return api.BoxMetrics{}, err
	}
	out := api.BoxMetrics{Box: name, Interval: m.cfg.MetricsInterval.String(), Samples: make([]api.Sample, 0, len(ms))}
	for _, sm := range ms {
		out.Samples = append(out.Samples, toAPI(sm))
	}
	return out, nil
}
