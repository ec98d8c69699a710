package nodes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Lost is 'paddock node lost NODE' (the owner's): the owner says a server
// is gone for good (its disk, or the machine), and what it held is
// declared on the servers that are left, in one transaction, while no
// reconcile pass runs:
//
//   - each box goes where a new box of its labels would go, with the other
//     boxes that share a drive with it, and is made there (and started if
//     it was declared running) from its newest snapshot in the object
//     store, fetched from there; a box with no shipped snapshot is made
//     from its image. Its note, and the answer, say from which snapshot
//     and when it was taken, and that what it wrote after is lost;
//   - its drives are declared again, empty, where their boxes went: a
//     drive of a server's own disk is lost with it, and is named;
//   - its snapshots that never reached the store are lost, and forgotten
//     (named); the shipped ones stay, fetched where they are needed;
//   - its pool boxes and removed boxes' leftovers are forgotten.
//
// Then the server is forgotten as 'node rm' forgets one: out of the swarm,
// its certificate worth nothing, so that if it comes back it touches none
// of the boxes made again elsewhere; it joins again with a new token.
//
// A server that answers is not lost: it is refused, with the drain that
// moves what it holds instead.
func (nd *Nodes) Lost(ctx context.Context, name string) (api.NodeLost, error) {
	out := api.NodeLost{Node: name, Boxes: []api.LostBox{}, Drives: []api.MovedBox{}, Snapshots: []string{}}
	if err := caller.RequireOwner(ctx, "declare servers lost"); err != nil {
		return out, err
	}
	if name == nd.core.LocalNodeName() {
		return out, api.Invalid("name", "%s is the control plane's own server: it cannot be declared lost from itself", name)
	}
	if _, err := nd.store.GetNode(name); errors.Is(err, store.ErrNotFound) {
		return out, api.NotFound("node", name)
	} else if err != nil {
		return out, err
	}
	if nd.cluster == nil {
		return out, api.Conflict("this Paddock has one server")
	}
	nd.core.LookAtNodes(ctx)
	if seen, ok := nd.cluster.LastSeen(name); !ok || seen.Err == nil {
		return out, api.Conflict("server %s answers: it is not lost ('paddock node drain %s' moves what it holds, with every file)", name, name)
	}
	// No new box nor pool box goes there from now on, whatever follows.
	if err := nd.store.SetNodeDrained(name, true); err != nil {
		return out, err
	}
	now := nd.core.Time().UTC()
	err := nd.rec.Hold(func() error {
		return nd.store.Declare(func(tx *store.Tx) error {
			out = api.NodeLost{Node: name, Boxes: []api.LostBox{}, Drives: []api.MovedBox{}, Snapshots: []string{}}
			ns, err := tx.ListNodes()
			if err != nil {
				return err
			}
			boxes, err := tx.ListBoxes()
			if err != nil {
				return err
			}
			drives, err := tx.ListDrives()
			if err != nil {
				return err
			}
			for _, g := range moveGroups(boxes, drives, name) {
				labels := map[string]string{}
				for _, b := range g.boxes {
					for k, v := range b.NodeLabels {
						labels[k] = v
					}
				}
				to, err := nd.core.Roomiest(tx, ns, labels)
				unlabelled := ""
				if err != nil && len(labels) > 0 {
					// No server left has their labels: they come back
					// on one without, rather than not at all.
					to, err = nd.core.Roomiest(tx, ns, nil)
					unlabelled = fmt.Sprintf("; no server left has its labels (%v): it is on one without", labels)
				}
				if err != nil {
					return fmt.Errorf("no server left for %s: %w", strings.Join(append(boxNames(g.boxes), g.drives...), ", "), err)
				}
				for _, d := range g.drives {
					if err := tx.SetDriveNode(d, to); err != nil {
						return err
					}
					out.Drives = append(out.Drives, api.MovedBox{Drive: d, To: nd.core.NodeDisplay(to)})
				}
				for _, b := range g.boxes {
					why := fmt.Sprintf("its server %s was declared lost at %s", name, now.Format(time.RFC3339))
					lb, err := nd.relocate(tx, b, name, to, ns, g.drives, why, unlabelled)
					if err != nil {
						return fmt.Errorf("%s: %w", b.Name, err)
					}
					out.Boxes = append(out.Boxes, lb)
				}
			}
			out.Snapshots, err = tx.LoseNode(name)
			return err
		})
	})
	if err != nil {
		return out, err
	}
	nd.log.Warn("node lost: its boxes are made again elsewhere", "node", name, "boxes", len(out.Boxes), "drives", len(out.Drives), "lost_snapshots", out.Snapshots)
	if err := nd.forget(ctx, name); err != nil {
		return out, err
	}
	nd.core.NotePoolChange()
	if _, err := nd.rec.Run(ctx); err != nil {
		nd.log.Warn("the pass after a server was lost", "err", err)
	}
	return out, nil
}

// relocate declares box b, of server from (lost, or down), on server to
// (why says which, in its note): made from
// its newest shipped snapshot (or the snapshot it was made from, when
// that survives, or its image), with a note that says what is lost (and
// also, when there is more to say).
func (nd *Nodes) relocate(tx *store.Tx, b store.Box, from, to string, ns []store.Node, drives []string, why, also string) (api.LostBox, error) {
	snaps, err := tx.ListSnapshots(b.Name)
	if err != nil {
		return api.LostBox{}, err
	}
	var newest *store.Snapshot
	var carried []string   // its shipped snapshots: on the new server from now on
	for i := range snaps { // oldest first
		if snaps[i].State == "ready" && snaps[i].Shipped == "shipped" {
			newest = &snaps[i]
			if snaps[i].Node == from {
				carried = append(carried, snaps[i].ID)
			}
		}
	}
	if newest != nil && !slices.Contains(carried, newest.ID) {
		carried = append(carried, newest.ID) // fetched there from the store
	}
	lb := api.LostBox{Box: b.Name, To: nd.core.NodeDisplay(to)}
	fromID := ""
	switch {
	case newest != nil:
		fromID = newest.ID
		taken := newest.Created.UTC()
		lb.From, lb.Taken = newest.ID, &taken
		lb.Lost = fmt.Sprintf("what it wrote after snapshot %s, taken %s, is lost", newest.ID, taken.Format(time.RFC3339))
	case b.From != "":
		// Made from another box's snapshot: it stands in where it
		// survives (in the store, or on a server that is left).
		if sn, err := tx.GetSnapshot(b.From); err == nil && (sn.Shipped == "shipped" || sn.Node != from) {
			fromID = sn.ID
			lb.Lost = fmt.Sprintf("none of its own snapshots was in the object store: everything it wrote since it was made from snapshot %s is lost", sn.ID)
			break
		}
		fallthrough
	default:
		lb.Lost = "none of its snapshots was in the object store: everything it held is lost"
	}
	var gone []string
	for _, m := range b.Mounts {
		for _, d := range drives {
			if m.Drive == d {
				gone = append(gone, d)
			}
		}
	}
	if len(gone) > 0 {
		lb.Lost += fmt.Sprintf("; drive(s) %s were on that server: they are empty", strings.Join(gone, ", "))
	}
	lb.Lost += also
	cur, err := tx.GetBox(b.Name)
	if err != nil {
		return lb, err
	}
	cur.Note = fmt.Sprintf("%s: made again on %s; %s", why, lb.To, lb.Lost)
	if err := tx.UpdateBox(cur); err != nil {
		return lb, err
	}
	nb := b
	nb.Node, nb.IP = to, ""
	if err := nd.core.Address(tx, &nb, ns); err != nil {
		return lb, err
	}
	return lb, tx.MoveBox(b.Name, to, nb.IP, fromID, carried)
}

// StartElsewhere is 'paddock start BOX --node N' (the owner's): a box
// whose server is down is made on server to from its newest snapshot in
// the object store, and started, as 'node lost' makes each box of a lost
// server (relocate): its note says from which snapshot, and that what it
// wrote after is lost. Its server is not forgotten: the move is written
// down (store.Move), and once that server answers again its container,
// its /var/lib/docker and the snapshot copies there are removed
// (FinishMoves), so the box never runs twice. A box that mounts drives is
// refused (they are on the down server: 'node lost' declares them again,
// empty), and so is one whose server answers ('paddock move' takes every
// file).
func (nd *Nodes) StartElsewhere(ctx context.Context, name, to string) (api.Box, error) {
	if err := caller.RequireOwner(ctx, "start boxes on another server"); err != nil {
		return api.Box{}, err
	}
	ns, err := nd.store.ListNodes()
	if err != nil {
		return api.Box{}, err
	}
	if nd.cluster == nil || len(ns) == 0 {
		return api.Box{}, api.Conflict("this Paddock has one server: there is nowhere else to start a box")
	}
	b, err := nd.store.GetBox(name)
	if errors.Is(err, store.ErrNotFound) {
		return api.Box{}, api.NotFound("box", name)
	} else if err != nil {
		return api.Box{}, err
	}
	source := b.Node
	nd.core.LookAtNodes(ctx)
	if seen, ok := nd.cluster.LastSeen(source); !ok || seen.Err == nil {
		return api.Box{}, api.Conflict("%s's server %s answers: 'paddock move %s --to %s' moves it with every file", name, nd.core.NodeDisplay(source), name, to)
	}
	if len(b.Mounts) > 0 {
		var ds []string
		for _, m := range b.Mounts {
			ds = append(ds, m.Drive)
		}
		return api.Box{}, api.Conflict("%s mounts drive(s) %s, on server %s, which is down: wait for it, or declare it lost ('paddock node lost %s': they are declared again, empty)",
			name, strings.Join(ds, ", "), nd.core.NodeDisplay(source), source)
	}
	target, err := nd.core.Wanted(to, ns)
	if err != nil {
		return api.Box{}, err
	}
	if target == source {
		return api.Box{}, api.Invalid("node", "%s is %s's own server", to, name)
	}
	// Its shipped snapshots go with it (relocate): their copies on its
	// server are the move's, removed with its container.
	snaps, err := nd.store.ListSnapshots(name)
	if err != nil {
		return api.Box{}, err
	}
	var carried []string
	shipped := false
	for _, sn := range snaps {
		if sn.State == "ready" && sn.Shipped == "shipped" {
			shipped = true
			if sn.Node == source {
				carried = append(carried, sn.ID)
			}
		}
	}
	if !shipped {
		return api.Box{}, api.Conflict("no snapshot of %s is in the object store: elsewhere it could only be made from its image, empty; wait for server %s, or declare it lost ('paddock node lost %s')",
			name, nd.core.NodeDisplay(source), source)
	}
	mv := store.Move{Source: source, Target: target, Boxes: []string{name}, Snaps: carried, Started: nd.core.Time()}
	if mv.ID, err = nd.store.AddMove(mv); err != nil {
		return api.Box{}, err
	}
	var lb api.LostBox
	err = nd.rec.Hold(func() error {
		return nd.store.Declare(func(tx *store.Tx) error {
			cur, err := tx.GetBox(name)
			if err != nil {
				return err
			}
			if cur.Node != source {
				return api.Conflict("%s moved meanwhile", name)
			}
			why := fmt.Sprintf("its server %s was down at %s", nd.core.NodeDisplay(source), nd.core.Time().UTC().Format(time.RFC3339))
			lb, err = nd.relocate(tx, cur, source, target, ns, nil, why, "")
			return err
		})
	})
	if err != nil {
		nd.store.DoneMove(mv.ID)
		return api.Box{}, err
	}
	nd.finishLater(mv.ID)
	nd.log.Warn("box made again on another server while its own is down", "box", name, "from", nd.core.NodeDisplay(source), "to", lb.To, "snapshot", lb.From, "lost", lb.Lost)
	return nd.core.StartBox(ctx, name)
}

// finishLater has FinishMoves finish move id once its source answers.
func (nd *Nodes) finishLater(id int64) {
	nd.pendingMu.Lock()
	defer nd.pendingMu.Unlock()
	if nd.pending == nil {
		nd.pending = map[int64]bool{}
	}
	nd.pending[id] = true
}

// FinishMoves finishes the moves that switched while their source was
// down (StartElsewhere, and those Recover found so), once it answers:
// what the box left there is removed. Run every few seconds.
func (nd *Nodes) FinishMoves(ctx context.Context) {
	nd.pendingMu.Lock()
	ids := maps.Clone(nd.pending)
	nd.pendingMu.Unlock()
	if len(ids) == 0 || nd.cluster == nil {
		return
	}
	mvs, err := nd.store.Moves()
	if err != nil {
		nd.log.Error("moves under way", "err", err)
		return
	}
	for _, mv := range mvs {
		if !ids[mv.ID] {
			continue
		}
		if seen, ok := nd.cluster.LastSeen(mv.Source); ok && seen.Err != nil {
			continue // still down
		}
		if src, ok := nd.cluster.Driver.Node(mv.Source); ok {
			nd.finishMove(ctx, mv, src)
			nd.log.Info("a box made elsewhere while its server was down: what it left there is removed", "boxes", mv.Boxes, "node", nd.core.NodeDisplay(mv.Source))
		}
		nd.store.DoneMove(mv.ID)
		nd.pendingMu.Lock()
		delete(nd.pending, mv.ID)
		nd.pendingMu.Unlock()
	}
}
