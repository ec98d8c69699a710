package daemon

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Kicks never start runs closer than kickGap (so a burst of kicks is one
// run, and a box that dies as soon as it starts cannot spin the
// reconciler), and no kick is lost: the last one is followed by a run.
// Neither depends on how fast the machine is: a slower one makes fewer
// runs, never closer ones.
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
	lastKick := time.Now()
	send()
	for i := 0; ; i++ {
		mu.Lock()
		served := len(runs) > 0 && runs[len(runs)-1].After(lastKick)
		mu.Unlock()
		if served {
			break
		}
		if i == 600 {
			t.Fatal("the last kick was not followed by a run within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(runs); i++ {
		if gap := runs[i].Sub(runs[i-1]); gap < kickGap {
			t.Errorf("runs %d and %d were %s apart, under %s", i-1, i, gap, kickGap)
		}
	}
}
