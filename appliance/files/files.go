// Package files is a box's files from outside it: pushing a tar archive
// into a folder of a running box (Push: checked entry by entry, staged
// on the target's filesystem, merged into place only once all of it
// passed), pulling one out (Pull), listing a folder (ListDir), and a
// browser's download of one file, with their API routes (Routes), over
// the core's Core.
//
// Where the box's user may write (or read) what a push (or pull)
// touches, paddockd does it itself on the box's files with that user's
// rights (the driver's UserFiles: no process in the box, no copy through
// the engine); elsewhere the engine copies, and one command in the box
// merges as root. A push's staging folder is listed in the store while
// it exists (Core.AddLeftover), so that one a crash cut off goes after
// the next start.
package files

import (
	"context"
	"io"
	"log/slog"

	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Core is what the files need of paddockd's core (package service's
// Service has it): a use of a box (which wakes one asleep, and counts
// against its idle stop), the box if it runs, the staging folders in use
// (listed for the next start, should paddockd die), and the archive
// check that every upload passes.
type Core interface {
	Use(ctx context.Context, name string) (done func(), woke bool, err error)
	RunningBox(name string) (store.Box, error)
	AddLeftover(l store.Leftover) error
	DoneLeftover(l store.Leftover)
	Checked(body io.Reader, under string, use func(io.Reader) error) error
}

// Files is the boxes' files, over one engine.
type Files struct {
	core Core
	drv  driver.Driver // and driver.UserFiles, driver.PathStater where it has them
	cfg  *config.Config
	log  *slog.Logger
}

// New is the files over core, the engine's driver and the configuration.
func New(core Core, drv driver.Driver, cfg *config.Config, log *slog.Logger) *Files {
	return &Files{core: core, drv: drv, cfg: cfg, log: log}
}
