package service

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// A member's quota is the server's limits but what the owner set for
// them: boxes, boxes running and box types each refuse the one more,
// naming the quota, where it comes from and the command that raises it;
// a field put back to the default takes the server's again. Only the
// owner sets quotas, and only members have them.
func TestQuotas(t *testing.T) {
	s, _ := newService(t)
	s.Cfg.Limits = configLimits(3, 3)
	mia, _ := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	boss, _ := s.Store.CreateUser(store.User{Name: "boss", Role: store.RoleOwner, Created: time.Now()})
	asMia, asBoss := caller.With(context.Background(), mia), caller.With(context.Background(), boss)
	one, small := 1, []string{"small"}

	if _, err := accessOf(s).SetQuota(asMia, "mia", api.QuotaPut{Boxes: &one}); !isForbidden(err) {
		t.Fatalf("a member set their own quota: %v", err)
	}
	if _, err := accessOf(s).SetQuota(asBoss, "boss", api.QuotaPut{Boxes: &one}); err == nil {
		t.Fatal("the owner was given a quota")
	}
	// The box quota under a running quota above it: the refusal is the
	// box quota's own.
	three := 3
	q, err := accessOf(s).SetQuota(asBoss, "mia", api.QuotaPut{Boxes: &one, Running: &three, Types: &small})
	if err != nil || q.Limits.Boxes != 1 || q.Limits.Drives != 3 || strings.Join(q.Own, ",") != "boxes,running,types" {
		t.Fatalf("mia's quota: %+v %v", q, err)
	}

	if _, err := s.CreateBox(asMia, api.BoxPost{Name: "m1"}); err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateBox(asMia, api.BoxPost{Name: "m2"})
	wantRefusal(t, err, "mia has 1 box, the most allowed (the quota set for mia: boxes = 1)", "paddock user quota mia --boxes N")
	_, err = s.CreateBox(asMia, api.BoxPost{Name: "m2", Type: "medium"})
	wantRefusal(t, err, "mia may make boxes of type small, not medium", "paddock user quota mia --types small,medium,large")

	// Back to the server's 3 boxes, and 1 running: the running quota is
	// next.
	if _, err := accessOf(s).SetQuota(asBoss, "mia", api.QuotaPut{Running: &one, Default: []string{"boxes"}}); err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateBox(asMia, api.BoxPost{Name: "m2"})
	wantRefusal(t, err, "mia has 1 box running, the most allowed (the quota set for mia: running = 1): stop one first", "--running N")
	if _, err := s.StopBox(asMia, "m1", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(asMia, api.BoxPost{Name: "m2"}); err != nil {
		t.Fatalf("a box once the other stopped: %v", err)
	}
	_, err = s.StartBox(asMia, "m1")
	wantRefusal(t, err, "mia has 1 box running", "--running N")
	if q, err := accessOf(s).Quota(asMia, ""); err != nil || q.Use.Boxes != 2 || q.Use.Running != 1 || q.Limits.Boxes != 3 || strings.Join(q.Own, ",") != "running,types" {
		t.Fatalf("mia reads her quota: %+v %v", q, err)
	}
	if _, err := accessOf(s).Quota(asMia, "boss"); !api.IsNotFound(err) {
		t.Fatalf("a member read the owner's quota: %v", err)
	}
	// The owner is bounded by none of it.
	for _, n := range []string{"b1", "b2", "b3", "b4"} {
		if _, err := s.CreateBox(asBoss, api.BoxPost{Name: n, Type: "medium"}); err != nil {
			t.Fatalf("the owner's box: %v", err)
		}
	}
	if _, err := accessOf(s).SetQuota(asBoss, "mia", api.QuotaPut{Default: []string{"cpus"}}); err == nil || !strings.Contains(err.Error(), "no quota field") {
		t.Fatalf("an unknown field: %v", err)
	}
}

func wantRefusal(t *testing.T, err error, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Fatalf("got %v; want it to say %q", err, p)
		}
	}
}

func isForbidden(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Code == api.CodeForbidden
}
