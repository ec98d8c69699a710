package service

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/store"
)

// A member may have limits.boxes boxes and limits.drives drives; one more
// is refused with the limit named, and fits again once one is gone. An
// owner has no limits.
func TestMemberLimits(t *testing.T) {
	s, _ := newService(t)
	s.Cfg.Limits = configLimits(2, 1)
	mia, err := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	boss, _ := s.Store.CreateUser(store.User{Name: "boss", Role: store.RoleOwner, Created: time.Now()})
	asMia, asBoss := caller.With(context.Background(), mia), caller.With(context.Background(), boss)
	for _, n := range []string{"m1", "m2"} {
		if _, err := s.CreateBox(asMia, api.BoxPost{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.CreateBox(asMia, api.BoxPost{Name: "m3"})
	if err == nil || !strings.Contains(err.Error(), "limits.boxes = 2") {
		t.Fatalf("a third box for a member with limits.boxes = 2: %v", err)
	}
	if _, err := s.Fork(asMia, "m1", api.ForkPost{Name: "m1fork"}); err == nil || !strings.Contains(err.Error(), "limits.boxes") {
		t.Fatalf("a fork past the limit: %v", err)
	}
	if _, err := drivesOf(s).Create(asMia, api.DrivePost{Name: "d1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := drivesOf(s).Create(asMia, api.DrivePost{Name: "d2"}); err == nil || !strings.Contains(err.Error(), "limits.drives = 1") {
		t.Fatalf("a second drive: %v", err)
	}
	for _, n := range []string{"b1", "b2", "b3"} {
		if _, err := s.CreateBox(asBoss, api.BoxPost{Name: n}); err != nil {
			t.Fatalf("the owner has no limits: %v", err)
		}
	}
	if err := s.RemoveBox(asMia, "m2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(asMia, api.BoxPost{Name: "m3"}); err != nil {
		t.Fatalf("a box after one was removed: %v", err)
	}
	// Running jobs: one more than limits.jobs in the member's boxes is
	// refused; the owner's boxes are not counted or bounded.
	s.Cfg.Limits.Jobs = 2
	for _, id := range []string{"jr1", "jr2"} {
		if err := s.Store.AddJob(store.Job{ID: id, Box: "m1", Cmd: []string{"sleep"}, State: "running", Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := jobsOf(s).Start("m3", api.ExecPost{Cmd: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "limits.jobs = 2") {
		t.Fatalf("a third running job: %v", err)
	}
	if _, err := jobsOf(s).Start("b1", api.ExecPost{Cmd: []string{"true"}}); err != nil {
		t.Fatalf("the owner's job: %v", err)
	}
}

func configLimits(boxes, drives int) config.Limits {
	return config.Limits{Boxes: boxes, Drives: drives}
}
