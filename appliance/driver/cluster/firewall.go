package cluster

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/policies"
)

// NodeFirewall is one node's egress rules: its policies.Manager, here or
// through its agent (node.Remote).
type NodeFirewall interface {
	SetFence(fence []netip.Prefix)
	Sync(boxes []policies.Box) error
	Report(box string) (policies.Report, error)
}

// Firewall sends each node the egress rules of its own boxes. A node's
// boxes are those whose address is in its box network (each node has its
// own, carved out by the control plane), so the rules are made from what
// is declared alone, as on a single server. No box reaches another server:
// each node's fence is every server's address and the other nodes' box
// networks.
type Firewall struct {
	// NodeOf names the node of a box by its name, for Report.
	NodeOf func(box string) (string, error)
	// Down, when set, says a node is down (as Driver.Down): it is not
	// called, and is down in Sync's error.
	Down func(node string) error

	mu    sync.RWMutex
	nodes map[string]fwNode
}

type fwNode struct {
	subnet netip.Prefix
	addr   netip.Addr
	fw     NodeFirewall
}

// SetNode adds (or replaces) a node's rules, for the boxes of subnet; addr
// is the node's address in the cluster (not valid: none known), which no
// box reaches.
func (f *Firewall) SetNode(name string, subnet netip.Prefix, addr netip.Addr, fw NodeFirewall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nodes == nil {
		f.nodes = map[string]fwNode{}
	}
	f.nodes[name] = fwNode{subnet: subnet, addr: addr, fw: fw}
}

// fence is what no box of node n reaches: every server's address and the
// other nodes' box networks (a single server's is empty).
func fence(nodes map[string]fwNode, n string) []netip.Prefix {
	var out []netip.Prefix
	for m, fn := range nodes {
		if fn.addr.IsValid() && len(nodes) > 1 {
			out = append(out, netip.PrefixFrom(fn.addr, fn.addr.BitLen()))
		}
		if m != n && fn.subnet.IsValid() {
			out = append(out, fn.subnet)
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// Sync gives every node its boxes' rules (a node with none gets an empty
// list: the rules of boxes that went are removed there too). Every node
// is tried; the error (*driver.NodesDown) names those that failed.
func (f *Firewall) Sync(boxes []policies.Box) error {
	f.mu.RLock()
	nodes := make(map[string]fwNode, len(f.nodes))
	for n, fn := range f.nodes {
		nodes[n] = fn
	}
	f.mu.RUnlock()
	per := map[string][]policies.Box{}
	for _, b := range boxes {
		for n, fn := range nodes {
			if fn.subnet.Contains(b.IP) {
				per[n] = append(per[n], b)
				break
			}
		}
	}
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	// At once: a node that is slow to answer holds up no other.
	failed := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := f.down(n)
			if err == nil {
				nodes[n].fw.SetFence(fence(nodes, n))
				err = nodes[n].fw.Sync(per[n])
			}
			if err != nil {
				mu.Lock()
				failed[n] = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		return &driver.NodesDown{Nodes: failed}
	}
	return nil
}

// Report is what a box's rules did, on its node.
func (f *Firewall) Report(box string) (policies.Report, error) {
	n, err := f.NodeOf(box)
	if err != nil {
		return policies.Report{}, err
	}
	f.mu.RLock()
	fn, ok := f.nodes[n]
	f.mu.RUnlock()
	if !ok {
		return policies.Report{}, fmt.Errorf("box %s is on node %q: %w", box, n, ErrNoSuchNode)
	}
	if err := f.down(n); err != nil {
		return policies.Report{}, &driver.NodesDown{Nodes: map[string]error{n: err}}
	}
	return fn.fw.Report(box)
}

func (f *Firewall) down(n string) error {
	if f.Down == nil || n == "" {
		return nil
	}
	return f.Down(n)
}

// RemoveNode forgets a node's rules.
func (f *Firewall) RemoveNode(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.nodes, name)
}
