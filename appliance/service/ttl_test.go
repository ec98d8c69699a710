package service

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

// ExpireTTLs with an injected clock: before the TTL nothing happens and
// the next expiry is reported; after it the box is stopped with a "ttl"
// snapshot; a box started again gets a whole new TTL from then.
func TestExpireTTLsWithAClock(t *testing.T) {
	s, _ := newService(t)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return now }
	ctx := context.Background()
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "t", TTL: "1h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "forever"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(59 * time.Minute)
	next, err := s.ExpireTTLs(ctx)
	if err != nil || !next.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("before the TTL: next %v, %v", next, err)
	}
	if b, _ := s.GetBox("t"); b.Desired != "running" || b.Status != "running" {
		t.Fatalf("stopped early: %+v", b)
	}
	now = now.Add(2 * time.Minute)
	if next, err = s.ExpireTTLs(ctx); err != nil || !next.IsZero() {
		t.Fatalf("after the TTL: next %v, %v", next, err)
	}
	b, _ := s.GetBox("t")
	if b.Desired != "stopped" || b.Status != "stopped" {
		t.Fatalf("after the TTL: %+v", b)
	}
	// It says why it stopped and when, as an idle stop does.
	if want := "stopped at 2026-12-01T10:00:00Z: its time to live (1h0m0s) ran out"; !strings.HasPrefix(b.Note, want) {
		t.Fatalf("after the TTL the note is %q, want it to begin %q", b.Note, want)
	}
	sns, _ := s.Snapshots("t")
	if len(sns) != 1 || sns[0].Reason != "ttl" {
		t.Fatalf("snapshots: %+v", sns)
	}
	if f, _ := s.GetBox("forever"); f.Status != "running" {
		t.Fatalf("a box without a TTL: %+v", f)
	}
	b, err = s.StartBox(ctx, "t")
	if err != nil || b.ExpiresAt == nil || !b.ExpiresAt.Equal(now.Add(time.Hour)) || b.Note != "" {
		t.Fatalf("started again: %+v %v", b, err)
	}
	// A TTL stop is not a disk stop: the box's disk is checked at once.
	if s.inDiskGrace("t") {
		t.Fatal("a box its TTL stopped got a disk grace when it started again")
	}
}
