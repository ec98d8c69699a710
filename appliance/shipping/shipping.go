// Package shipping keeps boxes' snapshots in the server's object store
// (package objstore), so that they outlive the server they were taken on.
//
// Once a snapshot is taken it is shipped: its images, as the engine saves
// them, stored by content, so that what a box's earlier snapshots, its
// image and other boxes already sent is not sent again. A snapshot's
// `shipped` says where it stands: local (on its server only), shipping,
// shipped. A shipping that fails (the store unreachable, its keys refused)
// leaves the snapshot local with the error, and is tried again on the next
// pass (every ship_interval, and after each snapshot).
//
// A box made from a snapshot whose image its server does not have (the
// engine's images lost with a disk, a box made again on another server)
// fetches it from the store first: the archive is checked chunk by chunk
// and whole against what was stored, then loaded as a move's archive is
// (sanitized: it names nothing but its snapshot).
//
// The archives of snapshots that are gone are removed from the store, and
// then the chunks no archive names any more (an hour after they were
// stored, so that a shipping under way keeps its own).
package shipping

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/objstore"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Where a snapshot stands with the store (store.Snapshot.Shipped).
const (
	Local    = "local"
	Shipping = "shipping"
	Shipped  = "shipped"
)

// Store is what the shipper reads and records of snapshots.
type Store interface {
	ListSnapshots(box string) ([]store.Snapshot, error)
	SetSnapshotShipped(id, shipped, errMsg string) error
}

// Engines are the servers' engines, by node name ("" is this server's).
type Engines interface {
	Node(name string) (driver.Driver, bool)
}

// Shipper ships snapshots to the object store and fetches them back.
type Shipper struct {
	Store   Store
	Engines Engines
	Bucket  *objstore.Store
	Log     *slog.Logger
	// SweepEvery is how often the store is swept of what no snapshot
	// needs (default: an hour).
	SweepEvery time.Duration

	mu        sync.Mutex // one pass at a time
	lastSweep time.Time
	fetching  sync.Mutex
}

// sweepGrace is how long a chunk no archive names is kept.
const sweepGrace = time.Hour

// Pass ships every ready snapshot not yet in the store, oldest first, and
// now and then sweeps the store. It returns the first error (each
// snapshot's is recorded on it).
func (s *Shipper) Pass(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	all, err := s.Store.ListSnapshots("")
	if err != nil {
		return err
	}
	var first error
	for _, sn := range all { // oldest first
		if sn.State != "ready" || sn.Shipped == Shipped {
			continue
		}
		if err := s.ship(ctx, sn); err != nil && first == nil {
			first = err
		}
	}
	every := s.SweepEvery
	if every <= 0 {
		every = time.Hour
	}
	if time.Since(s.lastSweep) >= every {
		if err := s.sweep(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// ship sends one snapshot's images to the store.
func (s *Shipper) ship(ctx context.Context, sn store.Snapshot) error {
	sh, err := s.shipper(sn.Node)
	if err != nil {
		return err
	}
	if err := s.Store.SetSnapshotShipped(sn.ID, Shipping, ""); err != nil {
		return err
	}
	start := time.Now()
	_, sent, err := s.put(ctx, sh, sn.ID)
	if err != nil {
		err = fmt.Errorf("shipping snapshot %s: %w", sn.ID, err)
		s.Store.SetSnapshotShipped(sn.ID, Local, err.Error())
		s.Log.Warn("snapshot not shipped; tried again later", "snapshot", sn.ID, "err", err)
		return err
	}
	s.Log.Info("snapshot shipped", "snapshot", sn.ID, "bytes", sent.Bytes, "sent", sent.NewBytes,
		"chunks", sent.Chunks, "new_chunks", sent.New, "took", time.Since(start).Round(time.Millisecond))
	return s.Store.SetSnapshotShipped(sn.ID, Shipped, "")
}

func (s *Shipper) put(ctx context.Context, sh driver.SnapshotShipper, id string) (objstore.Manifest, objstore.Sent, error) {
	rc, err := sh.SaveSnapshots(ctx, []string{id})
	if err != nil {
		return objstore.Manifest{}, objstore.Sent{}, err
	}
	defer rc.Close()
	return s.Bucket.PutArchive(ctx, id, rc)
}

// shipper is the engine of a node, as a shipper of snapshots.
func (s *Shipper) shipper(node string) (driver.SnapshotShipper, error) {
	d, ok := s.Engines.Node(node)
	if !ok {
		return nil, fmt.Errorf("server %q is not known", node)
	}
	sh, ok := d.(driver.SnapshotShipper)
	if !ok {
		return nil, fmt.Errorf("server %q's engine cannot save or load snapshots", node)
	}
	return sh, nil
}

// ErrNotShipped is a snapshot whose image is neither on the server that
// needs it nor in the store.
var ErrNotShipped = errors.New("not in the object store")

// Fetch makes sure the engine of node has a snapshot's image: it loads it
// from the store when it does not.
func (s *Shipper) Fetch(ctx context.Context, id, node string) error {
	s.fetching.Lock()
	defer s.fetching.Unlock()
	d, ok := s.Engines.Node(node)
	if !ok {
		return fmt.Errorf("server %q is not known", node)
	}
	have, err := d.Snapshots(ctx)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(have, func(x driver.SnapshotState) bool { return x.ID == id }) {
		return nil
	}
	sh, err := s.shipper(node)
	if err != nil {
		return err
	}
	start := time.Now()
	rc, m, err := s.Bucket.OpenArchive(ctx, id)
	if errors.Is(err, objstore.ErrNotFound) {
		return fmt.Errorf("snapshot %s: its image is not on this server and it is %w", id, ErrNotShipped)
	}
	if err != nil {
		return fmt.Errorf("fetching snapshot %s: %w", id, err)
	}
	defer rc.Close()
	if err := sh.LoadSnapshots(ctx, []string{id}, rc); err != nil {
		return fmt.Errorf("fetching snapshot %s from the object store: %w", id, err)
	}
	s.Log.Info("snapshot fetched from the object store", "snapshot", id, "node", node, "bytes", m.Size, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// sweep removes the archives of snapshots that are gone, then the chunks
// nothing names.
func (s *Shipper) sweep(ctx context.Context) error {
	all, err := s.Store.ListSnapshots("")
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, sn := range all {
		if sn.State != "deleting" {
			live[sn.ID] = true
		}
	}
	n, err := s.Bucket.Sweep(ctx, func(name string) bool { return live[name] }, sweepGrace)
	if err != nil {
		return fmt.Errorf("sweeping the object store: %w", err)
	}
	s.lastSweep = time.Now()
	if n > 0 {
		s.Log.Info("object store swept", "chunks_removed", n)
	}
	return nil
}
