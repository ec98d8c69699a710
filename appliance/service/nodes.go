package service

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver/cluster"
	"github.com/paddock-dev/paddock/appliance/node"
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

var nodeName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// NodeJoinToken makes a one-time token that lets one server join (the
// owner's).
func (s *Service) NodeJoinToken(ctx context.Context) (api.NodeJoin, error) {
	if err := requireOwner(ctx, "add servers"); err != nil {
		return api.NodeJoin{}, err
	}
	if s.Cluster == nil || s.Cluster.URL == "" {
		return api.NodeJoin{}, api.Conflict("this server takes no nodes: set cluster_listen to IP:PORT on its private network, where the other servers reach it, and restart paddockd")
	}
	ca, _, err := s.Cluster.Authority()
	if err != nil {
		return api.NodeJoin{}, err
	}
	// The swarm is made with the first token; each new token comes with
	// a new swarm worker token, so that the one sent to the last server
	// that joined lets no one else in.
	if _, err := s.Cluster.Manage(ctx, true); err != nil {
		return api.NodeJoin{}, err
	}
	tok, _ := auth.NewToken()
	tok = "pdkjoin_" + strings.TrimPrefix(tok, "pdk_")
	exp := s.now().Add(node.JoinTokenLife)
	if err := s.Store.AddJoinToken(auth.Hash(tok), exp); err != nil {
		return api.NodeJoin{}, err
	}
	fp := ca.Fingerprint()
	return api.NodeJoin{
		Token: tok, ExpiresAt: exp, CASHA256: fp,
		Command: fmt.Sprintf("sudo paddockd node --join %s --token %s --ca-sha256 %s", s.Cluster.URL, tok, fp),
	}, nil
}

// errJoin is every refusal of a join token: unknown, spent and expired
// are not told apart.
var errJoin = &api.Error{Code: api.CodeUnauthorized, Message: "the join token is not valid (unknown, used, or expired): make a new one with 'paddock node add'"}

// JoinNode lets a server in with a join token: it gets a name, a box
// network, and a certificate for its agent's key; from then on boxes may
// be placed on it.
func (s *Service) JoinNode(ctx context.Context, req api.NodeJoinRequest) (api.NodeJoined, error) {
	c := s.Cluster
	if c == nil {
		return api.NodeJoined{}, errJoin
	}
	// The token first: nothing (the swarm above all, which opens its
	// ports once made) is done for a request without a good one.
	if !strings.HasPrefix(req.Token, "pdkjoin_") {
		return api.NodeJoined{}, s.joinRefused(req, errJoin)
	}
	if ok, err := s.Store.JoinTokenValid(auth.Hash(req.Token)); err != nil {
		return api.NodeJoined{}, err
	} else if !ok {
		return api.NodeJoined{}, s.joinRefused(req, errJoin)
	}
	name := strings.ToLower(req.Name)
	if !nodeName.MatchString(name) || name == node.ControlPlane || name == c.Name {
		return api.NodeJoined{}, api.Invalid("name", "node name %q: give a host name (lower-case letters, digits and '-') other than %q and %q", req.Name, c.Name, node.ControlPlane)
	}
	host, port, err := net.SplitHostPort(req.Addr)
	if err != nil || port == "" || net.ParseIP(host) == nil {
		return api.NodeJoined{}, api.Invalid("addr", "agent address %q: give IP:PORT", req.Addr)
	}
	blk, _ := pem.Decode([]byte(req.PublicKey))
	if blk == nil {
		return api.NodeJoined{}, api.Invalid("public_key", "not a PEM public key")
	}
	pub, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return api.NodeJoined{}, api.Invalid("public_key", "%v", err)
	}
	ca, _, err := c.Authority()
	if err != nil {
		return api.NodeJoined{}, err
	}
	subnet, err := s.freeNodeSubnet()
	if err != nil {
		return api.NodeJoined{}, err
	}
	sw, err := c.Manage(ctx, false)
	if err != nil {
		return api.NodeJoined{}, err
	}
	der, err := ca.Sign(name, pub)
	if err != nil {
		return api.NodeJoined{}, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	n := store.Node{Name: name, Addr: req.Addr, Subnet: subnet.String(), Joined: s.now(), Cert: string(certPEM)}
	switch err := s.Store.JoinNode(auth.Hash(req.Token), n); {
	case errors.Is(err, store.ErrNotFound):
		return api.NodeJoined{}, s.joinRefused(req, errJoin)
	case errors.Is(err, store.ErrConflict):
		return api.NodeJoined{}, api.Conflict("a node named %q has joined already (the token is spent: make a new one)", name)
	case err != nil:
		return api.NodeJoined{}, err
	}
	if err := c.Attach(n); err != nil {
		return api.NodeJoined{}, err
	}
	s.Log.Info("node joined", "node", name, "addr", req.Addr, "subnet", subnet)
	detail, _ := json.Marshal(map[string]any{"addr": req.Addr, "subnet": subnet.String()})
	s.Record(audit.Entry{User: "paddockd", Via: "cluster", Action: "node.join", Object: "nodes/" + name, Result: "ok", Detail: detail})
	return api.NodeJoined{Name: name, Cert: string(certPEM), CA: string(ca.PEM), Subnet: subnet.String(), Instance: s.Cfg.Instance, Caller: node.ControlPlane, Swarm: sw}, nil
}

// joinRefused writes a refused join to the audit log, and returns err.
func (s *Service) joinRefused(req api.NodeJoinRequest, err error) error {
	detail, _ := json.Marshal(map[string]any{"addr": req.Addr, "name": req.Name})
	s.Record(audit.Entry{User: "paddockd", Via: "cluster", Action: "node.join", Object: "nodes/" + req.Name, Result: err.Error(), Detail: detail})
	return err
}

// freeNodeSubnet is the lowest /24 of node_subnets no node has.
func (s *Service) freeNodeSubnet() (netip.Prefix, error) {
	pool, err := netip.ParsePrefix(s.Cfg.NodeSubnets)
	if err != nil || !pool.Addr().Is4() || pool.Bits() > 24 {
		return netip.Prefix{}, fmt.Errorf("node_subnets %q: give an IPv4 prefix of /24 or larger", s.Cfg.NodeSubnets)
	}
	if s.Net.Subnet.IsValid() && pool.Overlaps(s.Net.Subnet) {
		return netip.Prefix{}, fmt.Errorf("node_subnets %s overlaps the box network %s", pool, s.Net.Subnet)
	}
	ns, err := s.Store.ListNodes()
	if err != nil {
		return netip.Prefix{}, err
	}
	used := map[netip.Prefix]bool{}
	for _, n := range ns {
		if p, err := netip.ParsePrefix(n.Subnet); err == nil {
			used[p.Masked()] = true
		}
	}
	for a := pool.Masked().Addr(); pool.Contains(a); {
		p := netip.PrefixFrom(a, 24)
		if !used[p] {
			return p, nil
		}
		b := a.As4()
		if b[2] == 255 {
			if b[1] == 255 {
				break
			}
			b[1]++
		}
		b[2]++
		a = netip.AddrFrom4(b)
	}
	return netip.Prefix{}, fmt.Errorf("node_subnets %s has no free /24 left", pool)
}

// Nodes lists the servers (the owner's): the control plane's own first.
func (s *Service) Nodes(ctx context.Context) ([]api.Node, error) {
	if err := requireOwner(ctx, "list servers"); err != nil {
		return nil, err
	}
	s.LookAtNodes(ctx)
	return s.nodeList()
}

// nodeList is the servers as the last look saw them.
func (s *Service) nodeList() ([]api.Node, error) {
	ns, err := s.Store.ListNodes()
	if err != nil {
		return nil, err
	}
	all := []store.Node{{Name: "", Subnet: s.Net.Subnet.String(), Labels: map[string]string{}}}
	all = append(all, ns...)
	own, err := s.Store.NodePools()
	if err != nil {
		return nil, err
	}
	var out []api.Node
	for _, n := range all {
		boxes, pool, drives, _, err := s.Store.NodeObjects(n.Name)
		if err != nil {
			return nil, err
		}
		an := api.Node{Name: n.Name, Addr: n.Addr, Subnet: n.Subnet, Labels: n.Labels, Joined: n.Joined, Drained: n.Drained,
			Boxes: boxes, Pool: pool, OwnPool: own[n.Name], Drives: drives, State: "up"}
		if n.Name == "" {
			an.Name, an.ControlPlane = s.localNodeName(), true
		}
		if s.Cluster != nil {
			if seen, ok := s.Cluster.LastSeen(n.Name); ok {
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

// nodeNamed is one server as nodeList shows it.
func (s *Service) nodeNamed(name string) (api.Node, error) {
	ns, err := s.nodeList()
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

func (s *Service) localNodeName() string {
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
		return s.localNodeName()
	}
	return ""
}

// nodeDisplay is the name users see for a box's node.
func (s *Service) nodeDisplay(n string) string {
	if n == "" {
		return s.localNodeName()
	}
	return n
}

// place puts a new box (or pool box) on a node and gives it a free
// address in that node's box network. A box that mounts drives goes where
// they are, a fork where its snapshot is; any other to the node that is
// up with the most memory not yet promised to its boxes (their types'
// memory), then the most CPUs so promised, then by name. With no node but
// the control plane's, every box is there, as on a single server.
func (s *Service) place(tx *store.Tx, b *store.Box) error { return s.placeOn(tx, b, "") }

// placeOn is place on the server named want (its name as 'paddock nodes'
// shows it), when not empty: it must be up, and where the box's drives
// and snapshot are.
func (s *Service) placeOn(tx *store.Tx, b *store.Box, want string) error {
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
		n, err := s.wanted(want, ns)
		if err != nil {
			return err
		}
		if !hasLabels(ns, n, b.NodeLabels) {
			return api.Invalid("node", "server %s does not have the labels the box asks for (%s)", want, api.LabelsText(b.NodeLabels))
		}
		// Where its data is, if anywhere, must be the same server.
		if (len(b.Mounts) > 0 || b.From != "") && len(ns) > 0 && s.Cluster != nil {
			at, err := s.chooseNode(tx, *b, ns)
			if err != nil {
				return err
			}
			if at != n {
				return api.Conflict("box %q cannot be on %s: its drives or snapshot are on %s", b.Name, s.nodeDisplay(n), s.nodeDisplay(at))
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
	return s.address(tx, b, ns)
}

// wanted is the node a user named: one that is up.
func (s *Service) wanted(want string, ns []store.Node) (string, error) {
	n := want
	if want == s.localNodeName() {
		n = ""
	} else if !slices.ContainsFunc(ns, func(x store.Node) bool { return x.Name == want }) {
		all := append([]string{s.localNodeName()}, names(ns)...)
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
		out[i] = s.nodeDisplay(n)
	}
	return out
}

// address gives a box a free address in its node's box network.
func (s *Service) address(tx *store.Tx, b *store.Box, ns []store.Node) error {
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
			return "", api.Conflict("box %q mounts drives on two servers (%s on %s, %s on %s): a box and its drives are on one server", b.Name, why, s.nodeDisplay(fixed), m.Drive, s.nodeDisplay(d.Node))
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
			return "", api.Conflict("box %q mounts %s on %s, and its snapshot is on %s", b.Name, why, s.nodeDisplay(fixed), s.nodeDisplay(n))
		}
		fixed, why = n, "snapshot"
	}
	if why != "" {
		if len(undrained(ns, []string{fixed})) == 0 {
			return "", api.Conflict("box %q goes where its %s is, on %s, which is drained ('paddock node undrain %s', or move what it needs)", b.Name, why, s.nodeDisplay(fixed), s.nodeDisplay(fixed))
		}
		if !hasLabels(ns, fixed, b.NodeLabels) {
			return "", api.Conflict("box %q goes where its %s is, on %s, which does not have the labels it asks for (%s)", b.Name, why, s.nodeDisplay(fixed), api.LabelsText(b.NodeLabels))
		}
		return fixed, nil
	}
	return s.roomiest(tx, ns, b.NodeLabels)
}

// labelled names the servers with all of labels (nil asks for none: every
// server). The control plane's own server has none.
func labelled(ns []store.Node, labels map[string]string) []string {
	out := []string{}
	if len(labels) == 0 {
		out = append(out, "")
	}
	for _, n := range ns {
		if hasLabels(ns, n.Name, labels) {
			out = append(out, n.Name)
		}
	}
	return out
}

// hasLabels says whether server name has all of labels.
func hasLabels(ns []store.Node, name string, labels map[string]string) bool {
	if len(labels) == 0 {
		return true
	}
	for _, n := range ns {
		if n.Name != name {
			continue
		}
		for k, v := range labels {
			if n.Labels[k] != v {
				return false
			}
		}
		return true
	}
	return false
}

// driveNode is the node a new drive goes on: as a box would, with no
// drives nor snapshot of its own.
func (s *Service) driveNode(tx *store.Tx) (string, error) {
	ns, err := tx.ListNodes()
	if err != nil || len(ns) == 0 || s.Cluster == nil {
		return "", err
	}
	return s.roomiest(tx, ns, nil)
}

// roomiest is the node that is up, with labels, with the most memory not
// promised to its boxes. No server with the labels is an error that names
// them; servers with them that are all down, one that names those.
func (s *Service) roomiest(tx *store.Tx, ns []store.Node, labels map[string]string) (string, error) {
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

// LabelNode replaces a server's labels (the owner's).
func (s *Service) LabelNode(ctx context.Context, name string, labels map[string]string) (api.Node, error) {
	if err := requireOwner(ctx, "label servers"); err != nil {
		return api.Node{}, err
	}
	for k, v := range labels {
		if err := api.ValidNodeLabel(k, v); err != nil {
			return api.Node{}, err
		}
	}
	if name == s.localNodeName() {
		return api.Node{}, api.Invalid("name", "the control plane's own server has no labels yet: label the servers that joined")
	}
	if _, err := s.Store.GetNode(name); errors.Is(err, store.ErrNotFound) {
		return api.Node{}, api.NotFound("node", name)
	} else if err != nil {
		return api.Node{}, err
	}
	// The swarm keeps them (as paddock.KEY on its node), then this store,
	// which placement reads.
	s.LookAtNodes(ctx)
	if c := s.Cluster; c != nil && c.Swarm != nil {
		seen, _ := c.LastSeen(name)
		if seen.SwarmID == "" {
			return api.Node{}, api.Conflict("server %s is not in the swarm, which keeps the labels: %v", name, seen.Err)
		}
		if err := c.Swarm.SwarmLabel(ctx, seen.SwarmID, labels); err != nil {
			return api.Node{}, fmt.Errorf("labelling %s in the swarm: %w", name, err)
		}
	}
	if err := s.Store.SetNodeLabels(name, labels); errors.Is(err, store.ErrNotFound) {
		return api.Node{}, api.NotFound("node", name)
	} else if err != nil {
		return api.Node{}, err
	}
	return s.nodeNamed(name)
}

// SetNodePool replaces a server's own warm pool (the owner's): how many
// ready boxes of each type are kept on that server, beside those
// warm_pool keeps wherever there is most room. A box asked for on that
// server ('new --node') or with labels only it has is then claimed from
// it. A type given 0 keeps none there. A drained or down server keeps its
// pool once it takes boxes again.
func (s *Service) SetNodePool(ctx context.Context, name string, pool map[string]int) (api.Node, error) {
	if err := requireOwner(ctx, "set a server's warm pool"); err != nil {
		return api.Node{}, err
	}
	for _, t := range slices.Sorted(maps.Keys(pool)) {
		if _, ok := s.Cfg.Types[t]; !ok {
			return api.Node{}, api.Invalid("pool", "no box type %q: the types are %s", t, strings.Join(slices.Sorted(maps.Keys(s.Cfg.Types)), ", "))
		}
		if n := pool[t]; n < 0 || n > config.MaxWarmPool {
			return api.Node{}, api.Invalid("pool", "%s=%d: give a count from 0 to %d", t, n, config.MaxWarmPool)
		}
	}
	node := name
	if name == s.localNodeName() {
		node = ""
	} else if _, err := s.Store.GetNode(name); errors.Is(err, store.ErrNotFound) {
		return api.Node{}, api.NotFound("node", name)
	} else if err != nil {
		return api.Node{}, err
	}
	if err := s.Store.SetNodePool(node, pool); err != nil {
		return api.Node{}, err
	}
	s.poolChanged()
	return s.nodeNamed(name)
}

// dropPool removes the pool boxes of a server (the pool is made again
// where boxes may go).
func (s *Service) dropPool(ctx context.Context, node string) error {
	if err := s.Store.Declare(func(tx *store.Tx) error {
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
	_, err := s.Rec.Run(ctx)
	return err
}

// DrainNode empties a server (the owner's): no new box goes there from
// now on, its pool boxes go, and its boxes and drives move (MoveBoxes) to
// the server a new box of their labels would go to: each box with the
// drives it mounts and the other boxes that mount them, in one move, and
// each drive no box mounts alone. What cannot move (labels no other
// server has) stays, and is named in the error; the rest has moved by
// then. 'paddock node undrain' takes boxes there again.
func (s *Service) DrainNode(ctx context.Context, name string) (api.Drained, error) {
	if err := requireOwner(ctx, "drain servers"); err != nil {
		return api.Drained{}, err
	}
	if name == s.localNodeName() {
		return api.Drained{}, api.Invalid("name", "%s is the control plane's own server: it is not drained", name)
	}
	if err := s.Store.SetNodeDrained(name, true); errors.Is(err, store.ErrNotFound) {
		return api.Drained{}, api.NotFound("node", name)
	} else if err != nil {
		return api.Drained{}, err
	}
	out := api.Drained{Node: name}
	if err := s.dropPool(ctx, name); err != nil {
		return out, err
	}
	boxes, err := s.Store.ListBoxes()
	if err != nil {
		return out, err
	}
	drives, err := s.Store.ListDrives()
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
		err := s.Store.Declare(func(tx *store.Tx) error {
			ns, err := tx.ListNodes()
			if err != nil {
				return err
			}
			to, err = s.roomiest(tx, ns, labels)
			return err
		})
		if err == nil {
			_, err = s.MoveBoxes(ctx, boxNames(g.boxes), g.drives, s.nodeDisplay(to))
		}
		what := strings.Join(append(boxNames(g.boxes), g.drives...), ", ")
		if err != nil {
			stuck = append(stuck, fmt.Sprintf("%s (%v)", what, err))
			continue
		}
		for _, b := range g.boxes {
			out.Moved = append(out.Moved, api.MovedBox{Box: b.Name, To: s.nodeDisplay(to)})
		}
		for _, d := range g.drives {
			out.Moved = append(out.Moved, api.MovedBox{Drive: d, To: s.nodeDisplay(to)})
		}
	}
	if len(stuck) > 0 {
		return out, api.Conflict("server %s is drained, but %d move(s) failed, and what they would move stays on it: %s", name, len(stuck), strings.Join(stuck, "; "))
	}
	s.Log.Info("node drained", "node", name, "moved", len(out.Moved))
	return out, nil
}

// UndrainNode lets new boxes go to a drained server again (the owner's).
func (s *Service) UndrainNode(ctx context.Context, name string) error {
	if err := requireOwner(ctx, "undrain servers"); err != nil {
		return err
	}
	if err := s.Store.SetNodeDrained(name, false); errors.Is(err, store.ErrNotFound) {
		return api.NotFound("node", name)
	} else if err != nil {
		return err
	}
	s.poolChanged()
	return nil
}

// RemoveNode forgets a server that holds nothing (the owner's): its boxes,
// pool boxes, drives and snapshots must be gone first. Its agent is no
// longer called; to join again it needs a new token.
func (s *Service) RemoveNode(ctx context.Context, name string) error {
	if err := requireOwner(ctx, "remove servers"); err != nil {
		return err
	}
	if name == s.localNodeName() {
		return api.Invalid("name", "%s is the control plane's own server", name)
	}
	if _, err := s.Store.GetNode(name); errors.Is(err, store.ErrNotFound) {
		return api.NotFound("node", name)
	} else if err != nil {
		return err
	}
	boxes, pool, drives, snaps, err := s.Store.NodeObjects(name)
	if err != nil {
		return err
	}
	// What was removed a moment ago may be on the server until the next
	// reconcile passes (a box's snapshot goes in the pass after its
	// container): those passes are run before the server is refused.
	for i := 0; i < 3 && boxes+drives+snaps > 0; i++ {
		if n, err := s.Store.NodeTombstones(name); err != nil || n == 0 {
			break
		}
		if _, err := s.Rec.Run(ctx); err != nil {
			return err
		}
		if boxes, pool, drives, snaps, err = s.Store.NodeObjects(name); err != nil {
			return err
		}
	}
	if boxes+drives+snaps > 0 {
		return api.Conflict("server %s still holds %d box(es), %d drive(s) and %d snapshot(s): move them first ('paddock node drain %s')", name, boxes, drives, snaps, name)
	}
	if pool > 0 {
		// Pool boxes are the server's to make again: they go with it.
		if err := s.dropPool(ctx, name); err != nil {
			return err
		}
	}
	// The server leaves by itself when it answers: its engine out of the
	// swarm, its join forgotten, its agent stopped (for good, under
	// paddock-node.service). One that does not answer is forgotten all
	// the same; it is then told to leave on its own side (logged).
	if c := s.Cluster; c != nil {
		d, _ := c.Driver.Node(name)
		if l, ok := d.(interface{ Leave(context.Context) error }); ok {
			err := c.Down(name)
			if err == nil {
				lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err = l.Leave(lctx)
				cancel()
			}
			if err != nil {
				s.Log.Warn("a removed server did not leave by itself: on it, run 'docker swarm leave', stop paddock-node.service and remove /var/lib/paddock/node", "node", name, "err", err)
			}
		}
	}
	// Out of the swarm first: a server the swarm still has is not
	// forgotten. Every swarm node at its address goes (one that left the
	// swarm and joined again by hand is there twice: the old one down).
	if c := s.Cluster; c != nil && c.Swarm != nil {
		n, err := s.Store.GetNode(name)
		if err != nil {
			return err
		}
		host, _, _ := net.SplitHostPort(n.Addr)
		// A swarm that does not answer (or a control plane that manages
		// none) keeps no one from being forgotten: it is logged.
		sns, err := c.Swarm.SwarmNodes(ctx)
		if err != nil {
			s.Log.Warn("removing a server: the swarm does not answer; its entry, if any, stays in 'docker node ls'", "node", name, "err", err)
		}
		for _, sn := range sns {
			if sn.Addr == host {
				if err := c.Swarm.SwarmRemove(ctx, sn.ID); err != nil {
					return fmt.Errorf("taking %s out of the swarm: %w", name, err)
				}
			}
		}
	}
	if err := s.Store.RemoveNode(name); err != nil {
		return err
	}
	if s.Cluster != nil {
		s.Cluster.Driver.RemoveNode(name)
		s.Cluster.Firewall.RemoveNode(name)
	}
	s.Log.Info("node removed", "node", name)
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
