package service

import (
	"context"
	"testing"
	"time"
)

// Background work waits while a request runs and for the quiet after it,
// and never longer than its bound; with nothing running it does not wait
// at all (a wait would hang this test for an hour).
func TestLull(t *testing.T) {
	ctx := context.Background()
	var f Foreground
	if w := f.Lull(ctx, time.Hour, time.Hour); w >= time.Hour {
		t.Fatalf("waited %s with nothing running", w)
	}
	end := f.Begin()
	go func() { time.Sleep(100 * time.Millisecond); end(); end() }()
	if w := f.Lull(ctx, 50*time.Millisecond, time.Hour); w < 150*time.Millisecond {
		t.Fatalf("waited %s: less than the request (100 ms) and the quiet after it (50 ms)", w)
	}
	if f.running.Load() != 0 {
		t.Fatalf("an end called twice counted twice: %d running", f.running.Load())
	}
	f.Begin() // never ends
	if w := f.Lull(ctx, time.Millisecond, 100*time.Millisecond); w < 100*time.Millisecond {
		t.Fatalf("returned after %s, before its bound, with a request running", w)
	}
}
