// Package secrets is users' secrets: their values sealed in the store
// and never shown back, shared with every box by the owner, and
// brokered (sent only to the hosts named, by the credential broker, a
// box holding a stand-in), with their API routes (Routes); and the
// broker's questions of Paddock (Grant: what the box at an address may
// do with a secret; Done: a request it answered, counted and, refused,
// audited), over the core's Core.
//
// The core keeps what every command in a box gets of them: the
// stand-ins and the broker's address in its environment (service's
// broker.go), and the counts shown with a box. Package broker is the
// broker itself (the forwarding, the stand-ins' making, the headers and
// limits).
package secrets

import (
	"log/slog"
	"time"

	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Core is what the secrets need of paddockd's core (package service's
// Service has it): its clock and audit log; a user's access to a box; the
// sealing of a value at rest; and a box's stand-in for a secret.
type Core interface {
	Time() time.Time
	Record(e audit.Entry)
	BoxAccess(u store.User, b store.Box) (string, error)
	SealSecret(name string, value []byte) ([]byte, error)
	OpenSecret(name string, sealed []byte) ([]byte, error)
	StandIn(b store.Box, via int64, row store.SecretRow) string
}

// Secrets is the users' secrets of one server.
type Secrets struct {
	core  Core
	store *store.Store
	log   *slog.Logger
}

// New is the secrets over core and the store.
func New(core Core, st *store.Store, log *slog.Logger) *Secrets {
	return &Secrets{core: core, store: st, log: log}
}
