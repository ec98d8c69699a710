// Package boxes is the boxes' own API routes: the list, a new box, one
// box, its removal, stop, start, snapshots, restore, fork, time to live
// and listening ports (Routes), over the core's Core, which holds the
// verbs themselves: every capability that makes, stops or starts boxes
// (projects, moves, builds, agents) asks the core, and so do these.
//
// Which caller may call which of these routes on a box (a viewer, a
// member, its owner) is the route table's (package server's box routes);
// a box shared with the caller is answered with its access
// (caller.AccessIn).
package boxes

import (
	"context"

	"github.com/paddock-dev/paddock/appliance/api"
)

// Core is what the box routes need of paddockd's core (package
// service's Service has it): the box verbs, the credential broker's
// counts of a box, and how a box's own Docker and desktop are.
type Core interface {
	ListBoxes(ctx context.Context) ([]api.Box, error)
	CreateBox(ctx context.Context, p api.BoxPost) (api.Box, error)
	GetBox(name string) (api.Box, error)
	RemoveBox(ctx context.Context, name string) error
	StopBox(ctx context.Context, name, reason string) (api.Box, error)
	StartBox(ctx context.Context, name string) (api.Box, error)
	Snapshots(name string) ([]api.Snapshot, error)
	Snapshot(ctx context.Context, name string) (api.Snapshot, error)
	Restore(ctx context.Context, name, snapshot string) (api.Box, error)
	Fork(ctx context.Context, src string, p api.ForkPost) (api.Box, error)
	SetTTL(ctx context.Context, name, ttl string) (api.Box, error)
	BoxPorts(ctx context.Context, name string) ([]api.Port, error)
	BrokerUses(box string) ([]api.BrokerUse, error)
	BoxDocker(ctx context.Context, b api.Box) string
	BoxDesktop(ctx context.Context, b api.Box) string
}

// Boxes is the box routes of one server.
type Boxes struct {
	core Core
	// PreviewURL is a box port's preview address, when this server
	// serves previews (nil: none).
	PreviewURL func(box string, port int) string
}

// New is the box routes over core.
func New(core Core) *Boxes { return &Boxes{core: core} }
