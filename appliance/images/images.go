// Package images is users' own box images, whole: their builds, which run
// in builder boxes, the list of them, their shares and their removal
// (Catalog, over the core's Core), and the API routes of these verbs
// (Routes). How an image archive is checked, how a Dockerfile's bases are
// read and what an image may be named is the format's, below this
// (package imagefmt); which image a caller may make a box from, and what
// the engine calls it, is the core's (a box's creation asks it), and this
// package asks the core too.
//
// A build (Catalog.Build) runs in a builder box: a box of the user's,
// under the boxes' runtime and the egress policy the build names, whose
// /var/lib/docker is the user's build cache. Paddock loads the bases into
// the builder's engine, the builder's engine runs the Dockerfile, and
// paddockd takes the result out (docker save), through
// imagefmt.Sanitize, into the server's engine, where it names it
// OWNER/NAME:TAG. The server's engine never runs a step.
package images

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Core is what the images need of paddockd's core (package service's
// Service has it): its clock; the server's images and the check of one;
// which of the users' images a caller may use and what the engine calls
// one; and the builder box a build runs in, made and removed as any box
// is.
type Core interface {
	Time() time.Time
	ServerImages() []string
	CheckImage(ctx context.Context, ref string) error
	UsableImage(ctx context.Context, u store.User, ref string) (store.Image, error)
	SharedWith(u store.User, im store.Image) (bool, error)
	ImageRef(im store.Image) string
	EngineRef(ref string) string
	NewBuilder(ctx context.Context, b store.Build, policy string) error
	RemoveBox(ctx context.Context, name string) error
}

// Store is where the images, their shares and the builds under way are
// recorded (package store's Store), with the users and boxes they name.
type Store interface {
	GetImage(owner int64, name, tag string) (store.Image, error)
	PutImage(im store.Image) error
	PutImageUnder(im store.Image, max int) (int, error)
	ListImages() ([]store.Image, error)
	DeleteImage(owner int64, name, tag string) error
	ImageIDUsed(id string) (bool, error)
	ImageShares(owner int64) ([]store.ImageShare, error)
	ShareImage(sh store.ImageShare, add bool) error
	StartBuild(b store.Build) error
	SetBuildImage(id, imageID string) error
	EndBuild(id string) error
	Builds() ([]store.Build, error)
	GetBox(name string) (store.Box, error)
	GetUser(id int64) (store.User, error)
	UserByName(name string) (store.User, error)
}

// Catalog is the users' images of one server: it builds, lists, shares
// and removes them.
type Catalog struct {
	core   Core
	store  Store
	drv    driver.Driver // and driver.ImageKeeper, driver.ImageIDer where the engine has them
	cfg    *config.Config
	log    *slog.Logger
	builds builds // the users whose build runs
}

// New is the catalog over core, the store, the engine's driver and the
// server's configuration.
func New(core Core, st Store, drv driver.Driver, cfg *config.Config, log *slog.Logger) *Catalog {
	return &Catalog{core: core, store: st, drv: drv, cfg: cfg, log: log}
}

// allowedImage says whether ref is one of the server's images.
func (c *Catalog) allowedImage(ref string) bool { return slices.Contains(c.core.ServerImages(), ref) }

func (c *Catalog) userName(id int64) (string, error) {
	u, err := c.store.GetUser(id)
	if err != nil {
		return "", fmt.Errorf("the user %d: %w", id, err)
	}
	return u.Name, nil
}
