// Package drives is named drives as users make and keep them: made,
// removed, backed up as a tar and restored from one, with their API
// routes (Routes), over the core's Core.
//
// The core keeps what the rest of Paddock asks of a drive: its view as
// the API shows it (ListDrives, GetDrive, which the events stream, the
// dashboard and moves read), where a new one goes (DriveNode), the mark
// of a restore under way that the reconciler and moves respect
// (MarkRestoring, DriveRestoring), and a member's bound on their drives'
// bytes (its disk check). The reconciler makes and removes the volumes;
// a Boxfile's drives are its project's (package project).
package drives

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Core is what the drives need of paddockd's core (package service's
// Service has it): its clock; a member's limit on their drives; the
// server a new drive goes to; a pass of the reconciler for an address;
// a drive as the API shows it; a restore's mark; an upload checked
// through the archive rules; and the leftovers that a cut restore leaves
// for the next start to clean.
type Core interface {
	Time() time.Time
	CheckLimit(tx *store.Tx, owner int64, what string) error
	DriveNode(tx *store.Tx) (string, error)
	ReconcileFor(ctx context.Context, addrs ...string) error
	ListDrives(ctx context.Context) ([]api.Drive, error)
	GetDrive(ctx context.Context, name string) (api.Drive, error)
	MarkRestoring(name string) (done func(), err error)
	Checked(body io.Reader, under string, use func(io.Reader) error) error
	AddLeftover(l store.Leftover) error
	DoneLeftover(l store.Leftover)
}

// Drives is the drive verbs of one server.
type Drives struct {
	core   Core
	store  *store.Store
	driver driver.Driver
	cfg    *config.Config
	log    *slog.Logger
}

// New is the drive verbs over core, the store and the engine (its
// volumes are read and written with the configuration's image).
func New(core Core, st *store.Store, drv driver.Driver, cfg *config.Config, log *slog.Logger) *Drives {
	return &Drives{core: core, store: st, driver: drv, cfg: cfg, log: log}
}
