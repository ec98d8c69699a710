package service

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/images/imagefmt"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Users' own images: the builds, the list and the shares are the images
// capability's (package images); the core keeps what a box's creation and
// a project's plan need of them: which image a caller may use
// (UsableImage, SharedWith), what the engine calls it (ImageRef), and the
// builder box a build runs in (NewBuilder).

// NewBuilder declares a build's builder box and waits for it to run: on
// this server, with the policy asked for, its owner's build cache as its
// /var/lib/docker, and a TTL past the build's bound (so that even a lost
// one goes).
func (s *Service) NewBuilder(ctx context.Context, build store.Build, policy string) error {
	off := false
	bt := s.Cfg.Builds.Type
	if bt == "" {
		bt = "medium"
	}
	bx, err := s.newBox(api.BoxPost{Name: build.Box, Policy: policy, Desktop: &off, Type: bt, TTL: (s.Cfg.Builds.Timeout + 10*time.Minute).String()})
	if err != nil {
		return err
	}
	bx.Owner = build.Owner
	bx.Builder = true
	bx.Image = s.Cfg.Image
	bx.Labels = map[string]string{"paddock.build": build.Name + "." + build.Tag}
	err = s.Store.Declare(func(tx *store.Tx) error {
		if err := s.CheckPolicy(ctx, tx, bx.Policy); err != nil {
			return err
		}
		if err := s.PlaceOn(tx, &bx, s.LocalNodeName()); err != nil {
			return err
		}
		return s.DeclareBox(tx, bx)
	})
	if _, err := s.Settle(ctx, bx.Name, err, "box."+bx.Name, "volume.buildcache."+strconv.FormatInt(build.Owner, 10)); err != nil {
		return fmt.Errorf("the builder box: %w", err)
	}
	return nil
}

// AllowedImage says whether ref is one of the server's images.
func (s *Service) AllowedImage(ref string) bool {
	return ref == s.Cfg.Image || slices.Contains(s.Cfg.Images, ref)
}

// UsableImage is the user's image named ref (NAME[:TAG]), or another
// user's shared with them (OWNER/NAME[:TAG]). Anything else, another
// user's image not shared with them included, is not found, alike.
func (s *Service) UsableImage(ctx context.Context, u store.User, ref string) (store.Image, error) {
	owner, name, tag := imagefmt.SplitRef(ref)
	if api.ValidName("image", name) != nil || imagefmt.ValidTag(tag) != nil {
		return store.Image{}, store.ErrNotFound
	}
	id := u.ID
	if owner != "" {
		ou, err := s.Store.UserByName(owner)
		if err != nil {
			return store.Image{}, store.ErrNotFound
		}
		id = ou.ID
	}
	im, err := s.Store.GetImage(id, name, tag)
	if err != nil {
		return store.Image{}, store.ErrNotFound
	}
	if _, ok := caller.From(ctx); !ok || im.Owner == u.ID {
		return im, nil
	}
	if ok, err := s.SharedWith(u, im); err != nil || !ok {
		return store.Image{}, store.ErrNotFound
	}
	return im, nil
}

// SharedWith says whether u may use im as its owner shared it.
func (s *Service) SharedWith(u store.User, im store.Image) (bool, error) {
	shares, err := s.Store.ImageShares(im.Owner)
	if err != nil {
		return false, err
	}
	var groups []string
	for _, sh := range shares {
		if sh.Name != im.Name {
			continue
		}
		switch sh.Kind {
		case "all":
			return true, nil
		case "user":
			if sh.Who == strconv.FormatInt(u.ID, 10) {
				return true, nil
			}
		case "group":
			if groups == nil {
				if groups, err = s.Store.GroupsOf(u.ID); err != nil {
					return false, err
				}
			}
			if slices.Contains(groups, sh.Who) {
				return true, nil
			}
		}
	}
	return false, nil
}

// ImageRef is the engine's name of a user's image: its reference
// (OWNER/NAME:TAG) under the instance's name, so that it is never one of
// the server's images (a user may be named as an image's repository is)
// nor another instance's on the same engine.
func (s *Service) ImageRef(im store.Image) string {
	n, _ := s.UserName(im.Owner)
	return s.EngineRef(imagefmt.Ref(n, im.Name, im.Tag))
}

func (s *Service) EngineRef(ref string) string { return s.Cfg.Instance + "/" + ref }

func (s *Service) UserName(id int64) (string, error) {
	u, err := s.Store.GetUser(id)
	if err != nil {
		return "", fmt.Errorf("the user %d: %w", id, err)
	}
	return u.Name, nil
}
