package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver/cluster"
	"github.com/paddock-dev/paddock/appliance/driver/docker"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Cluster is what the control plane keeps of the servers it spans: the
// drivers and egress rules of every node (its own server is the node ""),
// the cluster's authority, and what each node last said of itself. A
// server with no node but its own keeps all of this and works exactly as
// a single server: every box is on node "".
type Cluster struct {
	Driver   *cluster.Driver
	Firewall *cluster.Firewall
	// Dir keeps the authority (ca.pem, ca.key).
	Dir string
	// Name is the control plane's own server's name (its host name).
	Name string
	// URL is the control plane's address a joining server calls.
	URL string
	// Local says what the control plane's own server has.
	Local func(ctx context.Context) (Info, error)
	// Swarm is the control plane's engine as the manager of the cluster's
	// swarm: membership, the servers' health (their heartbeats) and their
	// labels are Swarm's. A server joins Paddock and the swarm together.
	Swarm Swarm
	// Log is where the looks' findings are logged (nil: nowhere).
	Log *slog.Logger

	mu     sync.Mutex
	ca     *CA
	caller tls.Certificate
	// seen is what each node said at its last look (Watch), by name.
	seen map[string]Seen
	// overclaimed is the nodes whose agents said they have more than the
	// swarm says (logged once each).
	overclaimed map[string]bool
}

// Seen is what a look found of a server.
type Seen struct {
	Info Info
	// Err says why the server is down (nil: up).
	Err error
	At  time.Time
	// SwarmID and SwarmState are the swarm's node ID and its word on it;
	// SwarmErr is set when that word is that the node is not there.
	SwarmID, SwarmState string
	SwarmErr            error
	// SwarmCPUs and SwarmMemory are what the swarm says the server has
	// (0: it does not say).
	SwarmCPUs   int
	SwarmMemory int64
	// AgentErr is the agent's not answering.
	AgentErr error
	// DownSince is when a look first found it down (zero while up).
	DownSince time.Time
}

// Swarm is the engine calls the control plane makes of the swarm it
// manages (docker.Driver has them).
type Swarm interface {
	SwarmManage(ctx context.Context, ip string) (clusterID, manager string, err error)
	SwarmWorkerToken(ctx context.Context, rotate bool) (string, error)
	SwarmNodes(ctx context.Context) ([]docker.SwarmNode, error)
	SwarmLabel(ctx context.Context, id string, labels map[string]string) error
	SwarmRemove(ctx context.Context, id string) error
}

// Manage makes the control plane's engine the swarm's manager (once; the
// engine keeps it) and answers how a server joins it.
func (c *Cluster) Manage(ctx context.Context, rotate bool) (api.SwarmJoin, error) {
	if c.Swarm == nil {
		return api.SwarmJoin{}, api.Conflict("this server has no swarm to take nodes into")
	}
	host, _, err := net.SplitHostPort(c.URL)
	if err != nil || net.ParseIP(host) == nil || net.ParseIP(host).IsUnspecified() {
		return api.SwarmJoin{}, api.Conflict("cluster_listen %q: give IP:PORT with this server's private address, where the other servers reach it", c.URL)
	}
	id, manager, err := c.Swarm.SwarmManage(ctx, host)
	if err != nil {
		return api.SwarmJoin{}, err
	}
	tok, err := c.Swarm.SwarmWorkerToken(ctx, rotate)
	if err != nil {
		return api.SwarmJoin{}, err
	}
	return api.SwarmJoin{ClusterID: id, Managers: []string{manager}, Token: tok}, nil
}

// JoinTokenLife is how long a join token lasts.
const JoinTokenLife = time.Hour

func (c *Cluster) Authority() (*CA, tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ca == nil {
		ca, err := LoadCA(c.Dir)
		if err != nil {
			return nil, tls.Certificate{}, err
		}
		cert, err := ca.Issue(ControlPlane)
		if err != nil {
			return nil, tls.Certificate{}, err
		}
		c.ca, c.caller = ca, cert
	}
	return c.ca, c.caller, nil
}

// JoinTLS is the cluster listener's TLS (the authority is made the first
// time).
func (c *Cluster) JoinTLS() (*tls.Config, error) {
	ca, caller, err := c.Authority()
	if err != nil {
		return nil, err
	}
	return ca.JoinTLS(caller), nil
}

// Attach makes a joined node reachable: its driver and its egress rules
// go through its agent.
func (c *Cluster) Attach(n store.Node) error {
	ca, caller, err := c.Authority()
	if err != nil {
		return err
	}
	subnet, err := netip.ParsePrefix(n.Subnet)
	if err != nil {
		return fmt.Errorf("node %s: its subnet %q: %w", n.Name, n.Subnet, err)
	}
	var addr netip.Addr
	if ap, err := netip.ParseAddrPort(n.Addr); err == nil {
		addr = ap.Addr().Unmap()
	}
	// Its agent must answer with the certificate it was given at its
	// join, not only one the authority signed for its name.
	pin, err := PinOf(n.Cert)
	if err != nil {
		return fmt.Errorf("node %s: its certificate: %w", n.Name, err)
	}
	r := NewRemote(n.Name, n.Addr, ca.ClientConfig(caller, n.Name, pin))
	c.Driver.SetNode(n.Name, r)
	c.Firewall.SetNode(n.Name, subnet, addr, r)
	return nil
}

// Look asks the swarm how the servers are (Swarm's heartbeats), and
// every node's agent (of ns, the joined ones, and the control plane's own
// server) what it has, and keeps the answers for placement and 'paddock
// nodes'. A server is down while the swarm says so, or while its agent
// does not answer (its boxes cannot be reached then either).
func (c *Cluster) Look(ctx context.Context, ns []store.Node) {
	all := append([]store.Node{{}}, ns...)
	began := time.Now()
	var wg sync.WaitGroup
	seen := make([]Seen, len(all))
	var swarmNodes []docker.SwarmNode
	var swarmErr error
	if c.Swarm != nil && len(ns) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			swarmNodes, swarmErr = c.Swarm.SwarmNodes(cctx)
		}()
	}
	for i, n := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			var info Info
			var err error
			if n.Name == "" {
				if c.Local != nil {
					info, err = c.Local(cctx)
				}
			} else if d, ok := c.Driver.Node(n.Name); !ok {
				err = fmt.Errorf("not attached")
			} else if r, ok := d.(interface {
				Info(context.Context) (Info, error)
			}); ok {
				info, err = r.Info(cctx)
				if err != nil {
					err = fmt.Errorf("its agent: %w", err)
				}
			} else {
				err = fmt.Errorf("node %s does not say what it has", n.Name)
			}
			seen[i] = Seen{Info: info, Err: err, At: began}
			if n.Name != "" {
				seen[i].AgentErr = err
			}
		}()
	}
	wg.Wait()
	if c.Swarm != nil {
		for i, n := range all {
			if n.Name == "" {
				// The manager: its engine answered for it above.
				if len(ns) > 0 {
					sn, _ := inSwarm(store.Node{Addr: c.URL}, swarmNodes, swarmErr)
					seen[i].SwarmID, seen[i].SwarmState = sn.ID, sn.State
				}
				continue
			}
			sn, err := inSwarm(n, swarmNodes, swarmErr)
			seen[i].SwarmID, seen[i].SwarmState = sn.ID, sn.State
			seen[i].SwarmCPUs, seen[i].SwarmMemory = sn.CPUs, sn.MemoryBytes
			if err == nil && !maps.Equal(sn.Labels, n.Labels) {
				// A server that joined the swarm again is a new swarm
				// node: it gets its labels back.
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				if lerr := c.Swarm.SwarmLabel(cctx, sn.ID, n.Labels); lerr != nil {
					c.log().Warn("node labels into the swarm", "node", n.Name, "err", lerr)
				}
				cancel()
			}
			if err != nil {
				// Swarm's word comes first: the agent may answer from a
				// server the swarm has lost.
				seen[i].Err = err
				if swarmErr == nil {
					// Not a swarm that does not answer: one that says.
					seen[i].SwarmErr = err
				}
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]Seen{}
	}
	for i, n := range all {
		// Two looks at once (the loop's and a request's): the one that
		// began last has the last word.
		prev, ok := c.seen[n.Name]
		if ok && prev.At.After(began) {
			continue
		}
		if seen[i].Err != nil {
			seen[i].DownSince = began
			if ok && prev.Err != nil && !prev.DownSince.IsZero() {
				seen[i].DownSince = prev.DownSince
			}
		}
		c.seen[n.Name] = seen[i]
		if cpus, mem, over := seen[i].Capacity(); over && !c.overclaimed[n.Name] {
			if c.overclaimed == nil {
				c.overclaimed = map[string]bool{}
			}
			c.overclaimed[n.Name] = true
			c.log().Warn("a node's agent says it has more than the swarm says: placing by the swarm's word", "node", n.Name,
				"agent_cpus", seen[i].Info.CPUs, "agent_memory", seen[i].Info.MemoryBytes, "cpus", cpus, "memory", mem)
		}
		if rs := seen[i].Info.Routes; len(rs) > 0 && (!ok || !slices.Equal(prev.Info.Routes, rs)) {
			c.log().Error("routes of the server take box addresses away from its bridge: its boxes there cannot be reached", "node", n.Name, "routes", strings.Join(rs, "; "))
		}
		// A node that went down: the calls in flight to it end now, not
		// when TCP gives up on a link that was cut.
		if n.Name != "" && seen[i].Err != nil && (!ok || prev.Err == nil) {
			if d, ok := c.Driver.Node(n.Name); ok {
				if r, ok := d.(interface{ Sever() }); ok {
					r.Sever()
				}
			}
			c.log().Warn("node down", "node", n.Name, "err", seen[i].Err)
		}
	}
}

// Capacity is what placement weighs of a server: what its agent says it
// has, but never more than the swarm says (its engine's own word to the
// manager); over says the agent said more. A node taken over may answer
// anything, and one that claimed all the memory there is would get every
// new box and the warm pool.
func (ns Seen) Capacity() (cpus int, memory int64, over bool) {
	cpus, memory = ns.Info.CPUs, ns.Info.MemoryBytes
	if ns.SwarmCPUs > 0 && cpus > ns.SwarmCPUs {
		cpus, over = ns.SwarmCPUs, true
	}
	if ns.SwarmMemory > 0 && memory > ns.SwarmMemory {
		memory, over = ns.SwarmMemory, true
	}
	return cpus, memory, over
}

// inSwarm is the swarm's node of a server (the one that joined with the
// server's address; a ready one before others), and an error when the
// swarm does not have it ready.
func inSwarm(n store.Node, sns []docker.SwarmNode, listErr error) (docker.SwarmNode, error) {
	if listErr != nil {
		return docker.SwarmNode{}, fmt.Errorf("the swarm does not answer: %w", listErr)
	}
	host, _, _ := net.SplitHostPort(n.Addr)
	var found *docker.SwarmNode
	for i, sn := range sns {
		if sn.Addr != host {
			continue
		}
		if found == nil || (found.State != "ready" && sn.State == "ready") {
			found = &sns[i]
		}
	}
	switch {
	case found == nil:
		return docker.SwarmNode{}, fmt.Errorf("the swarm has no server at %s (its engine is not in the swarm)", host)
	case found.State != "ready":
		why := found.State
		if found.Message != "" {
			why += ": " + found.Message
		}
		return *found, fmt.Errorf("the swarm says %s", why)
	}
	return *found, nil
}

// Down is why a node is down at the last look: the swarm's word that
// it is down or gone, or its agent not answering. nil while it is up, and
// while the swarm does not answer (that says nothing of the node). A
// node down is not called until a look finds it up: a call on a link that
// was cut would wait for TCP to give up.
func (c *Cluster) Down(name string) error {
	seen, ok := c.LastSeen(name)
	if !ok {
		return nil
	}
	if seen.SwarmErr != nil {
		return seen.SwarmErr
	}
	return seen.AgentErr
}

func (c *Cluster) LastSeen(name string) (Seen, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ns, ok := c.seen[name]
	return ns, ok
}

// AttachAll makes every joined node of ns reachable (at start), and a
// look's word on each node (Look) the driver's: a server the swarm says
// is down is down for the reconciler too.
func (c *Cluster) AttachAll(ns []store.Node) error {
	c.Driver.Down = c.Down
	c.Firewall.Down = c.Down
	for _, n := range ns {
		if err := c.Attach(n); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) log() *slog.Logger {
	if c.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Log
}
