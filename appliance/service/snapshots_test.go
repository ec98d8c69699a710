package service

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

// Only the newest snapshot_keep snapshots of a box stay, in the store and
// on the engine, and one the box was restored from stays too.
func TestSnapshotRetention(t *testing.T) {
	s, drv := newService(t)
	s.Cfg.SnapshotKeep = 2
	clock := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
	ctx := context.Background()
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 4 {
		sn, err := s.Snapshot(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sn.ID)
	}
	listed := func(box string) []string {
		t.Helper()
		sns, err := s.Snapshots(box)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, sn := range sns {
			out = append(out, sn.ID)
		}
		return out
	}
	engine := func(box string) []string {
		t.Helper()
		sns, _ := drv.Snapshots(ctx)
		var out []string
		for _, sn := range sns {
			if sn.Box == box {
				out = append(out, sn.ID)
			}
		}
		slices.Sort(out)
		return out
	}
	if got := listed("a"); !slices.Equal(got, ids[2:]) {
		t.Fatalf("listed %v, want the newest two of %v", got, ids)
	}
	if got := engine("a"); !slices.Equal(got, ids[2:]) {
		t.Fatalf("engine has %v, want the newest two of %v", got, ids)
	}
	if got := listed("b"); len(got) != 1 {
		t.Fatalf("another box's snapshots were pruned: %v", got)
	}

	// Restored from ids[2], box a is made from it: it stays however many
	// snapshots come after.
	if _, err := s.Restore(ctx, "a", ids[2]); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		sn, err := s.Snapshot(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sn.ID)
	}
	want := []string{ids[2], ids[5], ids[6]}
	if got := listed("a"); !slices.Equal(got, want) {
		t.Fatalf("after a restore and three snapshots: listed %v, want %v", got, want)
	}
	if got := engine("a"); !slices.Equal(got, want) {
		t.Fatalf("after a restore and three snapshots: engine has %v, want %v", got, want)
	}
}
