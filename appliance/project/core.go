package project

import (
	"context"
	"time"

	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/reconcile"
	"github.com/paddock-dev/paddock/appliance/store"
)

// The capability: Boxfile projects planned, applied and listed (Projects,
// over the core's Core), with their API routes (Routes). Plan, above, is
// the pure computation they stand on.

// Core is what the projects need of paddockd's core (package service's
// Service has it): its clock; the box verbs an apply declares with, in
// its one transaction (a warm pool box taken, placement, the box
// declared within its owner's quota, a new drive's server, a box
// updated); the warm pool's keeper; users' names; and the images' rules
// (the server's images and the check of one, which of users' images a
// caller may use and what the engine calls it).
type Core interface {
	Time() time.Time
	TakePool(tx *store.Tx, b *store.Box, want string) (bool, error)
	PlaceOn(tx *store.Tx, b *store.Box, want string) error
	DeclareBox(tx *store.Tx, b store.Box) error
	DriveNode(tx *store.Tx) (string, error)
	UpdateBox(name string, fn func(tx *store.Tx, b *store.Box) error) error
	LocalNodeName() string
	NotePoolChange()
	OwnerNames() map[int64]string
	UserName(id int64) (string, error)
	AllowedImage(ref string) bool
	CheckImage(ctx context.Context, ref string) error
	NoImage(ref string) error
	UsableImage(ctx context.Context, u store.User, ref string) (store.Image, error)
	ImageRef(im store.Image) string
	EngineRef(ref string) string
}

// Reconciler runs a pass of the reconciler (after an apply).
type Reconciler interface {
	Run(ctx context.Context) (reconcile.Result, error)
}

// Projects is the Boxfile projects of one server.
type Projects struct {
	core  Core
	store *store.Store
	rec   Reconciler
	drv   driver.Driver // what the engine has of boxes, for a plan's drift
	cfg   *config.Config
}

// New is the projects over core, the store, the reconciler, the engine's
// driver and the configuration.
func New(core Core, st *store.Store, rec Reconciler, drv driver.Driver, cfg *config.Config) *Projects {
	return &Projects{core: core, store: st, rec: rec, drv: drv, cfg: cfg}
}
