package service

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/store"
)

// A sign-in link is good once, and only for SignInTTL: past it, it is
// gone, as a used one is.
func TestSignInLinkExpires(t *testing.T) {
	s, _ := newService(t)
	u, err := s.Store.CreateUser(store.User{Name: "olga", Role: store.RoleOwner, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithUser(context.Background(), u)
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
	tok, _, err := s.SignInLink(ctx, "/boxes")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(SignInTTL - time.Second)
	if got, _, next, err := s.RedeemSignIn(tok); err != nil || got.ID != u.ID || next != "/boxes" {
		t.Fatalf("a link redeemed in time: %v %v %q", got, err, next)
	}
	_, _, _, err = s.RedeemSignIn(tok)
	gone("a link redeemed twice", err)

	// Late.
	tok, _, err = s.SignInLink(ctx, "/boxes")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(SignInTTL + time.Second)
	_, _, _, err = s.RedeemSignIn(tok)
	gone("a link redeemed after SignInTTL", err)
}

// Restore and fork take a snapshot of the box named, never another box's
// by its ID: not the caller's other box's, not another user's.
func TestSnapshotOfAnotherBoxIsNotFound(t *testing.T) {
	s, _ := newService(t)
	olga, _ := s.Store.CreateUser(store.User{Name: "olga", Role: store.RoleOwner, Created: time.Now()})
	mia, _ := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	asOlga, asMia := WithUser(context.Background(), olga), WithUser(context.Background(), mia)
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
