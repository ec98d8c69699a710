package nodes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/store"
)

// List lists the servers (the owner's): the control plane's own first.
func (nd *Nodes) List(ctx context.Context) ([]api.Node, error) {
	if err := caller.RequireOwner(ctx, "list servers"); err != nil {
		return nil, err
	}
	nd.core.LookAtNodes(ctx)
	return nd.list()
}

// list is the servers as the last look saw them.
func (nd *Nodes) list() ([]api.Node, error) {
	ns, err := nd.store.ListNodes()
	if err != nil {
		return nil, err
	}
	all := []store.Node{{Name: "", Subnet: nd.subnet.String(), Labels: map[string]string{}}}
	all = append(all, ns...)
	own, err := nd.store.NodePools()
	if err != nil {
		return nil, err
	}
	var out []api.Node
	for _, n := range all {
		boxes, pool, drives, _, err := nd.store.NodeObjects(n.Name)
		if err != nil {
			return nil, err
		}
		an := api.Node{Name: n.Name, Addr: n.Addr, Subnet: n.Subnet, Labels: n.Labels, Joined: n.Joined, Drained: n.Drained,
			Boxes: boxes, Pool: pool, OwnPool: own[n.Name], Drives: drives, State: "up"}
		if n.Name == "" {
			an.Name, an.ControlPlane = nd.core.LocalNodeName(), true
		}
		if nd.cluster != nil {
			if seen, ok := nd.cluster.LastSeen(n.Name); ok {
				an.SwarmID, an.SwarmState = seen.SwarmID, seen.SwarmState
				if seen.Err != nil {
					an.State, an.Error = "down", seen.Err.Error()
				} else {
					i := seen.Info
					an.CPUs, an.MemoryBytes, _ = seen.Capacity()
					an.MemoryFree, an.DiskBytes, an.DiskFree = min(i.MemoryFree, an.MemoryBytes), i.DiskBytes, i.DiskFree
					an.Routes = i.Routes
				}
			}
		}
		out = append(out, an)
	}
	return out, nil
}

// named is one server as nodeList shows it.
func (nd *Nodes) named(name string) (api.Node, error) {
	ns, err := nd.list()
	if err != nil {
		return api.Node{}, err
	}
	for _, n := range ns {
		if n.Name == name {
			return n, nil
		}
	}
	return api.Node{}, api.NotFound("node", name)
}

// Label replaces a server's labels (the owner's).
func (nd *Nodes) Label(ctx context.Context, name string, labels map[string]string) (api.Node, error) {
	if err := caller.RequireOwner(ctx, "label servers"); err != nil {
		return api.Node{}, err
	}
	for k, v := range labels {
		if err := api.ValidNodeLabel(k, v); err != nil {
			return api.Node{}, err
		}
	}
	if name == nd.core.LocalNodeName() {
		return api.Node{}, api.Invalid("name", "the control plane's own server has no labels yet: label the servers that joined")
	}
	if _, err := nd.store.GetNode(name); errors.Is(err, store.ErrNotFound) {
		return api.Node{}, api.NotFound("node", name)
	} else if err != nil {
		return api.Node{}, err
	}
	// The swarm keeps them (as paddock.KEY on its node), then this store,
	// which placement reads.
	nd.core.LookAtNodes(ctx)
	if c := nd.cluster; c != nil && c.Swarm != nil {
		seen, _ := c.LastSeen(name)
		if seen.SwarmID == "" {
			return api.Node{}, api.Conflict("server %s is not in the swarm, which keeps the labels: %v", name, seen.Err)
		}
		if err := c.Swarm.SwarmLabel(ctx, seen.SwarmID, labels); err != nil {
			return api.Node{}, fmt.Errorf("labelling %s in the swarm: %w", name, err)
		}
	}
	if err := nd.store.SetNodeLabels(name, labels); errors.Is(err, store.ErrNotFound) {
		return api.Node{}, api.NotFound("node", name)
	} else if err != nil {
		return api.Node{}, err
	}
	return nd.named(name)
}

// SetPool replaces a server's own warm pool (the owner's): how many
// ready boxes of each type are kept on that server, beside those
// warm_pool keeps wherever there is most room. A box asked for on that
// server ('new --node') or with labels only it has is then claimed from
// it. A type given 0 keeps none there. A drained or down server keeps its
// pool once it takes boxes again.
func (nd *Nodes) SetPool(ctx context.Context, name string, pool map[string]int) (api.Node, error) {
	if err := caller.RequireOwner(ctx, "set a server's warm pool"); err != nil {
		return api.Node{}, err
	}
	for _, t := range slices.Sorted(maps.Keys(pool)) {
		if _, ok := nd.cfg.Types[t]; !ok {
			return api.Node{}, api.Invalid("pool", "no box type %q: the types are %s", t, strings.Join(slices.Sorted(maps.Keys(nd.cfg.Types)), ", "))
		}
		if n := pool[t]; n < 0 || n > config.MaxWarmPool {
			return api.Node{}, api.Invalid("pool", "%s=%d: give a count from 0 to %d", t, n, config.MaxWarmPool)
		}
	}
	node := name
	if name == nd.core.LocalNodeName() {
		node = ""
	} else if _, err := nd.store.GetNode(name); errors.Is(err, store.ErrNotFound) {
		return api.Node{}, api.NotFound("node", name)
	} else if err != nil {
		return api.Node{}, err
	}
	if err := nd.store.SetNodePool(node, pool); err != nil {
		return api.Node{}, err
	}
	nd.core.NotePoolChange()
	return nd.named(name)
}

// dropPool removes the pool boxes of a server (the pool is made again
// where boxes may go).
func (nd *Nodes) dropPool(ctx context.Context, node string) error {
	if err := nd.store.Declare(func(tx *store.Tx) error {
		ps, err := tx.ListPool()
		if err != nil {
			return err
		}
		for _, p := range ps {
			if p.Node == node {
				if err := tx.RemovePool(p.Key); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		return err
	}
	_, err := nd.rec.Run(ctx)
	return err
}

// Drain empties a server (the owner's): no new box goes there from
// now on, its pool boxes go, and its boxes and drives move (MoveBoxes) to
// the server a new box of their labels would go to: each box with the
// drives it mounts and the other boxes that mount them, in one move, and
// each drive no box mounts alone. What cannot move (labels no other
// server has) stays, and is named in the error; the rest has moved by
// then. 'paddock node undrain' takes boxes there again.
func (nd *Nodes) Drain(ctx context.Context, name string) (api.Drained, error) {
	if err := caller.RequireOwner(ctx, "drain servers"); err != nil {
		return api.Drained{}, err
	}
	if name == nd.core.LocalNodeName() {
		return api.Drained{}, api.Invalid("name", "%s is the control plane's own server: it is not drained", name)
	}
	if err := nd.store.SetNodeDrained(name, true); errors.Is(err, store.ErrNotFound) {
		return api.Drained{}, api.NotFound("node", name)
	} else if err != nil {
		return api.Drained{}, err
	}
	out := api.Drained{Node: name}
	if err := nd.dropPool(ctx, name); err != nil {
		return out, err
	}
	boxes, err := nd.store.ListBoxes()
	if err != nil {
		return out, err
	}
	drives, err := nd.store.ListDrives()
	if err != nil {
		return out, err
	}
	var stuck []string
	for _, g := range moveGroups(boxes, drives, name) {
		labels := map[string]string{}
		for _, b := range g.boxes {
			for k, v := range b.NodeLabels {
				labels[k] = v
			}
		}
		var to string
		err := nd.store.Declare(func(tx *store.Tx) error {
			ns, err := tx.ListNodes()
			if err != nil {
				return err
			}
			to, err = nd.core.Roomiest(tx, ns, labels)
			return err
		})
		if err == nil {
			_, err = nd.MoveBoxes(ctx, boxNames(g.boxes), g.drives, nd.core.NodeDisplay(to))
		}
		what := strings.Join(append(boxNames(g.boxes), g.drives...), ", ")
		if err != nil {
			stuck = append(stuck, fmt.Sprintf("%s (%v)", what, err))
			continue
		}
		for _, b := range g.boxes {
			out.Moved = append(out.Moved, api.MovedBox{Box: b.Name, To: nd.core.NodeDisplay(to)})
		}
		for _, d := range g.drives {
			out.Moved = append(out.Moved, api.MovedBox{Drive: d, To: nd.core.NodeDisplay(to)})
		}
	}
	if len(stuck) > 0 {
		return out, api.Conflict("server %s is drained, but %d move(s) failed, and what they would move stays on it: %s", name, len(stuck), strings.Join(stuck, "; "))
	}
	nd.log.Info("node drained", "node", name, "moved", len(out.Moved))
	return out, nil
}

// Undrain lets new boxes go to a drained server again (the owner's).
func (nd *Nodes) Undrain(ctx context.Context, name string) error {
	if err := caller.RequireOwner(ctx, "undrain servers"); err != nil {
		return err
	}
	if err := nd.store.SetNodeDrained(name, false); errors.Is(err, store.ErrNotFound) {
		return api.NotFound("node", name)
	} else if err != nil {
		return err
	}
	nd.core.NotePoolChange()
	return nil
}

// Remove forgets a server that holds nothing (the owner's): its boxes,
// pool boxes, drives and snapshots must be gone first. Its agent is no
// longer called; to join again it needs a new token.
func (nd *Nodes) Remove(ctx context.Context, name string) error {
	if err := caller.RequireOwner(ctx, "remove servers"); err != nil {
		return err
	}
	if name == nd.core.LocalNodeName() {
		return api.Invalid("name", "%s is the control plane's own server", name)
	}
	if _, err := nd.store.GetNode(name); errors.Is(err, store.ErrNotFound) {
		return api.NotFound("node", name)
	} else if err != nil {
		return err
	}
	boxes, pool, drives, snaps, err := nd.store.NodeObjects(name)
	if err != nil {
		return err
	}
	// What was removed a moment ago may be on the server until the next
	// reconcile passes (a box's snapshot goes in the pass after its
	// container): those passes are run before the server is refused.
	for i := 0; i < 3 && boxes+drives+snaps > 0; i++ {
		if n, err := nd.store.NodeTombstones(name); err != nil || n == 0 {
			break
		}
		if _, err := nd.rec.Run(ctx); err != nil {
			return err
		}
		if boxes, pool, drives, snaps, err = nd.store.NodeObjects(name); err != nil {
			return err
		}
	}
	if boxes+drives+snaps > 0 {
		return api.Conflict("server %s still holds %d box(es), %d drive(s) and %d snapshot(s): move them first ('paddock node drain %s')", name, boxes, drives, snaps, name)
	}
	if pool > 0 {
		// Pool boxes are the server's to make again: they go with it.
		if err := nd.dropPool(ctx, name); err != nil {
			return err
		}
	}
	if err := nd.forget(ctx, name); err != nil {
		return err
	}
	nd.log.Info("node removed", "node", name)
	return nil
}

// forget forgets a server (Remove, Lost): it is told to leave, out of the
// swarm, and out of the state and the cluster's drivers.
func (nd *Nodes) forget(ctx context.Context, name string) error {
	// The server leaves by itself when it answers: its engine out of the
	// swarm, its join forgotten, its agent stopped (for good, under
	// paddock-node.service). One that does not answer is forgotten all
	// the same; it is then told to leave on its own side (logged).
	if c := nd.cluster; c != nil {
		d, _ := c.Driver.Node(name)
		if l, ok := d.(interface{ Leave(context.Context) error }); ok {
			err := c.Down(name)
			if err == nil {
				lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err = l.Leave(lctx)
				cancel()
			}
			if err != nil {
				nd.log.Warn("a removed server did not leave by itself: on it, run 'docker swarm leave', stop paddock-node.service and remove /var/lib/paddock/node", "node", name, "err", err)
			}
		}
	}
	// Out of the swarm first: a server the swarm still has is not
	// forgotten. Every swarm node at its address goes (one that left the
	// swarm and joined again by hand is there twice: the old one down).
	if c := nd.cluster; c != nil && c.Swarm != nil {
		n, err := nd.store.GetNode(name)
		if err != nil {
			return err
		}
		host, _, _ := net.SplitHostPort(n.Addr)
		// A swarm that does not answer (or a control plane that manages
		// none) keeps no one from being forgotten: it is logged.
		sns, err := c.Swarm.SwarmNodes(ctx)
		if err != nil {
			nd.log.Warn("removing a server: the swarm does not answer; its entry, if any, stays in 'docker node ls'", "node", name, "err", err)
		}
		for _, sn := range sns {
			if sn.Addr == host {
				if err := c.Swarm.SwarmRemove(ctx, sn.ID); err != nil {
					return fmt.Errorf("taking %s out of the swarm: %w", name, err)
				}
			}
		}
	}
	if err := nd.store.RemoveNode(name); err != nil {
		return err
	}
	if nd.cluster != nil {
		nd.cluster.Driver.RemoveNode(name)
		nd.cluster.Firewall.RemoveNode(name)
	}
	return nil
}

// moveGroup is what moves in one go when a server is drained: boxes with
// the drives they mount, and every other box that mounts one of those.
type moveGroup struct {
	boxes  []store.Box
	drives []string
}

// moveGroups splits what server node holds into the groups that move
// together: boxes that share drives (by way of any chain of them) go in
// one, and each drive no box mounts goes alone.
func moveGroups(boxes []store.Box, drives []store.Drive, node string) []moveGroup {
	mounts := map[string][]store.Box{} // drive to the boxes that mount it
	for _, b := range boxes {
		for _, m := range b.Mounts {
			mounts[m.Drive] = append(mounts[m.Drive], b)
		}
	}
	var groups []moveGroup
	boxIn, driveIn := map[string]bool{}, map[string]bool{}
	var addBox func(g *moveGroup, b store.Box)
	addDrive := func(g *moveGroup, d string) {
		if driveIn[d] {
			return
		}
		driveIn[d] = true
		g.drives = append(g.drives, d)
		for _, b := range mounts[d] {
			addBox(g, b)
		}
	}
	addBox = func(g *moveGroup, b store.Box) {
		if boxIn[b.Name] {
			return
		}
		boxIn[b.Name] = true
		g.boxes = append(g.boxes, b)
		for _, m := range b.Mounts {
			addDrive(g, m.Drive)
		}
	}
	for _, b := range boxes {
		if b.Node == node && !boxIn[b.Name] {
			var g moveGroup
			addBox(&g, b)
			groups = append(groups, g)
		}
	}
	for _, d := range drives {
		if d.Node == node && d.State == "ready" && !driveIn[d.Name] {
			var g moveGroup
			addDrive(&g, d.Name)
			groups = append(groups, g)
		}
	}
	return groups
}
