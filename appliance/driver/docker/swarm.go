package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"
)

// The engine's Swarm mode is the cluster layer under several servers:
// membership, join tokens, node identity, heartbeats and node health, and
// node labels are Swarm's. Boxes are not Swarm services: they stay plain
// containers made through their server's own engine (DESIGN.md, "Growing
// past one machine").

// SwarmPort is where a Swarm manager takes joins and its workers' heartbeats.
const SwarmPort = "2377"

// SwarmLabelPrefix marks the node labels Paddock keeps in the swarm; other
// labels on a swarm node are left as they are.
const SwarmLabelPrefix = "paddock."

// SwarmNode is a server as the swarm sees it.
type SwarmNode struct {
	ID       string
	Hostname string
	// Addr is the address it joined with (its private address).
	Addr string
	// State is Swarm's word on it: ready, down, unknown or disconnected.
	State   string
	Message string
	Manager bool
	// Labels are its Paddock labels (without SwarmLabelPrefix).
	Labels map[string]string
	// CPUs and MemoryBytes are what its engine told the swarm it has.
	CPUs        int
	MemoryBytes int64
}

// Connect connects to the engine at host (the environment's when empty)
// for its swarm calls alone: no box is made through it.
func Connect(ctx context.Context, host string) (*Driver, error) {
	opts := []client.Opt{client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	} else {
		opts = append(opts, client.WithHostFromEnv())
	}
	c, err := client.New(opts...)
	if err != nil {
		return nil, err
	}
	if _, err := c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		c.Close()
		return nil, fmt.Errorf("docker engine does not answer: %w", err)
	}
	d := &Driver{c: c}
	d.bgCtx, d.bgCancel = context.WithCancel(context.Background())
	return d, nil
}

// SwarmState is this engine's place in a swarm: "inactive" when it is in
// none, and the swarm's ID when it is.
func (d *Driver) SwarmState(ctx context.Context) (state, clusterID string, manager bool, err error) {
	r, err := d.c.Info(ctx, client.InfoOptions{})
	if err != nil {
		return "", "", false, err
	}
	s := r.Info.Swarm
	if s.Cluster != nil {
		clusterID = s.Cluster.ID
	}
	if s.Error != "" && s.LocalNodeState == swarm.LocalNodeStateError {
		return string(s.LocalNodeState), clusterID, false, errors.New(s.Error)
	}
	return string(s.LocalNodeState), clusterID, s.ControlAvailable, nil
}

// SwarmManage makes this engine the manager of a swarm, advertised at ip,
// unless it manages one already; it answers the swarm's ID and the
// manager's address (IP:2377). An engine that is a worker of another
// swarm, or refuses Swarm mode (its live-restore), is an error that says so.
func (d *Driver) SwarmManage(ctx context.Context, ip string) (clusterID, manager string, err error) {
	state, id, isManager, err := d.SwarmState(ctx)
	if err != nil {
		return "", "", err
	}
	addr := net.JoinHostPort(ip, SwarmPort)
	switch {
	case state == string(swarm.LocalNodeStateActive) && isManager:
		r, err := d.c.Info(ctx, client.InfoOptions{})
		if err != nil {
			return "", "", err
		}
		if a := r.Info.Swarm.NodeAddr; a != "" && a != ip {
			return "", "", fmt.Errorf("this engine manages a swarm advertised at %s, not at %s (cluster_listen's address)", a, ip)
		}
		return id, addr, nil
	case state == string(swarm.LocalNodeStateActive):
		return "", "", fmt.Errorf("this engine is a worker of swarm %s: the control plane's engine must manage the swarm ('docker swarm leave' it first)", id)
	case state != string(swarm.LocalNodeStateInactive):
		return "", "", fmt.Errorf("this engine's swarm is %s: see 'docker info'", state)
	}
	if _, err := d.c.SwarmInit(ctx, client.SwarmInitOptions{ListenAddr: addr, AdvertiseAddr: addr}); err != nil {
		if strings.Contains(err.Error(), "live-restore") {
			return "", "", fmt.Errorf("the engine runs with live-restore, which Swarm mode refuses: take \"live-restore\" out of /etc/docker/daemon.json and restart docker (%v)", err)
		}
		return "", "", fmt.Errorf("making this engine a swarm manager at %s: %w", addr, err)
	}
	_, id, _, err = d.SwarmState(ctx)
	return id, addr, err
}

// SwarmWorkerToken is the token a worker joins this engine's swarm with;
// rotate makes a new one first, so that every token handed out before no
// longer lets anyone in.
func (d *Driver) SwarmWorkerToken(ctx context.Context, rotate bool) (string, error) {
	r, err := d.c.SwarmInspect(ctx, client.SwarmInspectOptions{})
	if err != nil {
		return "", err
	}
	if rotate {
		if _, err := d.c.SwarmUpdate(ctx, client.SwarmUpdateOptions{Version: r.Swarm.Version, Spec: r.Swarm.Spec, RotateWorkerToken: true}); err != nil {
			return "", fmt.Errorf("rotating the swarm's worker token: %w", err)
		}
		if r, err = d.c.SwarmInspect(ctx, client.SwarmInspectOptions{}); err != nil {
			return "", err
		}
	}
	return r.Swarm.JoinTokens.Worker, nil
}

// SwarmJoin makes this engine a worker of the swarm that managers runs,
// advertised at ip. An engine already in that swarm (clusterID) is left
// as it is; one in another swarm is an error.
func (d *Driver) SwarmJoin(ctx context.Context, managers []string, token, ip, clusterID string) error {
	state, id, _, err := d.SwarmState(ctx)
	if err != nil {
		return err
	}
	if state == string(swarm.LocalNodeStateActive) && clusterID != "" && id == clusterID {
		return nil
	}
	if state != string(swarm.LocalNodeStateInactive) {
		return fmt.Errorf("this server's engine is in another swarm (%s, %s): leave it with 'docker swarm leave' first", id, state)
	}
	addr := net.JoinHostPort(ip, SwarmPort)
	if _, err := d.c.SwarmJoin(ctx, client.SwarmJoinOptions{ListenAddr: addr, AdvertiseAddr: addr, RemoteAddrs: managers, JoinToken: token}); err != nil {
		return fmt.Errorf("joining the swarm at %s: %w", strings.Join(managers, ","), err)
	}
	return nil
}

// SwarmLeave takes this engine out of its swarm (a worker's leave).
func (d *Driver) SwarmLeave(ctx context.Context) error {
	_, err := d.c.SwarmLeave(ctx, client.SwarmLeaveOptions{Force: true})
	return err
}

// SwarmNodes lists the swarm's nodes (a manager's view).
func (d *Driver) SwarmNodes(ctx context.Context) ([]SwarmNode, error) {
	r, err := d.c.NodeList(ctx, client.NodeListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]SwarmNode, 0, len(r.Items))
	for _, n := range r.Items {
		sn := SwarmNode{ID: n.ID, Hostname: n.Description.Hostname, Addr: n.Status.Addr, State: string(n.Status.State),
			Message: n.Status.Message, Manager: n.ManagerStatus != nil, Labels: map[string]string{},
			CPUs: int(n.Description.Resources.NanoCPUs / 1e9), MemoryBytes: n.Description.Resources.MemoryBytes}
		if n.ManagerStatus != nil && (sn.Addr == "" || sn.Addr == "0.0.0.0") {
			sn.Addr, _, _ = net.SplitHostPort(n.ManagerStatus.Addr)
		}
		for k, v := range n.Spec.Labels {
			if rest, ok := strings.CutPrefix(k, SwarmLabelPrefix); ok {
				sn.Labels[rest] = v
			}
		}
		out = append(out, sn)
	}
	return out, nil
}

// SwarmLabel replaces a swarm node's Paddock labels with labels.
func (d *Driver) SwarmLabel(ctx context.Context, id string, labels map[string]string) error {
	r, err := d.c.NodeInspect(ctx, id, client.NodeInspectOptions{})
	if err != nil {
		return err
	}
	spec := r.Node.Spec
	next := map[string]string{}
	for k, v := range spec.Labels {
		if !strings.HasPrefix(k, SwarmLabelPrefix) {
			next[k] = v
		}
	}
	for k, v := range labels {
		next[SwarmLabelPrefix+k] = v
	}
	spec.Labels = next
	_, err = d.c.NodeUpdate(ctx, id, client.NodeUpdateOptions{Version: r.Node.Version, Spec: spec})
	return err
}

// SwarmRemove takes a node out of the swarm, down or not.
func (d *Driver) SwarmRemove(ctx context.Context, id string) error {
	_, err := d.c.NodeRemove(ctx, id, client.NodeRemoveOptions{Force: true})
	return err
}
