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

// Who may build on, make boxes from, see and remove a user's image: its
// builder; another user once it is shared with them (by name, group or
// with everyone, the last by an owner or admin only), and then to use,
// never to remove; nobody else, who gets the answer a missing image gets.
func TestImagesWhoMayUse(t *testing.T) {
	s, drv := newService(t)
	ctx := context.Background()
	boss, _ := s.Store.CreateUser(store.User{Name: "boss", Role: store.RoleOwner, Created: time.Now()})
	mia, _ := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	sam, _ := s.Store.CreateUser(store.User{Name: "sam", Role: store.RoleMember, Created: time.Now()})
	asBoss, asMia, asSam := caller.With(ctx, boss), caller.With(ctx, mia), caller.With(ctx, sam)
	for _, im := range []store.Image{{Owner: boss.ID, Name: "tools", Tag: "1", ID: "sha256:b0551111"}, {Owner: mia.ID, Name: "mine", Tag: "latest", ID: "sha256:3a3a2222"}} {
		if err := s.Store.PutImage(im); err != nil {
			t.Fatal(err)
		}
		drv.AddImage(s.imageRef(im))
	}
	base := func(u store.User, ref string) (string, error) { return s.buildBase(caller.With(ctx, u), u, ref) }

	// Bases: the server's images and the user's own; another's is refused
	// with the list of what is allowed.
	if got, err := base(mia, "mine"); err != nil || got != "paddock/mia/mine:latest" {
		t.Fatalf("mia's own base: %q %v", got, err)
	}
	if got, err := base(mia, "img2"); err != nil || got != "img2" {
		t.Fatalf("a server image as a base: %q %v", got, err)
	}
	for _, ref := range []string{"boss/tools:1", "tools:1", "paddock/boss/tools:1", "sha256:b0551111", "b055"} {
		if _, err := base(mia, ref); err == nil || !strings.Contains(err.Error(), "the server's images (img, img2) or on your own") {
			t.Errorf("mia building on %s: %v", ref, err)
		}
	}
	// Boxes: another's image is "not on the server", as a missing one is.
	_, _, missing := s.boxImage(asMia, "nosuch:1")
	for _, ref := range []string{"boss/tools:1", "paddock/boss/tools:1", "sha256:b0551111"} {
		_, _, err := s.boxImage(asMia, ref)
		if !errors.Is(err, errNoImage) || strings.Replace(err.Error(), ref, "X", 1) != strings.Replace(missing.Error(), "nosuch:1", "X", 1) {
			t.Errorf("mia's box from %s: %v (a missing one: %v)", ref, err, missing)
		}
	}
	if img, own, err := s.boxImage(asBoss, "tools:1"); err != nil || !own || img != "paddock/boss/tools:1" {
		t.Fatalf("boss's box from his image: %q %v %v", img, own, err)
	}
	list := func(c context.Context) string {
		ims, err := s.Images(c)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, im := range ims {
			out = append(out, im.Ref)
		}
		return strings.Join(out, ",")
	}
	if got := list(asMia); got != "mia/mine:latest" {
		t.Errorf("mia's list: %s", got)
	}
	if got := list(asBoss); got != "boss/tools:1,mia/mine:latest" {
		t.Errorf("the owner's list: %s", got)
	}

	// Shared with mia by name: she builds on it and makes boxes of it,
	// sees it, and cannot remove or share it; sam still cannot.
	if _, err := s.ShareImage(asBoss, "tools", api.ImageShares{Users: []string{"mia"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := base(mia, "boss/tools:1"); err != nil || got != "paddock/boss/tools:1" {
		t.Fatalf("mia building on boss's shared image: %q %v", got, err)
	}
	if _, _, err := s.boxImage(asMia, "boss/tools:1"); err != nil {
		t.Fatalf("mia's box from boss's shared image: %v", err)
	}
	if got := list(asMia); got != "boss/tools:1,mia/mine:latest" {
		t.Errorf("mia's list, shared: %s", got)
	}
	if _, err := s.RemoveImage(asMia, "boss/tools:1"); !isNotFound(err) {
		t.Errorf("mia removing boss's shared image: %v", err)
	}
	if _, err := s.ShareImage(asMia, "boss/tools:1", api.ImageShares{Users: []string{"sam"}}); !isNotFound(err) {
		t.Errorf("mia sharing boss's image: %v", err)
	}
	if _, err := base(sam, "boss/tools:1"); err == nil {
		t.Error("sam builds on an image not shared with him")
	}
	// With everyone: an owner's or admin's to do.
	var ae *api.Error
	if _, err := s.ShareImage(asMia, "mine", api.ImageShares{Everyone: true}); !errors.As(err, &ae) || ae.Code != api.CodeForbidden {
		t.Errorf("a member sharing with everyone: %v", err)
	}
	if _, err := s.ShareImage(asBoss, "tools", api.ImageShares{Everyone: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := base(sam, "boss/tools:1"); err != nil {
		t.Errorf("sam, shared with everyone: %v", err)
	}
	// Unshared: gone for both again. Removed: gone from the store and its
	// name from the engine.
	im, err := s.ShareImage(asBoss, "tools", api.ImageShares{})
	if err != nil || len(im.SharedWith) != 0 {
		t.Fatalf("unsharing: %+v %v", im, err)
	}
	for _, u := range []store.User{mia, sam} {
		if _, err := base(u, "boss/tools:1"); err == nil {
			t.Errorf("%s builds on an unshared image", u.Name)
		}
	}
	if _, err := s.RemoveImage(asMia, "mine"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.GetImage(mia.ID, "mine", "latest"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the removed image's record: %v", err)
	}
	_ = asSam
}

// A project's image blocks: planned as to be built until built with the
// same context, a box of one stored under the image's engine name (so
// that the next plan sees no change).
func TestProjectImages(t *testing.T) {
	s, drv := newService(t)
	boss, _ := s.Store.CreateUser(store.User{Name: "boss", Role: store.RoleOwner, Created: time.Now()})
	ctx := caller.With(context.Background(), boss)
	spec := api.ProjectSpec{Project: "p", Images: []api.ImageSpec{{Name: "tools", Tag: "1", Context: ".", Dockerfile: "Dockerfile", ContextDigest: "sha256:aaa"}},
		Boxes: []api.BoxSpec{{Name: "dev", Image: "tools:1"}}}
	plan, err := s.PlanProject(ctx, api.PlanRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Changes) != 2 || plan.Changes[0].Address != "image.tools" || plan.Changes[0].Action != api.ActionCreate {
		t.Fatalf("the first plan: %+v", plan.Changes)
	}
	// Not built: applying is refused (the CLI builds first).
	if _, err := s.ApplyProject(ctx, api.ApplyRequest{PlanRequest: api.PlanRequest{Spec: spec}, Serial: plan.Serial}); err == nil || !strings.Contains(err.Error(), "is not on the server") {
		t.Fatalf("applying before the image is built: %v", err)
	}
	// Built (as the CLI's build would leave it).
	im := store.Image{Owner: boss.ID, Name: "tools", Tag: "1", ID: "sha256:1234", Dockerfile: "Dockerfile", ContextDigest: "sha256:aaa", Project: "p"}
	if err := s.Store.PutImage(im); err != nil {
		t.Fatal(err)
	}
	drv.AddImage(s.imageRef(im))
	plan, err = s.PlanProject(ctx, api.PlanRequest{Spec: spec})
	if err != nil || len(plan.Changes) != 1 || plan.Changes[0].Address != "box.dev" {
		t.Fatalf("the plan once built: %+v %v", plan.Changes, err)
	}
	if _, err := s.ApplyProject(ctx, api.ApplyRequest{PlanRequest: api.PlanRequest{Spec: spec}, Serial: plan.Serial}); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Store.GetBox("dev"); err != nil || b.Image != "paddock/boss/tools:1" {
		t.Fatalf("the box's image: %q %v", b.Image, err)
	}
	if plan, err = s.PlanProject(ctx, api.PlanRequest{Spec: spec}); err != nil || len(plan.Changes) != 0 || plan.Changes == nil {
		t.Fatalf("the plan after applying (an empty list, not none): %#v %v", plan.Changes, err)
	}
	// Another context: the image changes, the box does not.
	spec.Images[0].ContextDigest = "sha256:bbb"
	if plan, err = s.PlanProject(ctx, api.PlanRequest{Spec: spec}); err != nil || len(plan.Changes) != 1 || plan.Changes[0].Action != api.ActionUpdate {
		t.Fatalf("the plan with another context: %+v %v", plan.Changes, err)
	}
}
