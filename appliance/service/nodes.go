package service

import (
	"context"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver/cluster"
	"github.com/paddock-dev/paddock/appliance/store"
)

// AttachAll makes every joined node reachable (at start), and the
// swarm's word on each node (LookAtNodes) the driver's: a server the
// swarm says is down is down for the reconciler too.
func (s *Service) AttachAll() error {
	if s.Cluster == nil {
		return nil
	}
	ns, err := s.Store.ListNodes()
	if err != nil {
		return err
	}
	return s.Cluster.AttachAll(ns)
}

// LookAtNodes asks the swarm how the servers are, and every node's agent
// what it has (node.Cluster's Look), for placement and 'paddock nodes'.
func (s *Service) LookAtNodes(ctx context.Context) {
	if s.Cluster == nil {
		return
	}
	if ns, err := s.Store.ListNodes(); err == nil {
		s.Cluster.Look(ctx, ns)
	}
}

// LocalNodeName is the control plane's own server's name ("local" when
// it has none).
func (s *Service) LocalNodeName() string {
	if s.Cluster != nil && s.Cluster.Name != "" {
		return s.Cluster.Name
	}
	return "local"
}

// boxNode is the node a box shows: none on a single server.
func (s *Service) boxNode(n string) string {
	if n != "" {
		return n
	}
	// The nodes attached are those that joined: no query for each box.
	if s.Cluster != nil && s.Cluster.Driver.Len() > 1 {
		return s.LocalNodeName()
	}
	return ""
}

// NodeDisplay is the name users see for a box's node.
func (s *Service) NodeDisplay(n string) string {
	if n == "" {
		return s.LocalNodeName()
	}
	return n
}

// place puts a new box (or pool box) on a node and gives it a free
// address in that node's box network. A box that mounts drives goes where
// they are, a fork where its snapshot is; any other to the node that is
// up with the most memory not yet promised to its boxes (their types'
// memory), then the most CPUs so promised, then by name. With no node but
// the control plane's, every box is there, as on a single server.
func (s *Service) place(tx *store.Tx, b *store.Box) error { return s.PlaceOn(tx, b, "") }

// PlaceOn is place on the server named want (its name as 'paddock nodes'
// shows it), when not empty: it must be up, and where the box's drives
// and snapshot are.
func (s *Service) PlaceOn(tx *store.Tx, b *store.Box, want string) error {
	if b.IP != "" {
		return nil
	}
	ns, err := tx.ListNodes()
	if err != nil {
		return err
	}
	if len(b.NodeLabels) > 0 && (len(ns) == 0 || s.Cluster == nil) {
		return api.Invalid("node_labels", "no server has the labels %s: this Paddock has one server, and labels are for servers that joined ('paddock node add')", api.LabelsText(b.NodeLabels))
	}
	if !s.Net.Subnet.IsValid() {
		return nil
	}
	if want != "" {
		n, err := s.Wanted(want, ns)
		if err != nil {
			return err
		}
		if !store.HasLabels(ns, n, b.NodeLabels) {
			return api.Invalid("node", "server %s does not have the labels the box asks for (%s)", want, api.LabelsText(b.NodeLabels))
		}
		// Where its data is, if anywhere, must be the same server.
		if (len(b.Mounts) > 0 || b.From != "") && len(ns) > 0 && s.Cluster != nil {
			at, err := s.chooseNode(tx, *b, ns)
			if err != nil {
				return err
			}
			if at != n {
				return api.Conflict("box %q cannot be on %s: its drives or snapshot are on %s", b.Name, s.NodeDisplay(n), s.NodeDisplay(at))
			}
		}
		b.Node = n
	} else if len(ns) > 0 && s.Cluster != nil {
		n, err := s.chooseNode(tx, *b, ns)
		if err != nil {
			return err
		}
		b.Node = n
	}
	return s.Address(tx, b, ns)
}

// Wanted is the node a user named: one that is up.
func (s *Service) Wanted(want string, ns []store.Node) (string, error) {
	n := want
	if want == s.LocalNodeName() {
		n = ""
	} else if !slices.ContainsFunc(ns, func(x store.Node) bool { return x.Name == want }) {
		all := append([]string{s.LocalNodeName()}, names(ns)...)
		return "", api.Invalid("node", "no server named %q: the servers are %s", want, strings.Join(all, ", "))
	}
	if s.Cluster != nil && n != "" {
		if seen, ok := s.Cluster.LastSeen(n); !ok || seen.Err != nil {
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

// nodeDisplays is names as users see them.
func (s *Service) nodeDisplays(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = s.NodeDisplay(n)
	}
	return out
}

// Address gives a box a free address in its node's box network.
func (s *Service) Address(tx *store.Tx, b *store.Box, ns []store.Node) error {
	subnet := s.Net.Subnet
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

func (s *Service) chooseNode(tx *store.Tx, b store.Box, ns []store.Node) (string, error) {
	// Where its data is.
	fixed, why := "", ""
	for _, m := range b.Mounts {
		d, err := tx.GetDrive(m.Drive)
		if err != nil {
			return "", err
		}
		if why != "" && d.Node != fixed {
			return "", api.Conflict("box %q mounts drives on two servers (%s on %s, %s on %s): a box and its drives are on one server", b.Name, why, s.NodeDisplay(fixed), m.Drive, s.NodeDisplay(d.Node))
		}
		fixed, why = d.Node, m.Drive
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
			return "", api.Conflict("box %q mounts %s on %s, and its snapshot is on %s", b.Name, why, s.NodeDisplay(fixed), s.NodeDisplay(n))
		}
		fixed, why = n, "snapshot"
	}
	if why != "" {
		if len(undrained(ns, []string{fixed})) == 0 {
			return "", api.Conflict("box %q goes where its %s is, on %s, which is drained ('paddock node undrain %s', or move what it needs)", b.Name, why, s.NodeDisplay(fixed), s.NodeDisplay(fixed))
		}
		if !store.HasLabels(ns, fixed, b.NodeLabels) {
			return "", api.Conflict("box %q goes where its %s is, on %s, which does not have the labels it asks for (%s)", b.Name, why, s.NodeDisplay(fixed), api.LabelsText(b.NodeLabels))
		}
		return fixed, nil
	}
	return s.Roomiest(tx, ns, b.NodeLabels)
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
func (s *Service) DriveNode(tx *store.Tx) (string, error) {
	ns, err := tx.ListNodes()
	if err != nil || len(ns) == 0 || s.Cluster == nil {
		return "", err
	}
	return s.Roomiest(tx, ns, nil)
}

// Roomiest is the node that is up, with labels, with the most memory not
// promised to its boxes. No server with the labels is an error that names
// them; servers with them that are all down, one that names those.
func (s *Service) Roomiest(tx *store.Tx, ns []store.Node, labels map[string]string) (string, error) {
	allowed := labelled(ns, labels)
	if len(allowed) == 0 {
		return "", api.Invalid("node_labels", "no server has the labels %s: give one them with 'paddock node label NODE %s'", api.LabelsText(labels), strings.ReplaceAll(api.LabelsText(labels), ",", " "))
	}
	if open := undrained(ns, allowed); len(open) > 0 {
		allowed = open
	} else {
		return "", api.Conflict("the servers that could take the box (%s) are drained: 'paddock node undrain NODE' takes boxes there again", strings.Join(s.nodeDisplays(allowed), ", "))
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
		t := s.Cfg.Types[b.Type]
		promisedMem[b.Node] += t.MemoryMiB << 20
		promisedCPU[b.Node] += t.CPUs
	}
	for _, p := range pool {
		t := s.Cfg.Types[p.Type]
		promisedMem[p.Node] += t.MemoryMiB << 20
		promisedCPU[p.Node] += t.CPUs
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
		seen, ok := s.Cluster.LastSeen(n)
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
