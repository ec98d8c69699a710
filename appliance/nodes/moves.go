package nodes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Moves between servers (the owner's).
//
// A move takes boxes, the drives they mount, and the drives named alone,
// from one server to another: the boxes are stopped (with a snapshot),
// each box's snapshots and its /var/lib/docker, and each drive's volume,
// go to the other server through the control plane, and there the boxes
// are made from them, and started again if they ran. A drive goes with
// the boxes that mount it, all of them or none: a box and its drives are
// always on one server.
//
// Until the switch, nothing of the boxes and drives changes on their
// server: a move that fails midway removes what it shipped, starts the
// boxes again where they were, and says so. The switch is one
// transaction (every box and drive at once), made while the reconciler
// is held, so no pass sees a box on both servers, nor on neither.
//
// A move is written down (store.Move) before anything is shipped. When
// paddockd ends midway (killed, or its server gone), the next start
// finishes a move that had switched (removes the copies left on the
// server it left) and undoes one that had not (removes what was shipped),
// and starts the boxes that ran. A stopped box is kept safe all along by
// its move snapshot: its container, were it lost before the switch, is
// made again from it where it was.

// MoveBox moves a box to another server, with the drives it mounts
// (MoveBoxes).
func (nd *Nodes) MoveBox(ctx context.Context, name, to string) (api.Box, error) {
	bs, err := nd.MoveBoxes(ctx, []string{name}, nil, to)
	if err != nil {
		return api.Box{}, err
	}
	return bs[0], nil
}

// MoveBoxes moves boxes (all on one server) and the drives they mount,
// and the drives named in drives (with any boxes that mount them, which
// must be among boxes), to server to.
func (nd *Nodes) MoveBoxes(ctx context.Context, names, drives []string, to string) ([]api.Box, error) {
	if err := caller.RequireOwner(ctx, "move boxes and drives between servers"); err != nil {
		return nil, err
	}
	if len(names)+len(drives) == 0 {
		return nil, api.Invalid("boxes", "name a box or a drive to move")
	}
	ns, err := nd.store.ListNodes()
	if err != nil {
		return nil, err
	}
	if nd.cluster == nil || len(ns) == 0 {
		return nil, api.Conflict("this Paddock has one server: there is nowhere to move to")
	}
	target, err := nd.core.Wanted(to, ns)
	if err != nil {
		return nil, err
	}
	all, err := nd.store.ListBoxes()
	if err != nil {
		return nil, err
	}
	byName := map[string]store.Box{}
	for _, b := range all {
		byName[b.Name] = b
	}
	// What moves: the boxes, each once, and every drive they mount.
	var boxes []store.Box
	moving := map[string]bool{}
	source, sourceOf := "", ""
	for _, n := range names {
		b, ok := byName[n]
		if !ok {
			return nil, api.NotFound("box", n)
		}
		if moving[n] {
			continue
		}
		if len(boxes) > 0 && b.Node != source {
			return nil, api.Conflict("box %q is on %s and box %q on %s: one move takes what is on one server", sourceOf, nd.core.NodeDisplay(source), n, nd.core.NodeDisplay(b.Node))
		}
		source, sourceOf = b.Node, n
		if b.Node == target {
			return nil, api.Conflict("box %q is on %s already", n, nd.core.NodeDisplay(target))
		}
		if !store.HasLabels(ns, target, b.NodeLabels) {
			return nil, api.Invalid("node", "server %s does not have the labels box %q asks for (%s)", to, n, api.LabelsText(b.NodeLabels))
		}
		if b.Observed != "running" && b.Observed != "stopped" {
			return nil, api.Conflict("box %q is %s: a box moves once it has run (start it, or wait)", n, b.Observed)
		}
		boxes = append(boxes, b)
		moving[n] = true
	}
	driveSet := map[string]bool{}
	addDrive := func(name, why string) error {
		if driveSet[name] {
			return nil
		}
		d, err := nd.store.GetDrive(name)
		if errors.Is(err, store.ErrNotFound) {
			return api.NotFound("drive", name)
		} else if err != nil {
			return err
		}
		if d.State != "ready" {
			return api.Conflict("drive %q%s is %s: it moves once it is ready", name, why, d.State)
		}
		if len(boxes) == 0 && len(driveSet) == 0 {
			source, sourceOf = d.Node, "drive "+name
		}
		if d.Node != source {
			return api.Conflict("drive %q%s is on %s, not on %s with %s: one move takes what is on one server", name, why, nd.core.NodeDisplay(d.Node), nd.core.NodeDisplay(source), sourceOf)
		}
		if d.Node == target {
			return api.Conflict("drive %q is on %s already", name, nd.core.NodeDisplay(target))
		}
		if nd.core.DriveRestoring(name) {
			return api.Conflict("drive %q is being restored from a backup: it moves once that ends", name)
		}
		driveSet[name] = true
		return nil
	}
	for _, b := range boxes {
		for _, m := range b.Mounts {
			if err := addDrive(m.Drive, fmt.Sprintf(" (mounted by %s)", b.Name)); err != nil {
				return nil, err
			}
		}
	}
	for _, n := range drives {
		if err := addDrive(n, ""); err != nil {
			return nil, err
		}
	}
	// Every box that mounts a drive that moves moves with it.
	for _, b := range all {
		if moving[b.Name] {
			continue
		}
		for _, m := range b.Mounts {
			if driveSet[m.Drive] {
				with := append(boxNames(boxes), b.Name)
				return nil, api.Conflict("drive %q is mounted by box %q too, which is not moving: a box and its drives are on one server; move them together ('paddock move %s --to %s')", m.Drive, b.Name, strings.Join(with, " "), to)
			}
		}
	}
	driveNames := slices.Sorted(maps.Keys(driveSet))

	src, srcOK := nd.cluster.Driver.Node(source)
	dst, dstOK := nd.cluster.Driver.Node(target)
	from, fromOK := src.(driver.SnapshotShipper)
	into, intoOK := dst.(driver.SnapshotShipper)
	if !srcOK || !dstOK || !fromOK || !intoOK {
		return nil, api.Conflict("the servers' agents cannot ship snapshots (an older paddockd?)")
	}
	mv := store.Move{Source: source, Target: target, Boxes: boxNames(boxes), Drives: driveNames, Started: nd.core.Time()}
	for _, b := range boxes {
		if b.Desired == "running" {
			mv.Running = append(mv.Running, b.Name)
		}
	}
	if mv.ID, err = nd.store.AddMove(mv); err != nil {
		return nil, err
	}
	fail := func(cause error) ([]api.Box, error) {
		nd.undoMove(context.WithoutCancel(ctx), mv, dst)
		return nil, nd.moveFailed(context.WithoutCancel(ctx), mv, cause)
	}
	// Each box stopped, and its filesystem as it is then, which is what it
	// is made from from now on (where it is, until the switch).
	moveSnap := map[string]string{}
	for _, b := range boxes {
		if b.Desired == "running" {
			if _, err := nd.core.StopBox(ctx, b.Name, "move"); err != nil {
				return fail(fmt.Errorf("stopping %s to move it: %w", b.Name, err))
			}
		}
		sn, err := nd.core.Snapshot(ctx, b.Name)
		if err == nil && sn.State != "ready" {
			err = fmt.Errorf("its snapshot %s is %s: %s", sn.ID, sn.State, sn.Error)
		}
		if err != nil {
			return fail(fmt.Errorf("the snapshot to move %s: %w", b.Name, err))
		}
		moveSnap[b.Name] = sn.ID
		if err := nd.store.Declare(func(tx *store.Tx) error { return tx.MoveBox(b.Name, b.Node, b.IP, sn.ID, nil) }); err != nil {
			return fail(err)
		}
	}
	snaps := map[string][]string{}
	for _, b := range boxes {
		list, err := nd.store.ListSnapshots(b.Name)
		if err != nil {
			return fail(err)
		}
		for _, x := range list {
			if x.State == "ready" && x.Node == source {
				snaps[b.Name] = append(snaps[b.Name], x.ID)
				mv.Snaps = append(mv.Snaps, x.ID)
			}
		}
	}
	if err := nd.store.SetMoveSnaps(mv.ID, mv.Snaps); err != nil {
		return fail(err)
	}

	// The shipping: each box's snapshots (the layers they share go once)
	// and its /var/lib/docker, then each drive.
	for _, b := range boxes {
		if err := ship(ctx, func(ctx context.Context) (io.ReadCloser, error) { return from.SaveSnapshots(ctx, snaps[b.Name]) },
			func(ctx context.Context, r io.Reader) error { return into.LoadSnapshots(ctx, snaps[b.Name], r) }); err != nil {
			return fail(fmt.Errorf("shipping %s's filesystem to %s: %w", b.Name, to, err))
		}
		data := driver.VolumeRef{Kind: driver.KindBoxData, Name: b.Key()}
		if err := nd.shipVolume(ctx, src, dst, data); err != nil {
			return fail(fmt.Errorf("shipping %s's /var/lib/docker to %s: %w", b.Name, to, err))
		}
	}
	for _, n := range driveNames {
		if err := nd.shipVolume(ctx, src, dst, driver.VolumeRef{Kind: driver.KindDrive, Name: n}); err != nil {
			return fail(fmt.Errorf("shipping drive %s to %s: %w", n, to, err))
		}
	}

	// The switch.
	err = nd.rec.Hold(func() error {
		for _, b := range boxes {
			if err := src.RemoveBox(ctx, b.Key()); err != nil && !errors.Is(err, driver.ErrNotFound) {
				return fmt.Errorf("removing %s's container from %s: %w", b.Name, nd.core.NodeDisplay(source), err)
			}
		}
		return nd.store.Declare(func(tx *store.Tx) error {
			for _, b := range boxes {
				nb := b
				nb.Node, nb.IP = target, ""
				if err := nd.core.Address(tx, &nb, ns); err != nil {
					return err
				}
				if err := tx.MoveBox(b.Name, target, nb.IP, moveSnap[b.Name], snaps[b.Name]); err != nil {
					return err
				}
			}
			for _, n := range driveNames {
				if err := tx.SetDriveNode(n, target); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return fail(err)
	}
	nd.finishMove(context.WithoutCancel(ctx), mv, src)
	nd.log.Info("moved", "boxes", mv.Boxes, "drives", mv.Drives, "from", nd.core.NodeDisplay(source), "to", nd.core.NodeDisplay(target), "snapshots", len(mv.Snaps))
	out := make([]api.Box, 0, len(boxes))
	var startErr error
	for _, b := range boxes {
		var ab api.Box
		var err error
		if slices.Contains(mv.Running, b.Name) {
			ab, err = nd.core.StartBox(ctx, b.Name)
		} else {
			ab, err = nd.core.Settle(ctx, b.Name, nil, "box."+b.Name)
		}
		startErr = errors.Join(startErr, err)
		out = append(out, ab)
	}
	if startErr == nil {
		nd.store.DoneMove(mv.ID)
	}
	return out, startErr
}

// MoveDrive moves a drive, and the boxes with (which must be all those
// that mount it), to server to (MoveBoxes).
func (nd *Nodes) MoveDrive(ctx context.Context, name string, with []string, to string) (api.Drive, error) {
	if _, err := nd.core.GetDrive(ctx, name); err != nil {
		return api.Drive{}, err // another user's drive is no drive of theirs
	}
	if _, err := nd.MoveBoxes(ctx, with, []string{name}, to); err != nil {
		return api.Drive{}, err
	}
	return nd.core.GetDrive(ctx, name)
}

func boxNames(bs []store.Box) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Name
	}
	return out
}

// shipVolume makes volume v on dst and fills it with what it holds on src.
func (nd *Nodes) shipVolume(ctx context.Context, src, dst driver.Driver, v driver.VolumeRef) error {
	if err := dst.CreateVolume(ctx, v); err != nil {
		return err
	}
	return ship(ctx, func(ctx context.Context) (io.ReadCloser, error) { return src.ReadVolume(ctx, v, nd.cfg.Image) },
		func(ctx context.Context, r io.Reader) error { return dst.WriteVolume(ctx, v, nd.cfg.Image, r) })
}

// undoMove removes what move mv shipped to dst, its target, before its
// switch: the snapshots' images and the volumes, of the boxes and drives
// still declared elsewhere (never what the target holds as its own).
func (nd *Nodes) undoMove(ctx context.Context, mv store.Move, dst driver.Driver) {
	for _, id := range mv.Snaps {
		if n, err := nd.store.Where("snapshot", id); err == nil && n == mv.Target {
			continue
		}
		if err := dst.RemoveSnapshot(ctx, id); err != nil && !errors.Is(err, driver.ErrNotFound) {
			nd.log.Warn("move undone: a snapshot's copy on the target", "snapshot", id, "node", nd.core.NodeDisplay(mv.Target), "err", err)
		}
	}
	for _, name := range mv.Boxes {
		b, err := nd.store.GetBox(name)
		if err != nil || b.Node == mv.Target {
			continue
		}
		if err := dst.RemoveVolume(ctx, driver.VolumeRef{Kind: driver.KindBoxData, Name: b.Key()}); err != nil && !errors.Is(err, driver.ErrNotFound) {
			nd.log.Warn("move undone: a box's data on the target", "box", name, "node", nd.core.NodeDisplay(mv.Target), "err", err)
		}
	}
	for _, name := range mv.Drives {
		d, err := nd.store.GetDrive(name)
		if err != nil || d.Node == mv.Target {
			continue
		}
		if err := dst.RemoveVolume(ctx, driver.VolumeRef{Kind: driver.KindDrive, Name: name}); err != nil && !errors.Is(err, driver.ErrNotFound) {
			nd.log.Warn("move undone: a drive's copy on the target", "drive", name, "node", nd.core.NodeDisplay(mv.Target), "err", err)
		}
	}
}

// finishMove removes what stays on the server move mv left, after its
// switch: the boxes' containers, their /var/lib/docker, the snapshots'
// copies and the drives' volumes.
func (nd *Nodes) finishMove(ctx context.Context, mv store.Move, src driver.Driver) {
	warn := func(what string, err error) {
		if err != nil && !errors.Is(err, driver.ErrNotFound) {
			nd.log.Warn("move: "+what+" left on the old server", "node", nd.core.NodeDisplay(mv.Source), "err", err)
		}
	}
	for _, name := range mv.Boxes {
		b, err := nd.store.GetBox(name)
		if err != nil || b.Node != mv.Target {
			continue
		}
		warn("the container of "+name, src.RemoveBox(ctx, b.Key()))
		warn("the /var/lib/docker of "+name, src.RemoveVolume(ctx, driver.VolumeRef{Kind: driver.KindBoxData, Name: b.Key()}))
	}
	for _, id := range mv.Snaps {
		if n, err := nd.store.Where("snapshot", id); err == nil && n == mv.Target {
			warn("snapshot "+id, src.RemoveSnapshot(ctx, id))
		}
	}
	for _, name := range mv.Drives {
		if d, err := nd.store.GetDrive(name); err == nil && d.Node == mv.Target {
			warn("drive "+name, src.RemoveVolume(ctx, driver.VolumeRef{Kind: driver.KindDrive, Name: name}))
		}
	}
}

// moveFailed starts again the boxes that ran before their move failed,
// forgets the move, and says what failed and that nothing moved.
func (nd *Nodes) moveFailed(ctx context.Context, mv store.Move, cause error) error {
	var starts []string
	for _, name := range mv.Running {
		if _, err := nd.core.StartBox(ctx, name); err != nil {
			starts = append(starts, fmt.Sprintf("starting %s again where it was failed: %v", name, err))
		}
	}
	if len(starts) > 0 {
		return fmt.Errorf("%w; nothing moved, and %s", cause, strings.Join(starts, "; "))
	}
	nd.store.DoneMove(mv.ID)
	what := append(slices.Clone(mv.Boxes), mv.Drives...)
	if len(what) == 1 {
		return fmt.Errorf("%w; nothing moved: %s is where it was", cause, what[0])
	}
	return fmt.Errorf("%w; nothing moved: %s are where they were", cause, strings.Join(what, ", "))
}

// Recover ends the moves a previous run of paddockd left under way:
// one that had switched is finished, one that had not is undone; the
// boxes that ran before it are started. A move whose servers do not
// answer stays listed, for the next start.
func (nd *Nodes) Recover(ctx context.Context) {
	if nd.cluster == nil {
		return
	}
	mvs, err := nd.store.Moves()
	if err != nil {
		nd.log.Error("moves under way", "err", err)
		return
	}
	for _, mv := range mvs {
		switched := false
		if len(mv.Boxes) > 0 {
			b, err := nd.store.GetBox(mv.Boxes[0])
			switched = err == nil && b.Node == mv.Target
		} else if len(mv.Drives) > 0 {
			d, err := nd.store.GetDrive(mv.Drives[0])
			switched = err == nil && d.Node == mv.Target
		}
		src, srcOK := nd.cluster.Driver.Node(mv.Source)
		dst, dstOK := nd.cluster.Driver.Node(mv.Target)
		if !srcOK || !dstOK {
			nd.log.Warn("a move under way between servers this Paddock no longer has: forgotten", "boxes", mv.Boxes, "drives", mv.Drives)
			nd.store.DoneMove(mv.ID)
			continue
		}
		if switched {
			if seen, ok := nd.cluster.LastSeen(mv.Source); ok && seen.Err != nil {
				// What it left on a server that is down goes once that
				// server answers (FinishMoves); its boxes start now.
				nd.finishLater(mv.ID)
				for _, name := range mv.Running {
					if _, err := nd.core.StartBox(ctx, name); err != nil && !api.IsNotFound(err) {
						nd.log.Warn("a move cut off by the last stop: its boxes do not start yet", "boxes", mv.Running, "err", err)
					}
				}
				continue
			}
			nd.finishMove(ctx, mv, src)
		} else {
			nd.undoMove(ctx, mv, dst)
		}
		var failed error
		for _, name := range mv.Running {
			if _, err := nd.core.StartBox(ctx, name); err != nil && !api.IsNotFound(err) {
				failed = errors.Join(failed, err)
			}
		}
		if failed != nil {
			nd.log.Warn("a move cut off by the last stop: its boxes do not start yet", "boxes", mv.Running, "err", failed)
			continue
		}
		nd.log.Info("a move cut off by the last stop", "boxes", mv.Boxes, "drives", mv.Drives, "finished", switched, "undone", !switched,
			"from", nd.core.NodeDisplay(mv.Source), "to", nd.core.NodeDisplay(mv.Target), "started", mv.Started)
		nd.store.DoneMove(mv.ID)
	}
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
