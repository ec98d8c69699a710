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

// A group's quota holds for its members unless set for them, the most
// generous of their groups' (no bound above any number), and a refusal
// names the group and how to raise it; a box shared with a group is its
// members' at the group's access; a provider's groups replace what it set
// before and leave the owner's alone.
func TestGroupQuotasAndShares(t *testing.T) {
	s, _ := newService(t)
	s.Cfg.Limits = configLimits(2, 5)
	boss, _ := s.Store.CreateUser(store.User{Name: "boss", Role: store.RoleOwner, Created: time.Now()})
	mia, _ := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	asBoss, asMia := caller.With(context.Background(), boss), caller.With(context.Background(), mia)
	n := func(v int) *int { return &v }
	for _, g := range []string{"eng", "ops"} {
		if err := accessOf(s).AddToGroup(asBoss, g, "mia"); err != nil {
			t.Fatal(err)
		}
	}
	if err := accessOf(s).AddToGroup(asMia, "eng", "mia"); err == nil {
		t.Fatal("a member changed a group")
	}
	if _, err := accessOf(s).SetGroupQuota(asBoss, "eng", api.QuotaPut{Boxes: n(3)}); err != nil {
		t.Fatal(err)
	}
	if _, err := accessOf(s).SetGroupQuota(asBoss, "ops", api.QuotaPut{Boxes: n(4)}); err != nil {
		t.Fatal(err)
	}
	q, err := accessOf(s).Quota(asMia, "")
	if err != nil || q.Limits.Boxes != 4 || q.Groups["boxes"] != "ops" || q.Limits.Drives != 5 {
		t.Fatalf("mia's quota in eng (3) and ops (4): %+v %v", q, err)
	}
	for i := range 4 {
		if _, err := s.CreateBox(asMia, api.BoxPost{Name: "m" + string(rune('a'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.CreateBox(asMia, api.BoxPost{Name: "me"})
	if err == nil || !strings.Contains(err.Error(), "the quota of their group ops: boxes = 4") || !strings.Contains(err.Error(), "paddock group quota ops --boxes N") {
		t.Fatalf("a fifth box: %v", err)
	}
	// No bound is the most generous.
	accessOf(s).SetGroupQuota(asBoss, "eng", api.QuotaPut{Boxes: n(0)})
	if q, _ := accessOf(s).Quota(asMia, ""); q.Limits.Boxes != 0 || q.Groups["boxes"] != "eng" {
		t.Fatalf("with eng unbounded: %+v", q)
	}
	// Her own quota comes first.
	if _, err := accessOf(s).SetQuota(asBoss, "mia", api.QuotaPut{Boxes: n(1)}); err != nil {
		t.Fatal(err)
	}
	if q, _ := accessOf(s).Quota(asMia, ""); q.Limits.Boxes != 1 || q.Groups["boxes"] != "" {
		t.Fatalf("with her own: %+v", q)
	}

	// A box shared with a group.
	if _, err := s.CreateBox(asBoss, api.BoxPost{Name: "team"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sharesOf(s).Share(asMia, "team", "@eng", "member"); err == nil {
		t.Fatal("a member shared the owner's box")
	}
	if _, err := sharesOf(s).Share(asBoss, "team", "@eng", "member"); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.AccessOf(asMia, "team"); a != caller.AccessMember {
		t.Fatalf("mia's access through eng: %q", a)
	}
	bs, _ := s.ListBoxes(asMia)
	found := false
	for _, b := range bs {
		found = found || (b.Name == "team" && b.Access == "member")
	}
	if !found {
		t.Fatalf("the group's box is not in mia's list: %+v", bs)
	}
	if gs, _ := sharesOf(s).List(asBoss, "team"); len(gs) != 1 || gs[0].User != "@eng" {
		t.Fatalf("grants: %+v", gs)
	}
	if err := sharesOf(s).Unshare(asBoss, "team", "@eng"); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.AccessOf(asMia, "team"); a != caller.AccessNone {
		t.Fatalf("after unsharing: %q", a)
	}

	// A provider's groups: replaced at each sign-in, names made valid,
	// in the provider's name space.
	if err := accessOf(s).SyncSSOGroups(mia.ID, "corp", []string{"Platform", "not a name!"}); err != nil {
		t.Fatal(err)
	}
	accessOf(s).SyncSSOGroups(mia.ID, "corp", []string{"Platform", "Data"})
	if gs, _ := s.Store.GroupsOf(mia.ID); strings.Join(gs, ",") != "corp/data,corp/platform,eng,ops" {
		t.Fatalf("mia's groups: %v", gs)
	}
	accessOf(s).SyncSSOGroups(mia.ID, "corp", nil)
	if gs, _ := s.Store.GroupsOf(mia.ID); strings.Join(gs, ",") != "eng,ops" {
		t.Fatalf("mia's groups after the provider listed none: %v", gs)
	}
	if err := accessOf(s).AddToGroup(asBoss, "corp/data", "mia"); err == nil || !strings.Contains(err.Error(), "sign-in provider corp's group") {
		t.Fatalf("a hand change of a provider's group: %v", err)
	}
}

// A provider's group named like one of the owner's ("admins", with a
// box shared with it and a generous quota) gets neither: its members are
// @corp/admins, and the owner shares with that by its full name.
func TestAttackProviderGroupNamedLikeOwners(t *testing.T) {
	s, _ := newService(t)
	boss, _ := s.Store.CreateUser(store.User{Name: "boss", Role: store.RoleOwner, Created: time.Now()})
	eve, _ := s.Store.CreateUser(store.User{Name: "eve", Role: store.RoleMember, Created: time.Now()})
	asBoss, asEve := caller.With(context.Background(), boss), caller.With(context.Background(), eve)
	if _, err := s.CreateBox(asBoss, api.BoxPost{Name: "vault"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sharesOf(s).Share(asBoss, "vault", "@admins", "member"); err != nil {
		t.Fatal(err)
	}
	ten := 10
	if _, err := accessOf(s).SetGroupQuota(asBoss, "admins", api.QuotaPut{Jobs: &ten}); err != nil {
		t.Fatal(err)
	}
	if err := accessOf(s).SyncSSOGroups(eve.ID, "corp", []string{"admins"}); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.AccessOf(asEve, "vault"); a != caller.AccessNone {
		t.Fatalf("a provider's admins got the owner's admins' box: %q", a)
	}
	if q, _ := accessOf(s).Quota(asEve, ""); q.Groups["jobs"] != "" {
		t.Fatalf("a provider's admins got the owner's admins' quota: %+v", q)
	}
	if _, err := sharesOf(s).Share(asBoss, "vault", "@corp/admins", "viewer"); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.AccessOf(asEve, "vault"); a != caller.AccessViewer {
		t.Fatalf("shared with @corp/admins: %q", a)
	}
}
