package service

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Which of the users' images a box may be made from: the caller's own;
// another user's once it is shared with the caller (by name, group or
// with everyone); nothing else, which gets the answer a missing image
// gets. (Who may build on, see, share and remove one: images'
// TestWhoMayUse.)
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
		drv.AddImage(s.ImageRef(im))
	}
	// Boxes: another's image is "not on the server", as a missing one is.
	_, _, missing := s.boxImage(asMia, "nosuch:1")
	refused := func(c context.Context, who string) {
		t.Helper()
		for _, ref := range []string{"boss/tools:1", "paddock/boss/tools:1", "sha256:b0551111"} {
			_, _, err := s.boxImage(c, ref)
			if !errors.Is(err, api.ErrNoImage) || strings.Replace(err.Error(), ref, "X", 1) != strings.Replace(missing.Error(), "nosuch:1", "X", 1) {
				t.Errorf("%s's box from %s: %v (a missing one: %v)", who, ref, err, missing)
			}
		}
	}
	refused(asMia, "mia")
	if img, own, err := s.boxImage(asBoss, "tools:1"); err != nil || !own || img != "paddock/boss/tools:1" {
		t.Fatalf("boss's box from his image: %q %v %v", img, own, err)
	}
	if img, own, err := s.boxImage(asMia, "mine"); err != nil || !own || img != "paddock/mia/mine:latest" {
		t.Fatalf("mia's box from her image: %q %v %v", img, own, err)
	}
	share := func(kind, who string, add bool) {
		t.Helper()
		if err := s.Store.ShareImage(store.ImageShare{Owner: boss.ID, Name: "tools", Kind: kind, Who: who}, add); err != nil {
			t.Fatal(err)
		}
	}
	// Shared with mia by name: she makes boxes of it; sam still cannot.
	share("user", strconv.FormatInt(mia.ID, 10), true)
	if _, _, err := s.boxImage(asMia, "boss/tools:1"); err != nil {
		t.Fatalf("mia's box from boss's shared image: %v", err)
	}
	refused(asSam, "sam")
	// With a group of sam's, then with everyone.
	if err := s.Store.AddToGroup(sam.ID, "ops", store.GroupByOwner); err != nil {
		t.Fatal(err)
	}
	share("group", "ops", true)
	if _, _, err := s.boxImage(asSam, "boss/tools:1"); err != nil {
		t.Fatalf("sam's box, shared with his group: %v", err)
	}
	share("group", "ops", false)
	refused(asSam, "sam, his group's share gone")
	share("all", "", true)
	if _, _, err := s.boxImage(asSam, "boss/tools:1"); err != nil {
		t.Fatalf("sam's box, shared with everyone: %v", err)
	}
	// Unshared: gone for both again.
	share("all", "", false)
	share("user", strconv.FormatInt(mia.ID, 10), false)
	refused(asMia, "mia, unshared")
	refused(asSam, "sam, unshared")
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
	plan, err := projectsOf(s).MakePlan(ctx, api.PlanRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Changes) != 2 || plan.Changes[0].Address != "image.tools" || plan.Changes[0].Action != api.ActionCreate {
		t.Fatalf("the first plan: %+v", plan.Changes)
	}
	// Not built: applying is refused (the CLI builds first).
	if _, err := projectsOf(s).Apply(ctx, api.ApplyRequest{PlanRequest: api.PlanRequest{Spec: spec}, Serial: plan.Serial}); err == nil || !strings.Contains(err.Error(), "is not on the server") {
		t.Fatalf("applying before the image is built: %v", err)
	}
	// Built (as the CLI's build would leave it).
	im := store.Image{Owner: boss.ID, Name: "tools", Tag: "1", ID: "sha256:1234", Dockerfile: "Dockerfile", ContextDigest: "sha256:aaa", Project: "p"}
	if err := s.Store.PutImage(im); err != nil {
		t.Fatal(err)
	}
	drv.AddImage(s.ImageRef(im))
	plan, err = projectsOf(s).MakePlan(ctx, api.PlanRequest{Spec: spec})
	if err != nil || len(plan.Changes) != 1 || plan.Changes[0].Address != "box.dev" {
		t.Fatalf("the plan once built: %+v %v", plan.Changes, err)
	}
	if _, err := projectsOf(s).Apply(ctx, api.ApplyRequest{PlanRequest: api.PlanRequest{Spec: spec}, Serial: plan.Serial}); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Store.GetBox("dev"); err != nil || b.Image != "paddock/boss/tools:1" {
		t.Fatalf("the box's image: %q %v", b.Image, err)
	}
	if plan, err = projectsOf(s).MakePlan(ctx, api.PlanRequest{Spec: spec}); err != nil || len(plan.Changes) != 0 || plan.Changes == nil {
		t.Fatalf("the plan after applying (an empty list, not none): %#v %v", plan.Changes, err)
	}
	// Another context: the image changes, the box does not.
	spec.Images[0].ContextDigest = "sha256:bbb"
	if plan, err = projectsOf(s).MakePlan(ctx, api.PlanRequest{Spec: spec}); err != nil || len(plan.Changes) != 1 || plan.Changes[0].Action != api.ActionUpdate {
		t.Fatalf("the plan with another context: %+v %v", plan.Changes, err)
	}
}
