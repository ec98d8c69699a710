package service

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
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

// A member's drives together count against limits.drive_gib: past it, the
// member's running boxes that mount one of them are stopped with a note
// that names the bound (their other boxes, and an owner's, run on); a
// box started again has its grace, and is stopped again after it unless
// space was freed.
func TestCheckDiskBoundsAMembersDrives(t *testing.T) {
	s, drv := newService(t)
	s.Cfg.Limits.DriveGiB = 1
	mia, _ := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	boss, _ := s.Store.CreateUser(store.User{Name: "boss", Role: store.RoleOwner, Created: time.Now()})
	asMia, asBoss := caller.With(context.Background(), mia), caller.With(context.Background(), boss)
	ctx := context.Background()
	for _, d := range []struct {
		ctx  context.Context
		name string
	}{{asMia, "data"}, {asMia, "more"}, {asBoss, "bossdata"}} {
		if _, err := drivesOf(s).Create(d.ctx, api.DrivePost{Name: d.name}); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []struct {
		ctx   context.Context
		name  string
		drive string
	}{{asMia, "writer", "data"}, {asMia, "other", ""}, {asBoss, "bosses", "bossdata"}} {
		p := api.BoxPost{Name: b.name}
		if b.drive != "" {
			p.Mounts = []api.Mount{{Drive: b.drive, Path: "/mnt/" + b.drive}}
		}
		if _, err := s.CreateBox(b.ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// Each of mia's drives is under the bound; together they are past it.
	drv.Usage = map[string]int64{"drive:data": 3 << 28, "drive:more": 3 << 28, "drive:bossdata": 8 << 30}
	if err := s.CheckDisk(ctx); err != nil {
		t.Fatal(err)
	}
	status := func(name string) (string, string) {
		b, err := s.GetBox(name)
		if err != nil {
			t.Fatal(err)
		}
		return b.Status, b.Note
	}
	if st, note := status("writer"); st != "stopped" || !strings.Contains(note, "your drives hold 1.50 GiB, past limits.drive_gib = 1") {
		t.Fatalf("the member's box that mounts a drive: %s %q", st, note)
	}
	for _, n := range []string{"other", "bosses"} {
		if st, note := status(n); st != "running" || note != "" {
			t.Fatalf("box %s: %s %q", n, st, note)
		}
	}
	if _, err := s.StartBox(asMia, "writer"); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckDisk(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := status("writer"); st != "running" {
		t.Fatalf("stopped again within its grace: %s", st)
	}
	s.Now = func() time.Time { return time.Now().Add(diskGrace(s.Cfg) + time.Second) }
	if err := s.CheckDisk(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := status("writer"); st != "stopped" {
		t.Fatalf("still past the bound after its grace: %s", st)
	}
	s.Now = nil
	if _, err := s.StartBox(asMia, "writer"); err != nil {
		t.Fatal(err)
	}
	drv.Usage["drive:more"] = 0
	s.Now = func() time.Time { return time.Now().Add(diskGrace(s.Cfg) + time.Second) }
	if err := s.CheckDisk(ctx); err != nil {
		t.Fatal(err)
	}
	if st, note := status("writer"); st != "running" {
		t.Fatalf("space freed, after its grace: %s %q", st, note)
	}
}
