// Package nodes is the servers of one Paddock, as its owner runs them:
// joins (a one-time token, then a name, a box network and a certificate
// for the joining server's agent), the list of servers with what each
// last said of itself, their labels and warm pools, drains and removal,
// and the moves of boxes and drives from one server to another (Nodes,
// over the core's Core), with their API routes (Routes).
//
// Below it, package node is each server's side (the agent), the control
// plane's driver of one server, and node.Cluster, what the control plane
// keeps of its servers; placement of a new box is the core's (it runs in
// the box's creation), and this package asks it where a drained server's
// boxes go.
package nodes

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/node"
	"github.com/paddock-dev/paddock/appliance/reconcile"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Core is what the servers' verbs need of paddockd's core (package
// service's Service has it): its clock and audit log; a look at the
// servers; placement (a server a user names, the roomiest for labels, a
// box's address there) and the names users see; the warm pool's keeper;
// and the box verbs a move is made of (stop, snapshot, start, settle),
// the drives the caller sees and whether one is being restored.
type Core interface {
	Time() time.Time
	Record(e audit.Entry)
	LookAtNodes(ctx context.Context)
	LocalNodeName() string
	NodeDisplay(n string) string
	Wanted(want string, ns []store.Node) (string, error)
	Roomiest(tx *store.Tx, ns []store.Node, labels map[string]string) (string, error)
	Address(tx *store.Tx, b *store.Box, ns []store.Node) error
	NotePoolChange()
	StopBox(ctx context.Context, name, reason string) (api.Box, error)
	Snapshot(ctx context.Context, name string) (api.Snapshot, error)
	StartBox(ctx context.Context, name string) (api.Box, error)
	Settle(ctx context.Context, name string, declErr error, addrs ...string) (api.Box, error)
	GetDrive(ctx context.Context, name string) (api.Drive, error)
	DriveRestoring(name string) bool
}

// Reconciler is the reconciler's part in the servers' verbs: a pass
// (Run), and holding passes off while a move switches servers (Hold).
type Reconciler interface {
	Run(ctx context.Context) (reconcile.Result, error)
	Hold(fn func() error) error
}

// Nodes is the servers' verbs over one control plane.
type Nodes struct {
	core    Core
	store   *store.Store
	rec     Reconciler
	cluster *node.Cluster // nil: a single server
	subnet  netip.Prefix  // the control plane's own box network
	cfg     *config.Config
	log     *slog.Logger

	// pending are the moves FinishMoves finishes once their source
	// answers (by store.Move ID).
	pendingMu sync.Mutex
	pending   map[int64]bool
}

// New is the servers' verbs over core, the store and reconciler, the
// cluster (nil on a single server), the control plane's box network and
// the configuration.
func New(core Core, st *store.Store, rec Reconciler, cluster *node.Cluster, subnet netip.Prefix, cfg *config.Config, log *slog.Logger) *Nodes {
	return &Nodes{core: core, store: st, rec: rec, cluster: cluster, subnet: subnet, cfg: cfg, log: log}
}
