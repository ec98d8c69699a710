package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
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
func (s *Service) MoveBox(ctx context.Context, name, to string) (api.Box, error) {
	bs, err := s.MoveBoxes(ctx, []string{name}, nil, to)
	if err != nil {
		return api.Box{}, err
	}
	return bs[0], nil
}

// MoveBoxes moves boxes (all on one server) and the drives they mount,
// and the drives named in drives (with any boxes that mount them, which
// must be among boxes), to server to.
func (s *Service) MoveBoxes(ctx context.Context, names, drives []string, to string) ([]api.Box, error) {
	if err := requireOwner(ctx, "move boxes and drives between servers"); err != nil {
		return nil, err
	}
	if len(names)+len(drives) == 0 {
		return nil, api.Invalid("boxes", "name a box or a drive to move")
	}
	ns, err := s.Store.ListNodes()
	if err != nil {
		return nil, err
	}
	if s.Cluster == nil || len(ns) == 0 {
		return nil, api.Conflict("this Paddock has one server: there is nowhere to move to")
	}
	target, err := s.wanted(to, ns)
	if err != nil {
		return nil, err
	}
	all, err := s.Store.ListBoxes()
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
			return nil, api.Conflict("box %q is on %s and box %q on %s: one move takes what is on one server", sourceOf, s.nodeDisplay(source), n, s.nodeDisplay(b.Node))
		}
		source, sourceOf = b.Node, n
		if b.Node == target {
			return nil, api.Conflict("box %q is on %s already", n, s.nodeDisplay(target))
		}
		if !hasLabels(ns, target, b.NodeLabels) {
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
		d, err := s.Store.GetDrive(name)
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
			return api.Conflict("drive %q%s is on %s, not on %s with %s: one move takes what is on one server", name, why, s.nodeDisplay(d.Node), s.nodeDisplay(source), sourceOf)
		}
		if d.Node == target {
			return api.Conflict("drive %q is on %s already", name, s.nodeDisplay(target))
		}
		if s.DriveRestoring(name) {
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

	src, srcOK := s.Cluster.Driver.Node(source)
	dst, dstOK := s.Cluster.Driver.Node(target)
	from, fromOK := src.(driver.SnapshotShipper)
	into, intoOK := dst.(driver.SnapshotShipper)
	if !srcOK || !dstOK || !fromOK || !intoOK {
		return nil, api.Conflict("the servers' agents cannot ship snapshots (an older paddockd?)")
	}
	mv := store.Move{Source: source, Target: target, Boxes: boxNames(boxes), Drives: driveNames, Started: s.now()}
	for _, b := range boxes {
		if b.Desired == "running" {
			mv.Running = append(mv.Running, b.Name)
		}
	}
	if mv.ID, err = s.Store.AddMove(mv); err != nil {
		return nil, err
	}
	fail := func(cause error) ([]api.Box, error) {
		s.undoMove(context.WithoutCancel(ctx), mv, dst)
		return nil, s.moveFailed(context.WithoutCancel(ctx), mv, cause)
	}
	// Each box stopped, and its filesystem as it is then, which is what it
	// is made from from now on (where it is, until the switch).
	moveSnap := map[string]string{}
	for _, b := range boxes {
		if b.Desired == "running" {
			if _, err := s.StopBox(ctx, b.Name, "move"); err != nil {
				return fail(fmt.Errorf("stopping %s to move it: %w", b.Name, err))
			}
		}
		sn, err := s.Snapshot(ctx, b.Name)
		if err == nil && sn.State != "ready" {
			err = fmt.Errorf("its snapshot %s is %s: %s", sn.ID, sn.State, sn.Error)
		}
		if err != nil {
			return fail(fmt.Errorf("the snapshot to move %s: %w", b.Name, err))
		}
		moveSnap[b.Name] = sn.ID
		if err := s.Store.Declare(func(tx *store.Tx) error { return tx.MoveBox(b.Name, b.Node, b.IP, sn.ID, nil) }); err != nil {
			return fail(err)
		}
	}
	snaps := map[string][]string{}
	for _, b := range boxes {
		list, err := s.Store.ListSnapshots(b.Name)
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
	if err := s.Store.SetMoveSnaps(mv.ID, mv.Snaps); err != nil {
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
		if err := s.shipVolume(ctx, src, dst, data); err != nil {
			return fail(fmt.Errorf("shipping %s's /var/lib/docker to %s: %w", b.Name, to, err))
		}
	}
	for _, n := range driveNames {
		if err := s.shipVolume(ctx, src, dst, driver.VolumeRef{Kind: driver.KindDrive, Name: n}); err != nil {
			return fail(fmt.Errorf("shipping drive %s to %s: %w", n, to, err))
		}
	}

	// The switch.
	err = s.Rec.Hold(func() error {
		for _, b := range boxes {
			if err := src.RemoveBox(ctx, b.Key()); err != nil && !errors.Is(err, driver.ErrNotFound) {
				return fmt.Errorf("removing %s's container from %s: %w", b.Name, s.nodeDisplay(source), err)
			}
		}
		return s.Store.Declare(func(tx *store.Tx) error {
			for _, b := range boxes {
				nb := b
				nb.Node, nb.IP = target, ""
				if err := s.address(tx, &nb, ns); err != nil {
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
	s.finishMove(context.WithoutCancel(ctx), mv, src)
	s.Log.Info("moved", "boxes", mv.Boxes, "drives", mv.Drives, "from", s.nodeDisplay(source), "to", s.nodeDisplay(target), "snapshots", len(mv.Snaps))
	out := make([]api.Box, 0, len(boxes))
	var startErr error
	for _, b := range boxes {
		var ab api.Box
		var err error
		if slices.Contains(mv.Running, b.Name) {
			ab, err = s.StartBox(ctx, b.Name)
		} else {
			ab, err = s.settle(ctx, b.Name, nil, "box."+b.Name)
		}
		startErr = errors.Join(startErr, err)
		out = append(out, ab)
	}
	if startErr == nil {
		s.Store.DoneMove(mv.ID)
	}
	return out, startErr
}

// MoveDrive moves a drive, and the boxes with (which must be all those
// that mount it), to server to (MoveBoxes).
func (s *Service) MoveDrive(ctx context.Context, name string, with []string, to string) (api.Drive, error) {
	if _, err := s.getDrive(ctx, name); err != nil {
		return api.Drive{}, err // another user's drive is no drive of theirs
	}
	if _, err := s.MoveBoxes(ctx, with, []string{name}, to); err != nil {
		return api.Drive{}, err
	}
	return s.getDrive(ctx, name)
}

func boxNames(bs []store.Box) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Name
	}
	return out
}

// shipVolume makes volume v on dst and fills it with what it holds on src.
func (s *Service) shipVolume(ctx context.Context, src, dst driver.Driver, v driver.VolumeRef) error {
	if err := dst.CreateVolume(ctx, v); err != nil {
		return err
	}
	return ship(ctx, func(ctx context.Context) (io.ReadCloser, error) { return src.ReadVolume(ctx, v, s.Cfg.Image) },
		func(ctx context.Context, r io.Reader) error { return dst.WriteVolume(ctx, v, s.Cfg.Image, r) })
}

// undoMove removes what move mv shipped to dst, its target, before its
// switch: the snapshots' images and the volumes, of the boxes and drives
// still declared elsewhere (never what the target holds as its own).
func (s *Service) undoMove(ctx context.Context, mv store.Move, dst driver.Driver) {
	for _, id := range mv.Snaps {
		if n, err := s.Store.Where("snapshot", id); err == nil && n == mv.Target {
			continue
		}
		if err := dst.RemoveSnapshot(ctx, id); err != nil && !errors.Is(err, driver.ErrNotFound) {
			s.Log.Warn("move undone: a snapshot's copy on the target", "snapshot", id, "node", s.nodeDisplay(mv.Target), "err", err)
		}
	}
	for _, name := range mv.Boxes {
		b, err := s.Store.GetBox(name)
		if err != nil || b.Node == mv.Target {
			continue
		}
		if err := dst.RemoveVolume(ctx, driver.VolumeRef{Kind: driver.KindBoxData, Name: b.Key()}); err != nil && !errors.Is(err, driver.ErrNotFound) {
			s.Log.Warn("move undone: a box's data on the target", "box", name, "node", s.nodeDisplay(mv.Target), "err", err)
		}
	}
	for _, name := range mv.Drives {
		d, err := s.Store.GetDrive(name)
		if err != nil || d.Node == mv.Target {
			continue
		}
		if err := dst.RemoveVolume(ctx, driver.VolumeRef{Kind: driver.KindDrive, Name: name}); err != nil && !errors.Is(err, driver.ErrNotFound) {
			s.Log.Warn("move undone: a drive's copy on the target", "drive", name, "node", s.nodeDisplay(mv.Target), "err", err)
		}
	}
}

// finishMove removes what stays on the server move mv left, after its
// switch: the boxes' containers, their /var/lib/docker, the snapshots'
// copies and the drives' volumes.
func (s *Service) finishMove(ctx context.Context, mv store.Move, src driver.Driver) {
	warn := func(what string, err error) {
		if err != nil && !errors.Is(err, driver.ErrNotFound) {
			s.Log.Warn("move: "+what+" left on the old server", "node", s.nodeDisplay(mv.Source), "err", err)
		}
	}
	for _, name := range mv.Boxes {
		b, err := s.Store.GetBox(name)
		if err != nil || b.Node != mv.Target {
			continue
		}
		warn("the container of "+name, src.RemoveBox(ctx, b.Key()))
		warn("the /var/lib/docker of "+name, src.RemoveVolume(ctx, driver.VolumeRef{Kind: driver.KindBoxData, Name: b.Key()}))
	}
	for _, id := range mv.Snaps {
		if n, err := s.Store.Where("snapshot", id); err == nil && n == mv.Target {
			warn("snapshot "+id, src.RemoveSnapshot(ctx, id))
		}
	}
	for _, name := range mv.Drives {
		if d, err := s.Store.GetDrive(name); err == nil && d.Node == mv.Target {
			warn("drive "+name, src.RemoveVolume(ctx, driver.VolumeRef{Kind: driver.KindDrive, Name: name}))
		}
	}
}

// moveFailed starts again the boxes that ran before their move failed,
// forgets the move, and says what failed and that nothing moved.
func (s *Service) moveFailed(ctx context.Context, mv store.Move, cause error) error {
	var starts []string
	for _, name := range mv.Running {
		if _, err := s.StartBox(ctx, name); err != nil {
			starts = append(starts, fmt.Sprintf("starting %s again where it was failed: %v", name, err))
		}
	}
	if len(starts) > 0 {
		return fmt.Errorf("%w; nothing moved, and %s", cause, strings.Join(starts, "; "))
	}
	s.Store.DoneMove(mv.ID)
	what := append(slices.Clone(mv.Boxes), mv.Drives...)
	if len(what) == 1 {
		return fmt.Errorf("%w; nothing moved: %s is where it was", cause, what[0])
	}
	return fmt.Errorf("%w; nothing moved: %s are where they were", cause, strings.Join(what, ", "))
}

// RecoverMoves ends the moves a previous run of paddockd left under way:
// one that had switched is finished, one that had not is undone; the
// boxes that ran before it are started. A move whose servers do not
// answer stays listed, for the next start.
func (s *Service) RecoverMoves(ctx context.Context) {
	if s.Cluster == nil {
		return
	}
	mvs, err := s.Store.Moves()
	if err != nil {
		s.Log.Error("moves under way", "err", err)
		return
	}
	for _, mv := range mvs {
		switched := false
		if len(mv.Boxes) > 0 {
			b, err := s.Store.GetBox(mv.Boxes[0])
			switched = err == nil && b.Node == mv.Target
		} else if len(mv.Drives) > 0 {
			d, err := s.Store.GetDrive(mv.Drives[0])
			switched = err == nil && d.Node == mv.Target
		}
		src, srcOK := s.Cluster.Driver.Node(mv.Source)
		dst, dstOK := s.Cluster.Driver.Node(mv.Target)
		if !srcOK || !dstOK {
			s.Log.Warn("a move under way between servers this Paddock no longer has: forgotten", "boxes", mv.Boxes, "drives", mv.Drives)
			s.Store.DoneMove(mv.ID)
			continue
		}
		if switched {
			s.finishMove(ctx, mv, src)
		} else {
			s.undoMove(ctx, mv, dst)
		}
		var failed error
		for _, name := range mv.Running {
			if _, err := s.StartBox(ctx, name); err != nil && !api.IsNotFound(err) {
				failed = errors.Join(failed, err)
			}
		}
		if failed != nil {
			s.Log.Warn("a move cut off by the last stop: its boxes do not start yet", "boxes", mv.Running, "err", failed)
			continue
		}
		s.Log.Info("a move cut off by the last stop", "boxes", mv.Boxes, "drives", mv.Drives, "finished", switched, "undone", !switched,
			"from", s.nodeDisplay(mv.Source), "to", s.nodeDisplay(mv.Target), "started", mv.Started)
		s.Store.DoneMove(mv.ID)
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

// forkOnto forks box src onto server p.Node (the owner's): the fork is
// made where its snapshot is, then moved there (MoveBox) when that is
// another server. A fork mounts its box's drives, so it goes where they
// are: another server is refused before anything is made.
func (s *Service) forkOnto(ctx context.Context, src store.Box, p api.ForkPost) (api.Box, error) {
	if err := requireOwner(ctx, "fork onto a chosen server"); err != nil {
		return api.Box{}, err
	}
	ns, err := s.Store.ListNodes()
	if err != nil {
		return api.Box{}, err
	}
	if s.Cluster == nil || len(ns) == 0 {
		return api.Box{}, api.Invalid("node", "this Paddock has one server: a fork is made on it (leave out the server)")
	}
	target, err := s.wanted(p.Node, ns)
	if err != nil {
		return api.Box{}, err
	}
	at := src.Node // a snapshot taken now is where the box is
	if p.Snapshot != "" {
		if n, err := s.Store.Where("snapshot", p.Snapshot); err == nil {
			at = n
		}
	}
	if len(src.Mounts) > 0 && target != at {
		return api.Box{}, api.Invalid("node", "box %q mounts drives (%s, …) on %s: its fork mounts them too, and is made there, not on %s", src.Name, src.Mounts[0].Drive, s.nodeDisplay(at), p.Node)
	}
	q := p
	q.Node = ""
	fb, err := s.Fork(ctx, src.Name, q)
	if err != nil || target == at {
		return fb, err
	}
	moved, err := s.MoveBox(ctx, fb.Name, p.Node)
	if err != nil {
		return fb, fmt.Errorf("the fork %s was made on %s, where its snapshot is; moving it to %s failed: %w", fb.Name, s.nodeDisplay(at), p.Node, err)
	}
	return moved, nil
}
