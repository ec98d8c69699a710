package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/access"
	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// A sign-in link is good once, and only for access.SignInTTL: past it, it is
// gone, as a used one is.
func TestSignInLinkExpires(t *testing.T) {
	s, _ := newService(t)
	u, err := s.Store.CreateUser(store.User{Name: "olga", Role: store.RoleOwner, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := caller.With(context.Background(), u)
	now := time.Now()
	s.Now = func() time.Time { return now }
	gone := func(what string, err error) {
		t.Helper()
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeGone {
			t.Fatalf("%s: %v, want it gone", what, err)
		}
	}

	// In time, once (the positive control).
	tok, _, err := accessOf(s).SignInLink(ctx, "/boxes")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(access.SignInTTL - time.Second)
	if got, _, next, err := accessOf(s).RedeemSignIn(tok); err != nil || got.ID != u.ID || next != "/boxes" {
		t.Fatalf("a link redeemed in time: %v %v %q", got, err, next)
	}
	_, _, _, err = accessOf(s).RedeemSignIn(tok)
	gone("a link redeemed twice", err)

	// Late.
	tok, _, err = accessOf(s).SignInLink(ctx, "/boxes")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(access.SignInTTL + time.Second)
	_, _, _, err = accessOf(s).RedeemSignIn(tok)
	gone("a link redeemed after access.SignInTTL", err)
}

// Restore and fork take a snapshot of the box named, never another box's
// by its ID: not the caller's other box's, not another user's.
func TestSnapshotOfAnotherBoxIsNotFound(t *testing.T) {
	s, _ := newService(t)
	olga, _ := s.Store.CreateUser(store.User{Name: "olga", Role: store.RoleOwner, Created: time.Now()})
	mia, _ := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	asOlga, asMia := caller.With(context.Background(), olga), caller.With(context.Background(), mia)
	for _, b := range []struct {
		ctx  context.Context
		name string
	}{{asOlga, "a"}, {asOlga, "b"}, {asMia, "m"}} {
		if _, err := s.CreateBox(b.ctx, api.BoxPost{Name: b.name}); err != nil {
			t.Fatal(err)
		}
	}
	snap := func(ctx context.Context, box string) string {
		t.Helper()
		sn, err := s.Snapshot(ctx, box)
		if err != nil {
			t.Fatal(err)
		}
		return sn.ID
	}
	ofA, ofB, ofM := snap(asOlga, "a"), snap(asOlga, "b"), snap(asMia, "m")
	notFound := func(what string, err error) {
		t.Helper()
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeNotFound {
			t.Fatalf("%s: %v, want not found", what, err)
		}
	}

	// The positive controls: the box's own snapshot.
	if _, err := s.Restore(asOlga, "a", ofA); err != nil {
		t.Fatalf("restore of a box's own snapshot: %v", err)
	}
	if _, err := s.Fork(asOlga, "a", api.ForkPost{Name: "af", Snapshot: ofA}); err != nil {
		t.Fatalf("fork of a box's own snapshot: %v", err)
	}

	_, err := s.Restore(asOlga, "a", ofB)
	notFound("restore of a with b's snapshot", err)
	_, err = s.Fork(asOlga, "a", api.ForkPost{Name: "af2", Snapshot: ofB})
	notFound("fork of a with b's snapshot", err)
	_, err = s.Restore(asOlga, "a", ofM)
	notFound("restore with another user's snapshot", err)
	_, err = s.Fork(asOlga, "a", api.ForkPost{Name: "af3", Snapshot: ofM})
	notFound("fork with another user's snapshot", err)
	_, err = s.Restore(asMia, "m", ofA)
	notFound("a member's restore with the owner's snapshot", err)
	if _, err := s.GetBox("af2"); err == nil {
		t.Fatal("a refused fork left a box behind")
	}
}

// A taken box name gets one answer whoever holds it (the caller, another
// user, a removed box still being cleaned up): it says nothing of whose
// it is. The warm pool's names are reserved for every caller, whether a
// pool box holds one or not, so that no name of a pool box can be claimed.
func TestTakenNamesSayNotWhose(t *testing.T) {
	s, drv := newService(t)
	olga, _ := s.Store.CreateUser(store.User{Name: "olga", Role: store.RoleOwner, Created: time.Now()})
	mia, _ := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	asOlga, asMia := caller.With(context.Background(), olga), caller.With(context.Background(), mia)
	for _, n := range []string{"mine", "hers", "gone"} {
		ctx := asOlga
		if n == "mine" {
			ctx = asMia
		}
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	drv.Fail = func(op string) error {
		if op == "remove gone" {
			return errors.New("engine busy")
		}
		return nil
	}
	s.RemoveBox(asOlga, "gone") // a tombstone: its container is left
	answer := func(name string) string {
		t.Helper()
		_, err := s.CreateBox(asMia, api.BoxPost{Name: name})
		if err == nil {
			t.Fatalf("box name %q was taken and given again", name)
		}
		return strings.ReplaceAll(err.Error(), name, "NAME")
	}
	own, others, removed := answer("mine"), answer("hers"), answer("gone")
	if own != others || own != removed {
		t.Fatalf("answers differ by who holds the name:\n own:     %s\n other's: %s\n removed: %s", own, others, removed)
	}
	for _, n := range []string{"pool-0123abcd", "pool-x"} {
		var ae *api.Error
		if _, err := s.CreateBox(asMia, api.BoxPost{Name: n}); !errors.As(err, &ae) || ae.Code != api.CodeInvalid || !strings.Contains(ae.Message, "reserved") {
			t.Fatalf("box name %q: %v, want it refused as reserved", n, err)
		}
	}
}

// A Boxfile that names another user's box, drive or policy is told the
// name is taken, not where the other user's object belongs; the caller's
// own object of another project is still named with its project.
func TestBoxfileTakenNamesSayNotWhose(t *testing.T) {
	s, _ := newService(t)
	olga, _ := s.Store.CreateUser(store.User{Name: "olga", Role: store.RoleOwner, Created: time.Now()})
	mia, _ := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	asOlga, asMia := caller.With(context.Background(), olga), caller.With(context.Background(), mia)
	req := api.PlanRequest{Spec: api.ProjectSpec{Project: "secret-plans", Boxes: []api.BoxSpec{{Name: "web"}}}}
	p, err := projectsOf(s).MakePlan(asOlga, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := projectsOf(s).Apply(asOlga, api.ApplyRequest{PlanRequest: req, Serial: p.Serial}); err != nil {
		t.Fatal(err)
	}
	if _, err := drivesOf(s).Create(asOlga, api.DrivePost{Name: "cache"}); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []api.ProjectSpec{
		{Project: "mine", Boxes: []api.BoxSpec{{Name: "web"}}},
		{Project: "mine", Drives: []api.DriveSpec{{Name: "cache"}}},
	} {
		_, err := projectsOf(s).MakePlan(asMia, api.PlanRequest{Spec: spec})
		if err == nil || !strings.Contains(err.Error(), "is taken") || strings.Contains(err.Error(), "secret-plans") || strings.Contains(err.Error(), "paddock new") {
			t.Fatalf("a member's Boxfile naming another user's object: %v", err)
		}
	}
	// The positive control: the owner's own object of another project.
	_, err = projectsOf(s).MakePlan(asOlga, api.PlanRequest{Spec: api.ProjectSpec{Project: "other", Boxes: []api.BoxSpec{{Name: "web"}}}})
	if err == nil || !strings.Contains(err.Error(), `belongs to project "secret-plans"`) {
		t.Fatalf("the owner's Boxfile naming their own box of another project: %v", err)
	}
}

// unsafe_docker_in_runc_boxes makes root in any box root on the machine:
// while it is set, no member is invited nor joins by an invite made
// before it was set, and paddockd does not start with members.
func TestUnsafeSettingTakesNoMembers(t *testing.T) {
	s, _ := newService(t)
	olga, _ := s.Store.CreateUser(store.User{Name: "olga", Role: store.RoleOwner, Created: time.Now()})
	asOlga := caller.With(context.Background(), olga)
	early, err := accessOf(s).Invite(asOlga, api.InvitePost{Role: store.RoleMember})
	if err != nil {
		t.Fatal(err)
	}
	s.Cfg.UnsafeDockerInRuncBoxes = true
	if _, err := accessOf(s).Invite(asOlga, api.InvitePost{Role: store.RoleMember}); !errors.Is(err, access.ErrUnsafeWithMembers) {
		t.Fatalf("a member invited with the setting on: %v", err)
	}
	if _, _, err := accessOf(s).Redeem(early.Token, "mia", "a long enough password"); !errors.Is(err, access.ErrUnsafeWithMembers) {
		t.Fatalf("an earlier invite redeemed with the setting on: %v", err)
	}
	// Owners may still be invited (the positive control).
	if _, err := accessOf(s).Invite(asOlga, api.InvitePost{Role: store.RoleOwner}); err != nil {
		t.Fatalf("an owner invited with the setting on: %v", err)
	}
	s.Cfg.UnsafeDockerInRuncBoxes = false
	if _, _, err := accessOf(s).Redeem(early.Token, "mia", "a long enough password"); err != nil {
		t.Fatalf("the invite with the setting off: %v", err)
	}
	users, _ := s.Store.Users()
	if err := access.CheckUnsafeSetting(true, users); err == nil || !strings.Contains(err.Error(), "mia") {
		t.Fatalf("the setting with a member: %v", err)
	}
	if err := access.CheckUnsafeSetting(false, users); err != nil {
		t.Fatal(err)
	}
}

// Tokens cost nothing to make, so what a user may mint is bounded: API
// tokens held at once, and API tokens and sign-in links made per hour.
// Another user's budget is their own.
func TestMintsAreBoundedPerUser(t *testing.T) {
	s, _ := newService(t)
	olga, _ := s.Store.CreateUser(store.User{Name: "olga", Role: store.RoleOwner, Created: time.Now()})
	mia, _ := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Password: "x", Created: time.Now()})
	asOlga, asMia := caller.With(context.Background(), olga), caller.With(context.Background(), mia)
	tooMany := func(what string, err error) {
		t.Helper()
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeTooMany {
			t.Fatalf("%s: %v, want too many", what, err)
		}
	}
	for i := range access.MintsPerHour {
		if _, _, err := accessOf(s).SignInLink(asMia, "/"); err != nil {
			t.Fatalf("sign-in link %d: %v", i, err)
		}
	}
	_, _, err := accessOf(s).SignInLink(asMia, "/")
	tooMany("one sign-in link past the hour's", err)
	if _, _, err := accessOf(s).SignInLink(asOlga, "/"); err != nil {
		t.Fatalf("another user's sign-in link: %v", err)
	}
	for i := range access.MintsPerHour {
		if _, err := accessOf(s).CreateToken(asMia, fmt.Sprintf("t%d", i), false); err != nil {
			t.Fatalf("token %d: %v", i, err)
		}
	}
	_, err = accessOf(s).CreateToken(asMia, "one-more", false)
	tooMany("one token past the hour's", err)
	// A device login's approval makes a token too: the same bounds.
	dc, err := accessOf(s).DeviceStart("laptop", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	tooMany("a device login approved past the hour's tokens", accessOf(s).DeviceApprove(asMia, dc.UserCode, true))
	// Held at once: access.MaxTokens, whatever the pace.
	for i := range access.MaxTokens {
		if err := s.Store.AddToken(store.Token{Hash: fmt.Sprint("h", i), Name: fmt.Sprintf("held%d", i), UserID: olga.ID, Kind: store.TokenAPI, Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = accessOf(s).CreateToken(asOlga, "one-more", false)
	tooMany("one token past the most held", err)
	tooMany("a device login approved past the most held", accessOf(s).DeviceApprove(asOlga, dc.UserCode, true))
}
