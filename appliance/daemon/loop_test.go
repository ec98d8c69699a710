package daemon

import (
	"context"
	"sync"
	"testing"
	"time"
)

// A burst of kicks is one run, and kicks never start runs closer than
// kickGap: a box that dies as soon as it starts cannot spin the reconciler.
func TestLoopCoalescesAndSpacesKicks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kick := make(chan struct{}, 1)
	var mu sync.Mutex
	var runs []time.Time
	go loop(ctx, time.Hour, kick, func() {
		mu.Lock()
		runs = append(runs, time.Now())
		mu.Unlock()
	})
	send := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	// A burst, then kicks every 50 ms for 3 s.
	for i := 0; i < 10; i++ {
		send()
	}
	end := time.Now().Add(3 * time.Second)
	for time.Now().Before(end) {
		send()
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(kickGap + 500*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(runs) < 2 || len(runs) > 3 {
		t.Fatalf("%d runs for kicks over 3 s; want 2 or 3 (one per %s)", len(runs), kickGap)
	}
	for i := 1; i < len(runs); i++ {
		if gap := runs[i].Sub(runs[i-1]); gap < kickGap {
			t.Errorf("runs %d and %d were %s apart, under %s", i-1, i, gap, kickGap)
		}
	}
}
