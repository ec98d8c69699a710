// Package cluster is the driver of a Paddock that spans several servers:
// one driver.Driver over the drivers of its nodes (node.Remote for a node
// reached through its agent). Each call about an object goes to the node
// that holds it, as the control plane placed it (Where); lists are every
// node's together, and fail when a node does not answer, so that nothing
// above reads a node that is down as a node without boxes (and makes them
// again elsewhere: a box never runs twice).
//
// Objects do not move between nodes here: a box, its volumes and its
// snapshots are on one node, and moving them is an explicit operation of
// the control plane.
//
// A node is believed about what the control plane placed on it, and
// nothing else: a node taken over may say anything in its lists, and what
// it says of another node's box or snapshot (that it is there, made from
// another spec, that a snapshot is taken) would otherwise make the
// reconciler act on the real one where it is. Such entries are left out
// of every list, and said once in the log with the node's name.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver"
)

// Object kinds Where is asked about.
const (
	KindBox      = driver.KindBox
	KindSnapshot = driver.KindSnapshot
	// Volumes are asked about by their own kind (driver.KindDrive,
	// driver.KindBoxData).
)

// Driver routes each call to the node that holds its object.
type Driver struct {
	// Nodes are the nodes' drivers by node name; SetNode adds one while
	// the driver is in use.
	Nodes map[string]driver.Driver
	// Where names the node of an object (a kind above, or a volume's
	// kind, and its name): a new one's is where the control plane placed
	// it. An object it does not know (driver.ErrNotFound, or any error
	// that wraps it) is looked for where the last list saw it: what the
	// reconciler removes because nothing declares it is found there.
	Where func(kind, name string) (string, error)
	// Down, when set, is the cluster layer's word on a node (the swarm's
	// heartbeats): a node it says is down is not called, and is down in
	// every list, even if its agent would answer.
	Down func(node string) error
	// InTransit, when set, says whether a move under way ships the
	// object to or from node: its copy there is the move's, not a node's
	// lie, and stays out of the lists without a word in the log.
	InTransit func(node, kind, name string) bool
	// Log hears of the entries of a node's lists that are left out.
	Log *slog.Logger

	mu sync.RWMutex
	// seen is the node each object was on at the last list, by kind and
	// name.
	seen map[[2]string]string
	// told is what was logged of nodes' lists, once each: node, kind,
	// name.
	told map[[3]string]bool
}

// SetNode adds (or replaces) a node's driver.
func (c *Driver) SetNode(name string, d driver.Driver) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Nodes == nil {
		c.Nodes = map[string]driver.Driver{}
	}
	c.Nodes[name] = d
}

// Len is how many nodes the driver has.
func (c *Driver) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.Nodes)
}

// Node is a node's driver.
func (c *Driver) Node(name string) (driver.Driver, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, ok := c.Nodes[name]
	return d, ok
}

func (c *Driver) saw(kind, name, node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[[2]string]string{}
	}
	c.seen[[2]string{kind, name}] = node
}

// The driver's own methods, the files as a box's user, and every op
// (driver.Op), carried by Send.
var (
	_ driver.Driver    = (*Driver)(nil)
	_ driver.UserFiles = (*Driver)(nil)
	_ driver.Sender    = (*Driver)(nil)
)

// ErrNoSuchNode is an object placed on a node the cluster does not have.
var ErrNoSuchNode = fmt.Errorf("no such node")

func (c *Driver) node(kind, name string) (driver.Driver, error) {
	// One node: everything is there (a single server, as before nodes).
	c.mu.RLock()
	if len(c.Nodes) == 1 {
		for _, d := range c.Nodes {
			c.mu.RUnlock()
			return d, nil
		}
	}
	c.mu.RUnlock()
	n, err := c.Where(kind, name)
	if errors.Is(err, driver.ErrNotFound) {
		c.mu.RLock()
		seen, ok := c.seen[[2]string{kind, name}]
		c.mu.RUnlock()
		if ok {
			n, err = seen, nil
		}
	}
	if err != nil {
		return nil, err
	}
	d, ok := c.Node(n)
	if !ok {
		return nil, fmt.Errorf("%s %s is on node %q: %w", kind, name, n, ErrNoSuchNode)
	}
	if err := c.down(n); err != nil {
		return nil, &driver.NodesDown{Nodes: map[string]error{n: err}}
	}
	return d, nil
}

func (c *Driver) down(n string) error {
	if c.Down == nil || n == "" {
		return nil
	}
	return c.Down(n)
}

// believed says whether node n may tell of object kind/name: the control
// plane placed it there, or nothing declares it (the reconciler sweeps
// it from where it was seen). With one node there is nothing to check.
func (c *Driver) believed(n, kind, name string) (bool, error) {
	if c.Len() == 1 {
		return true, nil
	}
	at, err := c.Where(kind, name)
	switch {
	case errors.Is(err, driver.ErrNotFound):
		return true, nil
	case err != nil:
		return false, err
	case at == n:
		return true, nil
	}
	if c.InTransit != nil && c.InTransit(n, kind, name) {
		return false, nil
	}
	c.mu.Lock()
	if c.told == nil {
		c.told = map[[3]string]bool{}
	}
	first := !c.told[[3]string{n, kind, name}]
	c.told[[3]string{n, kind, name}] = true
	c.mu.Unlock()
	if first && c.Log != nil {
		c.Log.Warn("a node's list names an object placed on another server: not believed", "node", n, "kind", kind, "name", name, "placed_on", displayNode(at))
	}
	return false, nil
}

func displayNode(n string) string {
	if n == "" {
		return "(control plane)"
	}
	return n
}

func (c *Driver) names() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ns := make([]string, 0, len(c.Nodes))
	for n := range c.Nodes {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// listTimeout bounds one node's answer to a list: a node cut off is down
// for this list, not a list that never ends.
const listTimeout = 15 * time.Second

// gather calls f on every node at once, each bounded by listTimeout, and
// says which did not answer (*driver.NodesDown); what the others gave is
// f's to keep (under the lock f is called with).
func (c *Driver) gather(ctx context.Context, f func(ctx context.Context, name string, d driver.Driver, mu *sync.Mutex) error) error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	down := map[string]error{}
	for _, n := range c.names() {
		d, _ := c.Node(n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, listTimeout)
			defer cancel()
			err := c.down(n)
			if err == nil {
				err = f(cctx, n, d, &mu)
			}
			if err != nil {
				mu.Lock()
				down[n] = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(down) > 0 {
		return &driver.NodesDown{Nodes: down}
	}
	return nil
}

// Prepare makes every node's shared objects (*driver.NodesDown names the
// nodes that did not answer).
func (c *Driver) Prepare(ctx context.Context) error {
	return c.gather(ctx, func(ctx context.Context, _ string, d driver.Driver, _ *sync.Mutex) error { return d.Prepare(ctx) })
}

// ImageExists says whether every node that answers has the image: a box
// may be placed on any of them (none is placed on a node that is down).
// It fails only when no node answers.
func (c *Driver) ImageExists(ctx context.Context, ref string) (bool, error) {
	all, answered := true, 0
	err := c.gather(ctx, func(ctx context.Context, _ string, d driver.Driver, mu *sync.Mutex) error {
		ok, err := d.ImageExists(ctx, ref)
		if err != nil {
			return err
		}
		mu.Lock()
		all, answered = all && ok, answered+1
		mu.Unlock()
		return nil
	})
	if answered == 0 {
		return false, err
	}
	return all, nil
}

// Boxes lists every node's boxes; with *driver.NodesDown, those of the
// nodes that answered.
func (c *Driver) Boxes(ctx context.Context) ([]driver.BoxState, error) {
	var all []driver.BoxState
	err := c.gather(ctx, func(ctx context.Context, n string, d driver.Driver, mu *sync.Mutex) error {
		bs, err := d.Boxes(ctx)
		if err != nil {
			return err
		}
		var mine []driver.BoxState
		for _, b := range bs {
			if ok, err := c.believed(n, KindBox, b.Name); err != nil {
				return err
			} else if ok {
				c.saw(KindBox, b.Name, n)
				mine = append(mine, b)
			}
		}
		mu.Lock()
		all = append(all, mine...)
		mu.Unlock()
		return nil
	})
	sortBoxes(all)
	return all, err
}

// CreateBox makes a box on its node (a fork's is its snapshot's).
func (c *Driver) CreateBox(ctx context.Context, spec driver.BoxSpec) error {
	d, err := c.node(KindBox, spec.Name)
	if err != nil {
		return err
	}
	return d.CreateBox(ctx, spec)
}

func (c *Driver) box(name string, f func(driver.Driver) error) error {
	d, err := c.node(KindBox, name)
	if err != nil {
		return err
	}
	return f(d)
}

// StartBox starts a box on its node.
func (c *Driver) StartBox(ctx context.Context, name string) error {
	return c.box(name, func(d driver.Driver) error { return d.StartBox(ctx, name) })
}

// StopBox stops a box on its node.
func (c *Driver) StopBox(ctx context.Context, name string) error {
	return c.box(name, func(d driver.Driver) error { return d.StopBox(ctx, name) })
}

// RemoveBox removes a box from its node.
func (c *Driver) RemoveBox(ctx context.Context, name string) error {
	return c.box(name, func(d driver.Driver) error { return d.RemoveBox(ctx, name) })
}

// Snapshots lists every node's snapshots; with *driver.NodesDown, those
// of the nodes that answered.
func (c *Driver) Snapshots(ctx context.Context) ([]driver.SnapshotState, error) {
	var all []driver.SnapshotState
	err := c.gather(ctx, func(ctx context.Context, n string, d driver.Driver, mu *sync.Mutex) error {
		ss, err := d.Snapshots(ctx)
		if err != nil {
			return err
		}
		var mine []driver.SnapshotState
		for _, sn := range ss {
			if ok, err := c.believed(n, KindSnapshot, sn.ID); err != nil {
				return err
			} else if ok {
				c.saw(KindSnapshot, sn.ID, n)
				mine = append(mine, sn)
			}
		}
		mu.Lock()
		all = append(all, mine...)
		mu.Unlock()
		return nil
	})
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	return all, err
}

// Snapshot records a box on its node.
func (c *Driver) Snapshot(ctx context.Context, box, id string) error {
	return c.box(box, func(d driver.Driver) error { return d.Snapshot(ctx, box, id) })
}

// RemoveSnapshot removes a snapshot from its node.
func (c *Driver) RemoveSnapshot(ctx context.Context, id string) error {
	d, err := c.node(KindSnapshot, id)
	if err != nil {
		return err
	}
	return d.RemoveSnapshot(ctx, id)
}

// Volumes lists every node's volumes; with *driver.NodesDown, those of
// the nodes that answered.
func (c *Driver) Volumes(ctx context.Context) ([]driver.VolumeRef, error) {
	var all []driver.VolumeRef
	err := c.gather(ctx, func(ctx context.Context, n string, d driver.Driver, mu *sync.Mutex) error {
		vs, err := d.Volumes(ctx)
		if err != nil {
			return err
		}
		var mine []driver.VolumeRef
		for _, v := range vs {
			if ok, err := c.believed(n, v.Kind, v.Name); err != nil {
				return err
			} else if ok {
				c.saw(v.Kind, v.Name, n)
				mine = append(mine, v)
			}
		}
		mu.Lock()
		all = append(all, mine...)
		mu.Unlock()
		return nil
	})
	sort.Slice(all, func(i, j int) bool {
		if all[i].Kind != all[j].Kind {
			return all[i].Kind < all[j].Kind
		}
		return all[i].Name < all[j].Name
	})
	return all, err
}

func sortBoxes(bs []driver.BoxState) {
	sort.Slice(bs, func(i, j int) bool { return bs[i].Name < bs[j].Name })
}

func (c *Driver) volume(v driver.VolumeRef) (driver.Driver, error) { return c.node(v.Kind, v.Name) }

// CreateVolume makes a volume on its node.
func (c *Driver) CreateVolume(ctx context.Context, v driver.VolumeRef) error {
	d, err := c.volume(v)
	if err != nil {
		return err
	}
	return d.CreateVolume(ctx, v)
}

// RemoveVolume removes a volume from its node.
func (c *Driver) RemoveVolume(ctx context.Context, v driver.VolumeRef) error {
	d, err := c.volume(v)
	if err != nil {
		return err
	}
	return d.RemoveVolume(ctx, v)
}

// Exec runs a command in a box on its node.
func (c *Driver) Exec(ctx context.Context, box string, spec driver.ExecSpec) (int, error) {
	d, err := c.node(KindBox, box)
	if err != nil {
		return -1, err
	}
	return d.Exec(ctx, box, spec)
}

// CopyTo extracts a tar stream into a box on its node.
func (c *Driver) CopyTo(ctx context.Context, box, dir string, tar io.Reader) error {
	return c.box(box, func(d driver.Driver) error { return d.CopyTo(ctx, box, dir, tar) })
}

// CopyFrom returns a tar stream of a path in a box on its node.
func (c *Driver) CopyFrom(ctx context.Context, box, path string) (io.ReadCloser, error) {
	d, err := c.node(KindBox, box)
	if err != nil {
		return nil, err
	}
	return d.CopyFrom(ctx, box, path)
}

// ReadVolume returns a tar stream of a volume on its node.
func (c *Driver) ReadVolume(ctx context.Context, v driver.VolumeRef, image string) (io.ReadCloser, error) {
	d, err := c.volume(v)
	if err != nil {
		return nil, err
	}
	return d.ReadVolume(ctx, v, image)
}

// WriteVolume replaces a volume's contents on its node.
func (c *Driver) WriteVolume(ctx context.Context, v driver.VolumeRef, image string, tar io.Reader) error {
	d, err := c.volume(v)
	if err != nil {
		return err
	}
	return d.WriteVolume(ctx, v, image, tar)
}

// CleanVolume cleans a volume on its node.
func (c *Driver) CleanVolume(ctx context.Context, v driver.VolumeRef, image string) error {
	d, err := c.volume(v)
	if err != nil {
		return err
	}
	return d.CleanVolume(ctx, v, image)
}

// errNo is a call whose node's driver lacks an optional interface.
func errNo(what string) error { return fmt.Errorf("the node's driver has no %s", what) }

// Send carries an op (driver.Op) to the server of what it is about: a
// box's, a snapshot's, a volume's, or ("" kind) the control plane's own.
func (c *Driver) Send(ctx context.Context, op, kind, name string, args, reply any) error {
	var d driver.Driver
	if kind == "" {
		n, ok := c.Node("")
		if !ok {
			return fmt.Errorf("%s: %w", errNo(op), errors.ErrUnsupported)
		}
		d = n
	} else {
		var err error
		if d, err = c.node(kind, name); err != nil {
			return err
		}
	}
	return driver.Run(ctx, d, op, args, reply)
}

// userFiles is the driver.UserFiles of a box's node.
func (c *Driver) userFiles(box string) (driver.UserFiles, error) {
	var uf driver.UserFiles
	err := c.box(box, func(d driver.Driver) error {
		var ok bool
		if uf, ok = d.(driver.UserFiles); !ok {
			return fmt.Errorf("the node's driver has no UserFiles: %w", errors.ErrUnsupported)
		}
		return nil
	})
	return uf, err
}

// PushFolder is where a push into dir stages, on the box's node.
func (c *Driver) PushFolder(ctx context.Context, box string, uid int, dir string) (string, string, bool, error) {
	uf, err := c.userFiles(box)
	if err != nil {
		return "", "", false, err
	}
	return uf.PushFolder(ctx, box, uid, dir)
}

// UnpackAsUser unpacks and merges a push on the box's node.
func (c *Driver) UnpackAsUser(ctx context.Context, box string, uid int, stage, dir string, max int64, tar io.Reader) (string, bool, error) {
	uf, err := c.userFiles(box)
	if err != nil {
		return "", false, err
	}
	return uf.UnpackAsUser(ctx, box, uid, stage, dir, max, tar)
}

// Unreadable finds what of p the box's user may not read, on its node.
func (c *Driver) Unreadable(ctx context.Context, box string, uid int, p string) (string, error) {
	uf, err := c.userFiles(box)
	if err != nil {
		return "", err
	}
	return uf.Unreadable(ctx, box, uid, p)
}

// PackAsUser streams p, packed as the box's user on its node.
func (c *Driver) PackAsUser(ctx context.Context, box string, uid int, p string) (io.ReadCloser, error) {
	uf, err := c.userFiles(box)
	if err != nil {
		return nil, err
	}
	return uf.PackAsUser(ctx, box, uid, p)
}

// RemoveNode forgets a node's driver.
func (c *Driver) RemoveNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.Nodes, name)
}
