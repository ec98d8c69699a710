package service

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
)

// A removed box holds its name until its container and volume are gone;
// the next box of that name has an id of its own and none of the old
// box's jobs.
func TestRemovedBoxHoldsItsName(t *testing.T) {
	s, drv := newService(t)
	ctx := context.Background()
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "web"}); err != nil {
		t.Fatal(err)
	}
	old, err := s.Store.GetBox("web")
	if err != nil || old.UID == "" {
		t.Fatalf("box has no id: %+v %v", old, err)
	}
	job, err := jobsOf(s).Start("web", api.ExecPost{Cmd: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	drv.Fail = func(op string) error {
		if op == "remove web" {
			return errors.New("engine busy")
		}
		return nil
	}
	s.RemoveBox(ctx, "web") // the container stays: the engine failed
	_, err = s.CreateBox(ctx, api.BoxPost{Name: "web"})
	if err == nil || !strings.Contains(err.Error(), `the box name "web" is taken`) {
		t.Fatalf("a new box took the name of a removed box whose container is left: %v", err)
	}
	drv.Fail = nil
	if _, err := s.Rec.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "web"}); err != nil {
		t.Fatalf("the name is not free once the old box is gone: %v", err)
	}
	nb, _ := s.Store.GetBox("web")
	if nb.UID == "" || nb.UID == old.UID {
		t.Fatalf("the new box has id %q, the old one had %q", nb.UID, old.UID)
	}
	jobs, err := jobsOf(s).List("web")
	if err != nil || len(jobs) != 0 {
		t.Fatalf("the new box sees jobs %v (%v)", jobs, err)
	}
	if _, err := jobsOf(s).Get("web", job.ID); !api.IsNotFound(err) {
		t.Fatalf("the old box's job %s: %v, want not found", job.ID, err)
	}
}
