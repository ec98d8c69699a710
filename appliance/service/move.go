package service

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// MoveBox moves a box to another server (the owner's): it is stopped
// (with a snapshot), its filesystem's snapshot and its /var/lib/docker go
// to the other server through the control plane, and there it is made
// from them, and started again if it ran. Until the switch, nothing of
// the box changes on its server: a move that fails midway removes what it
// shipped, starts the box again where it was, and says so. Boxes that
// mount drives do not move yet (their drives would have to move too).
// Its earlier snapshots go with it, in the same stream (the layers they
// share go once).
func (s *Service) MoveBox(ctx context.Context, name, to string) (api.Box, error) {
	if err := requireOwner(ctx, "move boxes between servers"); err != nil {
		return api.Box{}, err
	}
	b, err := s.Store.GetBox(name)
	if errors.Is(err, store.ErrNotFound) {
		return api.Box{}, notFound("box", name)
	} else if err != nil {
		return api.Box{}, err
	}
	ns, err := s.Store.ListNodes()
	if err != nil {
		return api.Box{}, err
	}
	if s.Cluster == nil || len(ns) == 0 {
		return api.Box{}, conflict("this Paddock has one server: there is nowhere to move box %q to", name)
	}
	target, err := s.wanted(to, ns)
	if err != nil {
		return api.Box{}, err
	}
	if target == b.Node {
		return api.Box{}, conflict("box %q is on %s already", name, s.nodeDisplay(target))
	}
	if len(b.Mounts) > 0 {
		return api.Box{}, conflict("box %q mounts drives (%s, …): moving drives is not there yet; a box without drives moves", name, b.Mounts[0].Drive)
	}
	if !hasLabels(ns, target, b.NodeLabels) {
		return api.Box{}, invalid("node", "server %s does not have the labels the box asks for (%s)", to, api.LabelsText(b.NodeLabels))
	}
	if b.Observed != "running" && b.Observed != "stopped" {
		return api.Box{}, conflict("box %q is %s: a box moves once it has run (start it, or wait)", name, b.Observed)
	}
	src, srcOK := s.Cluster.Driver.Node(b.Node)
	dst, dstOK := s.Cluster.Driver.Node(target)
	from, fromOK := src.(driver.SnapshotShipper)
	into, intoOK := dst.(driver.SnapshotShipper)
	if !srcOK || !dstOK || !fromOK || !intoOK {
		return api.Box{}, conflict("the servers' agents cannot ship snapshots (an older paddockd?)")
	}
	wasRunning := b.Desired == "running"
	if wasRunning {
		if _, err := s.StopBox(ctx, name, "move"); err != nil {
			return api.Box{}, fmt.Errorf("stopping %s to move it: %w", name, err)
		}
	}
	// Its filesystem as it is now, stopped.
	sn, err := s.Snapshot(ctx, name)
	if err == nil && sn.State != "ready" {
		err = fmt.Errorf("its snapshot %s is %s: %s", sn.ID, sn.State, sn.Error)
	}
	if err != nil {
		return api.Box{}, s.moveFailed(ctx, name, wasRunning, fmt.Errorf("the snapshot to move %s: %w", name, err))
	}
	all, err := s.Store.ListSnapshots(name)
	if err != nil {
		return api.Box{}, s.moveFailed(ctx, name, wasRunning, err)
	}
	var snaps []string
	for _, x := range all {
		if x.State == "ready" && x.Node == b.Node {
			snaps = append(snaps, x.ID)
		}
	}
	data := driver.VolumeRef{Kind: driver.KindBoxData, Name: b.Key()}
	undo := func() {
		ctx := context.WithoutCancel(ctx)
		for _, id := range snaps {
			dst.RemoveSnapshot(ctx, id)
		}
		dst.RemoveVolume(ctx, data)
	}
	if err := ship(ctx, func(ctx context.Context) (io.ReadCloser, error) { return from.SaveSnapshots(ctx, snaps) },
		func(ctx context.Context, r io.Reader) error { return into.LoadSnapshots(ctx, snaps, r) }); err != nil {
		undo()
		return api.Box{}, s.moveFailed(ctx, name, wasRunning, fmt.Errorf("shipping %s's filesystem to %s: %w", name, to, err))
	}
	if err := dst.CreateVolume(ctx, data); err != nil {
		undo()
		return api.Box{}, s.moveFailed(ctx, name, wasRunning, fmt.Errorf("its /var/lib/docker on %s: %w", to, err))
	}
	if err := ship(ctx, func(ctx context.Context) (io.ReadCloser, error) { return src.ReadVolume(ctx, data, s.Cfg.Image) },
		func(ctx context.Context, r io.Reader) error { return dst.WriteVolume(ctx, data, s.Cfg.Image, r) }); err != nil {
		undo()
		return api.Box{}, s.moveFailed(ctx, name, wasRunning, fmt.Errorf("shipping %s's /var/lib/docker to %s: %w", name, to, err))
	}

	// The switch: no reconcile pass sees the box on both servers, nor on
	// neither. Its container goes from the old server, and the box is
	// declared on the new one, to be made from the snapshot shipped.
	left := b.Node
	err = s.Rec.Hold(func() error {
		if err := src.RemoveBox(ctx, b.Key()); err != nil && !errors.Is(err, driver.ErrNotFound) {
			return fmt.Errorf("removing %s's container from %s: %w", name, s.nodeDisplay(left), err)
		}
		return s.Store.Declare(func(tx *store.Tx) error {
			nb := b
			nb.Node, nb.IP = target, ""
			if err := s.address(tx, &nb, ns); err != nil {
				return err
			}
			return tx.MoveBox(name, target, nb.IP, sn.ID, snaps)
		})
	})
	if err != nil {
		undo()
		return api.Box{}, s.moveFailed(ctx, name, wasRunning, err)
	}
	// What stays on the server it left: its /var/lib/docker and the
	// copies of the snapshots shipped.
	bg := context.WithoutCancel(ctx)
	if err := src.RemoveVolume(bg, data); err != nil && !errors.Is(err, driver.ErrNotFound) {
		s.Log.Warn("move: the box data left on the old server", "box", name, "node", left, "err", err)
	}
	for _, id := range snaps {
		if err := src.RemoveSnapshot(bg, id); err != nil && !errors.Is(err, driver.ErrNotFound) {
			s.Log.Warn("move: a shipped snapshot's copy on the old server", "box", name, "node", left, "snapshot", id, "err", err)
		}
	}
	s.Log.Info("box moved", "box", name, "from", s.nodeDisplay(left), "to", s.nodeDisplay(target), "snapshots", len(snaps))
	if wasRunning {
		return s.StartBox(ctx, name)
	}
	return s.settle(ctx, name, nil, "box."+name)
}

// moveFailed starts again a box that was running before its move failed,
// and says what failed and that the box is where it was.
func (s *Service) moveFailed(ctx context.Context, name string, wasRunning bool, cause error) error {
	if wasRunning {
		if _, err := s.StartBox(context.WithoutCancel(ctx), name); err != nil {
			return fmt.Errorf("%w; nothing moved, and starting %s again where it was failed: %v", cause, name, err)
		}
	}
	return fmt.Errorf("%w; nothing moved: %s is where it was", cause, name)
}

// ship streams what open gives into put; a stream that breaks off is an
// error on both ends.
func ship(ctx context.Context, open func(context.Context) (io.ReadCloser, error), put func(context.Context, io.Reader) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rc, err := open(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	return put(ctx, rc)
}
