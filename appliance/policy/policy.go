// Package policy is the egress policies as users name and change them:
// named policies made, listed, changed and removed outside a Boxfile, a
// box's policy set, and what a box's firewall and resolver did (its
// report), with their API routes (Routes), over the core's Core.
//
// The rules themselves (the nftables sets, the resolver that fills
// them, the report's counts) are package policies at the top of the
// tree; the reconciler rebuilds them from the store (Syncer). A
// Boxfile's policies are its project's (package project); the core
// checks a box's policy when the box is made (CheckPolicy).
package policy

import (
	"context"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/policies"
)

// Core is what the policy verbs need of paddockd's core (package
// service's Service has it): a box changed in one transaction and read
// back as the API shows it, and whether a policy's name is one the
// caller may give a box.
type Core interface {
	UpdateBox(name string, fn func(tx *store.Tx, b *store.Box) error) error
	GetBox(name string) (api.Box, error)
	CheckPolicy(ctx context.Context, tx *store.Tx, name string) error
}

// Syncer rebuilds the running boxes' rules from the store (the
// reconciler): a changed policy is in force when it returns.
type Syncer interface {
	SyncPolicies(ctx context.Context) error
}

// Reporter is what a box's firewall and resolver did (nil: none).
type Reporter interface {
	Report(box string) (policies.Report, error)
}

// Policies is the policy verbs of one server.
type Policies struct {
	core     Core
	store    *store.Store
	rules    Syncer
	firewall Reporter
}

// New is the policy verbs over core and the store; rules rebuilds the
// boxes' rules, firewall reports on them (nil: no reports).
func New(core Core, st *store.Store, rules Syncer, firewall Reporter) *Policies {
	return &Policies{core: core, store: st, rules: rules, firewall: firewall}
}
