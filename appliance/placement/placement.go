// Package placement is where a box goes among a Paddock's servers, and
// its address there: where its drives or snapshot are, else the server
// that is up, undrained, with the labels it asks for and the most memory
// (then CPUs) not yet promised to its boxes; and the names users see for
// servers. With no server but the control plane's, every box is there,
// as on a single server.
//
// The rules only, over the store's transaction and what the control
// plane last saw of each server (node.Cluster): the core places boxes
// it makes, forks and pool boxes; projects and moves place through it.
package placement

import (
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver/cluster"
	"github.com/paddock-dev/paddock/appliance/node"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Placer places boxes over Cluster (nil: this server only), with the box
// types' sizes and the control plane's own box network.
type Placer struct {
	Cluster *node.Cluster
	Types   map[string]config.BoxType
	Subnet  netip.Prefix
}

// LocalName is the control plane's own server's name ("local" when
// it has none).
func (p Placer) LocalName() string {
	if p.Cluster != nil && p.Cluster.Name != "" {
		return p.Cluster.Name
	}
	return "local"
}

// Display is the name users see for a box's node.
func (p Placer) Display(n string) string {
	if n == "" {
		return p.LocalName()
	}
	return n
}

// Place puts a new box (or pool box) on a node and gives it a free
// address in that node's box network. A box that mounts drives goes where
// they are, a fork where its snapshot is; any other to the node that is
// up with the most memory not yet promised to its boxes (their types'
// memory), then the most CPUs so promised, then by name. With no node but
// the control plane's, every box is there, as on a single server.
// With want (a server's name as 'paddock nodes' shows it), the box goes
// there: it must be up, and where the box's drives and snapshot are.
func (p Placer) Place(tx *store.Tx, b *store.Box, want string) error {
	if b.IP != "" {
		return nil
	}
	ns, err := tx.ListNodes()
	if err != nil {
		return err
	}
	if len(b.NodeLabels) > 0 && (len(ns) == 0 || p.Cluster == nil) {
		return api.Invalid("node_labels", "no server has the labels %s: this Paddock has one server, and labels are for servers that joined ('paddock node add')", api.LabelsText(b.NodeLabels))
	}
	if !p.Subnet.IsValid() {
		return nil
	}
	if want != "" {
		n, err := p.Wanted(want, ns)
		if err != nil {
			return err
		}
		if !store.HasLabels(ns, n, b.NodeLabels) {
			return api.Invalid("node", "server %s does not have the labels the box asks for (%s)", want, api.LabelsText(b.NodeLabels))
		}
		// Where its data is, if anywhere, must be the same server.
		if (len(b.Mounts) > 0 || len(b.Buckets) > 0 || b.From != "") && len(ns) > 0 && p.Cluster != nil {
			at, err := p.choose(tx, *b, ns)
			if err != nil {
				return err
			}
			if at != n {
				return api.Conflict("box %q cannot be on %s: what it needs is on %s (its drives or snapshot; buckets are mounted by the control plane's server only, for now)", b.Name, p.Display(n), p.Display(at))
			}
		}
		b.Node = n
	} else if len(ns) > 0 && p.Cluster != nil {
		n, err := p.choose(tx, *b, ns)
		if err != nil {
			return err
		}
		b.Node = n
	}
	return p.Address(tx, b, ns)
}

// Wanted is the node a user named: one that is up.
func (p Placer) Wanted(want string, ns []store.Node) (string, error) {
	n := want
	if want == p.LocalName() {
		n = ""
	} else if !slices.ContainsFunc(ns, func(x store.Node) bool { return x.Name == want }) {
		all := append([]string{p.LocalName()}, names(ns)...)
		return "", api.Invalid("node", "no server named %q: the servers are %s", want, strings.Join(all, ", "))
	}
	if p.Cluster != nil && n != "" {
		if seen, ok := p.Cluster.LastSeen(n); !ok || seen.Err != nil {
			return "", api.Conflict("server %s is down: choose another, or wait for it ('paddock nodes')", want)
		}
	}
	if len(undrained(ns, []string{n})) == 0 {
		return "", api.Conflict("server %s is drained: no new box goes there ('paddock node undrain %s' takes boxes there again)", want, want)
	}
	return n, nil
}

// undrained is those of names whose server is not drained.
func undrained(ns []store.Node, names []string) []string {
	drained := map[string]bool{}
	for _, n := range ns {
		drained[n.Name] = n.Drained
	}
	out := []string{}
	for _, n := range names {
		if !drained[n] {
			out = append(out, n)
		}
	}
	return out
}

// displays is names as users see them.
func (p Placer) displays(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = p.Display(n)
	}
	return out
}

// Address gives a box a free address in its node's box network.
func (p Placer) Address(tx *store.Tx, b *store.Box, ns []store.Node) error {
	subnet := p.Subnet
	if b.Node != "" {
		subnet = netip.Prefix{}
		for _, n := range ns {
			if n.Name == b.Node {
				subnet, _ = netip.ParsePrefix(n.Subnet)
			}
		}
		if !subnet.IsValid() {
			return api.Conflict("box %q is on node %q, which is not one of this server's", b.Name, b.Node)
		}
	}
	gw := subnet.Masked().Addr().Next()
	ip, err := tx.FreeIP(subnet, gw)
	if err != nil {
		return err
	}
	b.IP = ip.String()
	return nil
}

func (p Placer) choose(tx *store.Tx, b store.Box, ns []store.Node) (string, error) {
	// Where its data is.
	fixed, why := "", ""
	for _, m := range b.Mounts {
		d, err := tx.GetDrive(m.Drive)
		if err != nil {
			return "", err
		}
		if why != "" && d.Node != fixed {
			return "", api.Conflict("box %q mounts drives on two servers (%s on %s, %s on %s): a box and its drives are on one server", b.Name, why, p.Display(fixed), m.Drive, p.Display(d.Node))
		}
		fixed, why = d.Node, m.Drive
	}
	// Buckets are mounted by the control plane's server only (for now).
	if len(b.Buckets) > 0 {
		if why != "" && fixed != "" {
			return "", api.Conflict("box %q mounts buckets, which only the control plane's server mounts (for now), and drive %s, which is on %s", b.Name, why, p.Display(fixed))
		}
		fixed, why = "", "buckets (only the control plane's server mounts them, for now)"
	}
	if b.From != "" {
		sn, err := tx.GetSnapshot(b.From)
		if err != nil {
			return "", err
		}
		n, err := tx.Where(cluster.KindSnapshot, sn.ID)
		if err != nil {
			return "", err
		}
		if why != "" && n != fixed {
			return "", api.Conflict("box %q mounts %s on %s, and its snapshot is on %s", b.Name, why, p.Display(fixed), p.Display(n))
		}
		fixed, why = n, "snapshot"
	}
	if why != "" {
		if len(undrained(ns, []string{fixed})) == 0 {
			return "", api.Conflict("box %q goes where its %s is, on %s, which is drained ('paddock node undrain %s', or move what it needs)", b.Name, why, p.Display(fixed), p.Display(fixed))
		}
		if !store.HasLabels(ns, fixed, b.NodeLabels) {
			return "", api.Conflict("box %q goes where its %s is, on %s, which does not have the labels it asks for (%s)", b.Name, why, p.Display(fixed), api.LabelsText(b.NodeLabels))
		}
		return fixed, nil
	}
	return p.Roomiest(tx, ns, b.NodeLabels)
}

// labelled names the servers with all of labels (nil asks for none: every
// server). The control plane's own server has none.
func labelled(ns []store.Node, labels map[string]string) []string {
	out := []string{}
	if len(labels) == 0 {
		out = append(out, "")
	}
	for _, n := range ns {
		if store.HasLabels(ns, n.Name, labels) {
			out = append(out, n.Name)
		}
	}
	return out
}

// DriveNode is the node a new drive goes on: as a box would, with no
// drives nor snapshot of its own.
func (p Placer) DriveNode(tx *store.Tx) (string, error) {
	ns, err := tx.ListNodes()
	if err != nil || len(ns) == 0 || p.Cluster == nil {
		return "", err
	}
	return p.Roomiest(tx, ns, nil)
}

// Roomiest is the node that is up, with labels, with the most memory not
// promised to its boxes. No server with the labels is an error that names
// them; servers with them that are all down, one that names those.
func (p Placer) Roomiest(tx *store.Tx, ns []store.Node, labels map[string]string) (string, error) {
	allowed := labelled(ns, labels)
	if len(allowed) == 0 {
		return "", api.Invalid("node_labels", "no server has the labels %s: give one them with 'paddock node label NODE %s'", api.LabelsText(labels), strings.ReplaceAll(api.LabelsText(labels), ",", " "))
	}
	if open := undrained(ns, allowed); len(open) > 0 {
		allowed = open
	} else {
		return "", api.Conflict("the servers that could take the box (%s) are drained: 'paddock node undrain NODE' takes boxes there again", strings.Join(p.displays(allowed), ", "))
	}
	boxes, err := tx.ListBoxes()
	if err != nil {
		return "", err
	}
	pool, err := tx.ListPool()
	if err != nil {
		return "", err
	}
	promisedMem, promisedCPU := map[string]int64{}, map[string]float64{}
	for _, b := range boxes {
		t := p.Types[b.Type]
		promisedMem[b.Node] += t.MemoryMiB << 20
		promisedCPU[b.Node] += t.CPUs
	}
	for _, pb := range pool {
		t := p.Types[pb.Type]
		promisedMem[pb.Node] += t.MemoryMiB << 20
		promisedCPU[pb.Node] += t.CPUs
	}
	type cand struct {
		name      string
		mem       int64
		cpu       float64
		knownDown bool
	}
	var cs []cand
	for _, n := range allowed {
		c := cand{name: n}
		seen, ok := p.Cluster.LastSeen(n)
		switch {
		case !ok:
			c.knownDown = n != "" // a node not looked at yet is not chosen
		case seen.Err != nil:
			c.knownDown = true
		default:
			cpus, mem, _ := seen.Capacity()
			c.mem = mem - promisedMem[n]
			c.cpu = float64(cpus) - promisedCPU[n]
		}
		if !c.knownDown {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		if len(labels) > 0 {
			return "", api.Conflict("the servers with the labels %s (%s) are down: wait for one, or label another", api.LabelsText(labels), strings.Join(allowed, ", "))
		}
		return "", api.Conflict("no server is up to take the box")
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].mem != cs[j].mem {
			return cs[i].mem > cs[j].mem
		}
		if cs[i].cpu != cs[j].cpu {
			return cs[i].cpu > cs[j].cpu
		}
		return cs[i].name < cs[j].name
	})
	return cs[0].name, nil
}

func names(ns []store.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name
	}
	return out
}

// Candidates names the servers a box with labels may go to, undrained
// and with the labels ("" is the control plane's own); nil when that is
// any server (no labels asked, none drained).
func Candidates(ns []store.Node, labels map[string]string) []string {
	if len(labels) == 0 && len(undrained(ns, names(ns))) == len(ns) {
		return nil
	}
	return undrained(ns, labelled(ns, labels))
}
