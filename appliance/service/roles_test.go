package service

import (
	"context"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// An admin does what the owner does with users and their objects: sees
// and changes members' boxes, reads and verifies the audit log, sets
// quotas, invites members and admins, removes members; but not the
// server's settings (its servers, secrets shared with every box), nor
// owners: inviting or removing one is the owner's.
func TestAdminRole(t *testing.T) {
	s, _ := newService(t)
	boss, _ := s.Store.CreateUser(store.User{Name: "boss", Role: store.RoleOwner, Created: time.Now()})
	ada, _ := s.Store.CreateUser(store.User{Name: "ada", Role: store.RoleAdmin, Created: time.Now()})
	mia, _ := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	asBoss, asAda, asMia := caller.With(context.Background(), boss), caller.With(context.Background(), ada), caller.With(context.Background(), mia)

	if _, err := s.CreateBox(asMia, api.BoxPost{Name: "miabox"}); err != nil {
		t.Fatal(err)
	}
	bs, err := s.ListBoxes(asAda)
	if err != nil || len(bs) != 1 || bs[0].Name != "miabox" {
		t.Fatalf("the admin's list: %+v %v", bs, err)
	}
	if _, err := s.StopBox(asAda, "miabox", ""); err != nil {
		t.Fatalf("the admin stops a member's box: %v", err)
	}
	if bs, _ := s.ListBoxes(asMia); len(bs) != 1 {
		t.Fatal("the member lost their box")
	}
	one := 1
	if _, err := accessOf(s).SetQuota(asAda, "mia", api.QuotaPut{Boxes: &one}); err != nil {
		t.Fatalf("the admin sets a quota: %v", err)
	}
	if _, err := accessOf(s).Invite(asAda, api.InvitePost{Role: "admin"}); err != nil {
		t.Fatalf("the admin invites an admin: %v", err)
	}
	for what, err := range map[string]error{
		"invite an owner": func() error { _, err := accessOf(s).Invite(asAda, api.InvitePost{Role: "owner"}); return err }(),
		"remove an owner": accessOf(s).RemoveUser(asAda, "boss"),
		"list servers":    func() error { _, err := servers(s).List(asAda); return err }(),
		"share a secret":  secretsOf(s).Set(asAda, "SHARED_KEY", []byte("v"), true, nil),
	} {
		if !isForbidden(err) {
			t.Errorf("the admin may %s: %v", what, err)
		}
	}
	// What the admin may do, a member may not.
	if _, err := accessOf(s).SetQuota(asMia, "mia", api.QuotaPut{Boxes: &one}); !isForbidden(err) {
		t.Errorf("a member set a quota: %v", err)
	}
	if _, err := accessOf(s).Invite(asMia, api.InvitePost{}); !isForbidden(err) {
		t.Errorf("a member invited: %v", err)
	}
	if err := accessOf(s).RemoveUser(asAda, "mia"); err != nil {
		t.Fatalf("the admin removes a member: %v", err)
	}
	if _, err := accessOf(s).Invite(asBoss, api.InvitePost{Role: "owner"}); err != nil {
		t.Fatalf("the owner invites an owner: %v", err)
	}
}
