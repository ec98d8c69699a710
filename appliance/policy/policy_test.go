package policy_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/policy"
	"github.com/paddock-dev/paddock/appliance/service/coretest"
	"github.com/paddock-dev/paddock/appliance/store"
)

// A named policy made outside a Boxfile: its name is taken for everyone
// once made; its owner changes its lists; another member's policy is not
// found to them; a Boxfile's policy is changed in its Boxfile only; a
// bad list changes nothing.
func TestPolicyCreateAndUpdate(t *testing.T) {
	s, _ := coretest.New(t)
	ps := policy.New(s, s.Store, s.Rec, nil)
	ctx := context.Background()
	ann, _ := s.Store.CreateUser(store.User{Name: "ann", Role: store.RoleMember, Created: time.Now()})
	mia, _ := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	asAnn, asMia := caller.With(ctx, ann), caller.With(ctx, mia)
	code := func(err error) string {
		var ae *api.Error
		if errors.As(err, &ae) {
			return ae.Code
		}
		return "other: " + err.Error()
	}
	if _, err := ps.Create(asAnn, api.PolicyPost{Name: "web", AllowDomains: []string{"a.test"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Create(asMia, api.PolicyPost{Name: "web"}); err == nil || code(err) != api.CodeConflict {
		t.Fatalf("another user's name taken again: %v", err)
	}
	if _, err := ps.Update(asMia, api.PolicySpec{Name: "web", AllowDomains: []string{"evil.test"}}); err == nil || code(err) != api.CodeNotFound {
		t.Fatalf("another member changed ann's policy: %v", err)
	}
	got, err := ps.Update(asAnn, api.PolicySpec{Name: "web", AllowDomains: []string{"b.test"}})
	if err != nil || len(got.AllowDomains) != 1 || got.AllowDomains[0] != "b.test" {
		t.Fatalf("ann's update: %+v %v", got, err)
	}
	if _, err := ps.Update(asAnn, api.PolicySpec{Name: "web", AllowCIDRs: []string{"10.1.2.3/16"}}); err == nil || code(err) != api.CodeInvalid {
		t.Fatalf("a bad list: %v", err)
	}
	if _, err := ps.Update(asAnn, api.PolicySpec{Name: "none"}); err == nil || code(err) != api.CodeNotFound {
		t.Fatalf("a policy that is not there: %v", err)
	}
	// A Boxfile's policy: its project's.
	if err := s.Store.Declare(func(tx *store.Tx) error {
		return tx.PutPolicy(store.Policy{Name: "fromfile", AllowDomains: []string{"c.test"}, Project: "p"})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Update(ctx, api.PolicySpec{Name: "fromfile"}); err == nil || code(err) != api.CodeConflict {
		t.Fatalf("a Boxfile's policy changed outside it: %v", err)
	}
	pols, err := ps.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lists := map[string][]string{}
	for _, p := range pols {
		lists[p.Name] = p.AllowDomains
	}
	if len(lists["web"]) != 1 || lists["web"][0] != "b.test" || len(lists["fromfile"]) != 1 {
		t.Fatalf("policies after it all: %v", lists)
	}
}
