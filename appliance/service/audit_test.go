package service

import (
	"context"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// The audit log names users by name, and a removed user's name may be
// given again: the new user sees their own entries, not the old one's
// (their actions, and those about their boxes).
func TestAttackReusedNameSeesNoOldAuditEntries(t *testing.T) {
	s, _ := newService(t)
	s.Audit = &Auditor{Key: make([]byte, 32)}
	var now time.Time = time.Now().Add(-time.Hour)
	s.Now = func() time.Time { return now }
	boss, _ := s.Store.CreateUser(store.User{Name: "boss", Role: store.RoleOwner, Created: now})
	old, _ := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: now})
	s.Record(audit.Entry{User: "mia", Action: "box.create", Box: "secret-project", Owner: "mia", Result: "ok"})
	s.Record(audit.Entry{User: "boss", Action: "box.share", Box: "other", Owner: "mia", Result: "ok"})
	now = now.Add(time.Minute)
	if err := accessOf(s).RemoveUser(caller.With(context.Background(), boss), "mia"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.GetUser(old.ID); err == nil {
		t.Fatal("the old mia is still there")
	}
	now = now.Add(time.Minute)
	fresh, err := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: now})
	if err != nil {
		t.Fatal(err)
	}
	s.Record(audit.Entry{User: "mia", Action: "box.create", Box: "new", Owner: "mia", Result: "ok"})
	es, err := accessOf(s).AuditLog(caller.With(context.Background(), fresh), store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Box != "new" {
		t.Fatalf("the new mia sees %+v", es)
	}
	if all, _ := accessOf(s).AuditLog(caller.With(context.Background(), boss), store.AuditFilter{User: "mia"}); len(all) < 2 {
		t.Fatalf("the owner sees %d entries of either mia", len(all))
	}
}
