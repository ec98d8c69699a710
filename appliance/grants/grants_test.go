package grants_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/grants"
	"github.com/paddock-dev/paddock/appliance/service/coretest"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Only a box's owner (or the server's owner or admins) shares it: a
// member it is shared with may neither share it on nor read or end its
// shares; a user it is not shared with does not find it; the owner
// cannot share a box with themself; a share ends once.
func TestOnlyTheOwnerShares(t *testing.T) {
	s, _ := coretest.New(t)
	g := grants.New(s, s.Store)
	user := func(name string) context.Context {
		u, err := s.Store.CreateUser(store.User{Name: name, Role: store.RoleMember, Created: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return caller.With(context.Background(), u)
	}
	asAnn, asBob, asCy := user("ann"), user("bob"), user("cy")
	if _, err := s.CreateBox(asAnn, api.BoxPost{Name: "web"}); err != nil {
		t.Fatal(err)
	}
	code := func(err error) string {
		var ae *api.Error
		if errors.As(err, &ae) {
			return ae.Code
		}
		return "not an api error: " + err.Error()
	}
	if gr, err := g.Share(asAnn, "web", "bob", "member"); err != nil || gr.User != "bob" || gr.Access != "member" {
		t.Fatalf("ann shares her box with bob: %+v %v", gr, err)
	}
	if _, err := g.Share(asBob, "web", "cy", "member"); err == nil || code(err) != api.CodeForbidden {
		t.Fatalf("bob, a member of ann's box, shared it on: %v", err)
	}
	if _, err := g.List(asBob, "web"); err == nil || code(err) != api.CodeForbidden {
		t.Fatalf("bob read the box's shares: %v", err)
	}
	if err := g.Unshare(asBob, "web", "bob"); err == nil || code(err) != api.CodeForbidden {
		t.Fatalf("bob ended a share of ann's box: %v", err)
	}
	if _, err := g.Share(asCy, "web", "cy", "viewer"); err == nil || code(err) != api.CodeNotFound {
		t.Fatalf("cy, who has no share, shared the box with herself: %v", err)
	}
	if _, err := g.Share(asAnn, "web", "ann", "viewer"); err == nil || code(err) != api.CodeInvalid {
		t.Fatalf("ann shared her box with herself: %v", err)
	}
	if _, err := g.Share(asAnn, "web", "cy", "owner"); err == nil || code(err) != api.CodeInvalid {
		t.Fatalf("a share as an owner: %v", err)
	}
	if gs, err := g.List(asAnn, "web"); err != nil || len(gs) != 1 || gs[0].User != "bob" {
		t.Fatalf("the box's shares: %+v %v", gs, err)
	}
	if err := g.Unshare(asAnn, "web", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := g.Unshare(asAnn, "web", "bob"); err == nil || code(err) != api.CodeNotFound {
		t.Fatalf("a share ended twice: %v", err)
	}
}
