package service

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

// A running box past its type's disk_gib is stopped, without a snapshot,
// with a note that names the bound; a box under it runs on; starting the
// stopped box clears the note.
func TestCheckDiskStopsABoxPastItsBound(t *testing.T) {
	s, drv := newService(t)
	ctx := context.Background()
	small := s.Cfg.Types["small"]
	small.DiskGiB = 1
	s.Cfg.Types["small"] = small
	for _, n := range []string{"big", "fine"} {
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: n, Type: "small"}); err != nil {
			t.Fatal(err)
		}
	}
	drv.Usage = map[string]int64{"big": 3 << 29, "fine": 1 << 29} // 1.5 GiB and 0.5 GiB
	before, _ := s.Store.ListSnapshots("big")
	if err := s.CheckDisk(ctx); err != nil {
		t.Fatal(err)
	}
	big, err := s.GetBox("big")
	if err != nil {
		t.Fatal(err)
	}
	if big.Desired != "stopped" || big.Status != "stopped" || !strings.Contains(big.Note, "1.50 GiB, past types.small.disk_gib = 1") {
		t.Fatalf("the box past its bound: desired %s, status %s, note %q", big.Desired, big.Status, big.Note)
	}
	if after, _ := s.Store.ListSnapshots("big"); len(after) != len(before) {
		t.Fatalf("a snapshot was taken: %d before, %d after", len(before), len(after))
	}
	if fine, _ := s.GetBox("fine"); fine.Status != "running" || fine.Note != "" {
		t.Fatalf("the box under its bound: %s %q", fine.Status, fine.Note)
	}
	// Started again, it has a grace to free space: a check within it
	// leaves the box alone; one after it stops the box again.
	if b, err := s.StartBox(ctx, "big"); err != nil || b.Status != "running" || b.Note != "" {
		t.Fatalf("started again: %v %s %q", err, b.Status, b.Note)
	}
	if err := s.CheckDisk(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.GetBox("big"); b.Status != "running" {
		t.Fatalf("stopped again within its grace: %s %q", b.Status, b.Note)
	}
	s.Now = func() time.Time { return time.Now().Add(diskGrace(s.Cfg) + time.Second) }
	if err := s.CheckDisk(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.GetBox("big"); b.Status != "stopped" {
		t.Fatalf("still past its bound after its grace: %s", b.Status)
	}
}
