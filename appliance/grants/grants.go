// Package grants is boxes shared on purpose: a box's owner (or an
// owner or admin of the server) shares it with a user or a group as a
// viewer or a member, stops sharing it, and lists who it is shared with,
// with their API routes (Routes), over the core's Core.
//
// What a grant lets its holder do (the levels, and which routes each
// allows) is the core's and the caller's: package caller has the levels,
// the core's BoxAccess reads the grants, and the server's table of routes
// says which level each box route needs.
package grants

import (
	"context"

	"github.com/paddock-dev/paddock/appliance/store"
)

// Core is what the grants need of paddockd's core (package service's
// Service has it): what the caller may do with a box, and every user's
// name by id.
type Core interface {
	BoxAccessOf(ctx context.Context, b store.Box) (string, error)
	OwnerNames() map[int64]string
}

// Grants is the box shares of one server.
type Grants struct {
	core  Core
	store *store.Store
}

// New is the box shares over core and the store.
func New(core Core, st *store.Store) *Grants {
	return &Grants{core: core, store: st}
}
