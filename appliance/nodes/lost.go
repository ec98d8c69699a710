package nodes

import (
	"context"
	"errors"
	"fmt"
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
		out = api.NodeLost{Node: name, Boxes: []api.LostBox{}, Drives: []api.MovedBox{}, Snapshots: []string{}}
		return nd.store.Declare(func(tx *store.Tx) error {
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
					lb, err := nd.relocate(tx, b, name, to, ns, g.drives, now, unlabelled)
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

// relocate declares box b, of lost server from, on server to: made from
// its newest shipped snapshot (or the snapshot it was made from, when
// that survives, or its image), with a note that says what is lost (and
// also, when there is more to say).
func (nd *Nodes) relocate(tx *store.Tx, b store.Box, from, to string, ns []store.Node, drives []string, now time.Time, also string) (api.LostBox, error) {
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
	cur.Note = fmt.Sprintf("its server %s was declared lost at %s: made again on %s; %s", from, now.Format(time.RFC3339), lb.To, lb.Lost)
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
