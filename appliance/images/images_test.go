package images

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/appliance/service/coretest"
	"github.com/paddock-dev/paddock/appliance/store"
)

// withCore is a catalog over the real core and store, on a fake engine
// that has the server's images img and img2.
func withCore(t *testing.T) (*Catalog, *service.Service, *fake.Driver) {
	s, drv := coretest.New(t, "img", "img2")
	return New(s, s.Store, drv, &s.Cfg, s.Log), s, drv
}

// Who may build on, see, share and remove a user's image: its builder;
// another user once it is shared with them (by name, group or with
// everyone, the last by an owner or admin only), and then to use, never
// to remove; nobody else, who gets the answer a missing image gets.
// (Which images a box may be made from: service's TestImagesWhoMayUse.)
func TestWhoMayUse(t *testing.T) {
	c, s, drv := withCore(t)
	ctx := context.Background()
	boss, _ := s.Store.CreateUser(store.User{Name: "boss", Role: store.RoleOwner, Created: time.Now()})
	mia, _ := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	sam, _ := s.Store.CreateUser(store.User{Name: "sam", Role: store.RoleMember, Created: time.Now()})
	asBoss, asMia := caller.With(ctx, boss), caller.With(ctx, mia)
	for _, im := range []store.Image{{Owner: boss.ID, Name: "tools", Tag: "1", ID: "sha256:b0551111"}, {Owner: mia.ID, Name: "mine", Tag: "latest", ID: "sha256:3a3a2222"}} {
		if err := s.Store.PutImage(im); err != nil {
			t.Fatal(err)
		}
		drv.AddImage(s.ImageRef(im))
	}
	base := func(u store.User, ref string) (string, error) { return c.buildBase(caller.With(ctx, u), u, ref) }

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
	list := func(ctx context.Context) string {
		ims, err := c.List(ctx)
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

	// Shared with mia by name: she builds on it and sees it, and cannot
	// remove or share it; sam still cannot.
	if _, err := c.Share(asBoss, "tools", api.ImageShares{Users: []string{"mia"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := base(mia, "boss/tools:1"); err != nil || got != "paddock/boss/tools:1" {
		t.Fatalf("mia building on boss's shared image: %q %v", got, err)
	}
	if got := list(asMia); got != "boss/tools:1,mia/mine:latest" {
		t.Errorf("mia's list, shared: %s", got)
	}
	if _, err := c.Remove(asMia, "boss/tools:1"); !api.IsNotFound(err) {
		t.Errorf("mia removing boss's shared image: %v", err)
	}
	if _, err := c.Share(asMia, "boss/tools:1", api.ImageShares{Users: []string{"sam"}}); !api.IsNotFound(err) {
		t.Errorf("mia sharing boss's image: %v", err)
	}
	if _, err := base(sam, "boss/tools:1"); err == nil {
		t.Error("sam builds on an image not shared with him")
	}
	// With everyone: an owner's or admin's to do.
	var ae *api.Error
	if _, err := c.Share(asMia, "mine", api.ImageShares{Everyone: true}); !errors.As(err, &ae) || ae.Code != api.CodeForbidden {
		t.Errorf("a member sharing with everyone: %v", err)
	}
	if _, err := c.Share(asBoss, "tools", api.ImageShares{Everyone: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := base(sam, "boss/tools:1"); err != nil {
		t.Errorf("sam, shared with everyone: %v", err)
	}
	// Unshared: gone for both again. Removed: gone from the store and its
	// name from the engine.
	im, err := c.Share(asBoss, "tools", api.ImageShares{})
	if err != nil || len(im.SharedWith) != 0 {
		t.Fatalf("unsharing: %+v %v", im, err)
	}
	for _, u := range []store.User{mia, sam} {
		if _, err := base(u, "boss/tools:1"); err == nil {
			t.Errorf("%s builds on an unshared image", u.Name)
		}
	}
	if _, err := c.Remove(asMia, "mine"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.GetImage(mia.ID, "mine", "latest"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the removed image's record: %v", err)
	}
}

// A server that cannot build says why (its engine cannot take images in,
// or its boxes cannot run Docker), in the words the pages show.
func TestCannotBuild(t *testing.T) {
	c, s, _ := withCore(t)
	var keeps struct{ driver.ImageKeeper } // an engine that takes in images
	s.Cfg.Runtime = "sysbox-runc"
	if got := CannotBuild(keeps, c.cfg); got != "" {
		t.Errorf("sysbox boxes on an engine that takes images: %q", got)
	}
	s.Cfg.Runtime = "runc"
	if got := CannotBuild(keeps, c.cfg); !strings.Contains(got, "Docker inside a box does not work") {
		t.Errorf("runc boxes: %q", got)
	}
	s.Cfg.Runtime = "sysbox-runc"
	if got := CannotBuild(c.drv, c.cfg); !strings.Contains(got, "cannot take in images") {
		t.Errorf("a driver without images: %q", got)
	}
}
