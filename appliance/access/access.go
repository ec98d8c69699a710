// Package access is who may use a Paddock and how they show it: users
// and their one-time links (the owner's setup link, invitations), browser
// sessions and password sign-in, the CLI's device login, the dashboard's
// sign-in links, single sign-on users (made at their first sign-in,
// rechecked at their provider), groups, quotas as people set and read
// them, API tokens, SSH keys, and the audit log's reading and checking
// (Access, over the core's Core), with their API routes (Routes).
//
// The core keeps what every request and verb relies on: who a request
// acts as and what they may see (package caller), the quotas' checks as
// boxes are made and started, box grants, and the audit log's writing
// (Record). This package asks the core for those, and never the
// reverse.
package access

import (
	"log/slog"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/sso"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Core is what access needs of paddockd's core (package service's
// Service has it): its clock; the audit log's writing and its key (nil
// when no log is kept); users' names by id; a user's quota and use; the
// sign-in providers and the key that seals their refresh tokens.
type Core interface {
	Time() time.Time
	Record(e audit.Entry)
	AuditKey() *audit.Key
	OwnerNames() map[int64]string
	QuotaView(u store.User) (api.UserQuota, error)
	Providers() *sso.Set
	ProvidersKey() []byte
}

// Access is the users and their ways in, over one store.
type Access struct {
	core  Core
	store *store.Store
	cfg   *config.Config
	log   *slog.Logger
	// URL is the server's public address, for the links it hands out
	// ("" : none is added).
	URL string

	devices Devices // device logins in progress
	signIns SignIns // the dashboard's sign-in links not yet used
	mints   mintLimits
}

// New is access over core, the store and the configuration.
func New(core Core, st *store.Store, cfg *config.Config, log *slog.Logger) *Access {
	return &Access{core: core, store: st, cfg: cfg, log: log}
}
