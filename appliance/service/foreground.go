package service

import (
	"context"
	"sync/atomic"
	"time"
)

// Foreground counts the requests people wait on while they run (the API
// marks them: making boxes, pushing and pulling files, snapshots and the
// like), so that background work (refilling the warm pool, measuring
// disks) can wait for a lull instead of competing with them. The wait is
// bounded: background work is delayed, never starved.
type Foreground struct {
	running atomic.Int64
	ended   atomic.Int64 // when the last one ended (Unix nanoseconds)
}

// Begin marks a request as running; end marks it done.
func (f *Foreground) Begin() (end func()) {
	f.running.Add(1)
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			f.ended.Store(time.Now().UnixNano())
			f.running.Add(-1)
		}
	}
}

// Busy says whether a request people wait on runs now.
func (f *Foreground) Busy() bool { return f.running.Load() > 0 }

// Lull waits until no request runs and none ended within quiet, or until
// max has passed, or ctx ends. It says how long it waited.
func (f *Foreground) Lull(ctx context.Context, quiet, max time.Duration) time.Duration {
	start := time.Now()
	for {
		idle := time.Since(time.Unix(0, f.ended.Load()))
		if f.running.Load() == 0 && idle >= quiet {
			return time.Since(start)
		}
		wait := 50 * time.Millisecond
		if f.running.Load() == 0 {
			wait = quiet - idle
		}
		if left := max - time.Since(start); left <= 0 {
			return time.Since(start)
		} else if wait > left {
			wait = left
		}
		select {
		case <-ctx.Done():
			return time.Since(start)
		case <-time.After(wait):
		}
	}
}
