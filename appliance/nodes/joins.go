package nodes

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/node"
	"github.com/paddock-dev/paddock/appliance/store"
)

var nodeName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// JoinToken makes a one-time token that lets one server join (the
// owner's).
func (nd *Nodes) JoinToken(ctx context.Context) (api.NodeJoin, error) {
	if err := caller.RequireOwner(ctx, "add servers"); err != nil {
		return api.NodeJoin{}, err
	}
	if nd.cluster == nil || nd.cluster.URL == "" {
		return api.NodeJoin{}, api.Conflict("this server takes no nodes: set cluster_listen to IP:PORT on its private network, where the other servers reach it, and restart paddockd")
	}
	ca, _, err := nd.cluster.Authority()
	if err != nil {
		return api.NodeJoin{}, err
	}
	// The swarm is made with the first token; each new token comes with
	// a new swarm worker token, so that the one sent to the last server
	// that joined lets no one else in.
	if _, err := nd.cluster.Manage(ctx, true); err != nil {
		return api.NodeJoin{}, err
	}
	tok, _ := auth.NewToken()
	tok = "pdkjoin_" + strings.TrimPrefix(tok, "pdk_")
	exp := nd.core.Time().Add(node.JoinTokenLife)
	if err := nd.store.AddJoinToken(auth.Hash(tok), exp); err != nil {
		return api.NodeJoin{}, err
	}
	fp := ca.Fingerprint()
	return api.NodeJoin{
		Token: tok, ExpiresAt: exp, CASHA256: fp,
		Command: fmt.Sprintf("sudo paddockd node --join %s --token %s --ca-sha256 %s", nd.cluster.URL, tok, fp),
	}, nil
}

// ErrJoin is every refusal of a join token: unknown, spent and expired
// are not told apart.
var ErrJoin = &api.Error{Code: api.CodeUnauthorized, Message: "the join token is not valid (unknown, used, or expired): make a new one with 'paddock node add'"}

// Join lets a server in with a join token: it gets a name, a box
// network, and a certificate for its agent's key; from then on boxes may
// be placed on it.
func (nd *Nodes) Join(ctx context.Context, req api.NodeJoinRequest) (api.NodeJoined, error) {
	c := nd.cluster
	if c == nil {
		return api.NodeJoined{}, ErrJoin
	}
	// The token first: nothing (the swarm above all, which opens its
	// ports once made) is done for a request without a good one.
	if !strings.HasPrefix(req.Token, "pdkjoin_") {
		return api.NodeJoined{}, nd.joinRefused(req, ErrJoin)
	}
	if ok, err := nd.store.JoinTokenValid(auth.Hash(req.Token)); err != nil {
		return api.NodeJoined{}, err
	} else if !ok {
		return api.NodeJoined{}, nd.joinRefused(req, ErrJoin)
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
	subnet, err := nd.freeSubnet()
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
	n := store.Node{Name: name, Addr: req.Addr, Subnet: subnet.String(), Joined: nd.core.Time(), Cert: string(certPEM)}
	switch err := nd.store.JoinNode(auth.Hash(req.Token), n); {
	case errors.Is(err, store.ErrNotFound):
		return api.NodeJoined{}, nd.joinRefused(req, ErrJoin)
	case errors.Is(err, store.ErrConflict):
		return api.NodeJoined{}, api.Conflict("a node named %q has joined already (the token is spent: make a new one)", name)
	case err != nil:
		return api.NodeJoined{}, err
	}
	if err := c.Attach(n); err != nil {
		return api.NodeJoined{}, err
	}
	nd.log.Info("node joined", "node", name, "addr", req.Addr, "subnet", subnet)
	detail, _ := json.Marshal(map[string]any{"addr": req.Addr, "subnet": subnet.String()})
	nd.core.Record(audit.Entry{User: "paddockd", Via: "cluster", Action: "node.join", Object: "nodes/" + name, Result: "ok", Detail: detail})
	return api.NodeJoined{Name: name, Cert: string(certPEM), CA: string(ca.PEM), Subnet: subnet.String(), Instance: nd.cfg.Instance, Caller: node.ControlPlane, Swarm: sw}, nil
}

// joinRefused writes a refused join to the audit log, and returns err.
func (nd *Nodes) joinRefused(req api.NodeJoinRequest, err error) error {
	detail, _ := json.Marshal(map[string]any{"addr": req.Addr, "name": req.Name})
	nd.core.Record(audit.Entry{User: "paddockd", Via: "cluster", Action: "node.join", Object: "nodes/" + req.Name, Result: err.Error(), Detail: detail})
	return err
}

// freeSubnet is the lowest /24 of node_subnets no node has.
func (nd *Nodes) freeSubnet() (netip.Prefix, error) {
	pool, err := netip.ParsePrefix(nd.cfg.NodeSubnets)
	if err != nil || !pool.Addr().Is4() || pool.Bits() > 24 {
		return netip.Prefix{}, fmt.Errorf("node_subnets %q: give an IPv4 prefix of /24 or larger", nd.cfg.NodeSubnets)
	}
	if nd.subnet.IsValid() && pool.Overlaps(nd.subnet) {
		return netip.Prefix{}, fmt.Errorf("node_subnets %s overlaps the box network %s", pool, nd.subnet)
	}
	ns, err := nd.store.ListNodes()
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
