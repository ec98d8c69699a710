package api

import (
	"strings"
	"time"
)

// Drained is what 'paddock node drain' did: the boxes that moved, and
// where to.
type Drained struct {
	Node  string     `json:"node"`
	Moved []MovedBox `json:"moved"`
}

// MovedBox is a box, or a drive no box mounts, that a drain moved.
type MovedBox struct {
	Box   string `json:"box,omitempty"`
	Drive string `json:"drive,omitempty"`
	To    string `json:"to"`
}

// NodeLost is what 'paddock node lost' (POST /v1/nodes/NAME/lost) did: a
// server the owner says is gone is forgotten, and what it held is
// declared on the others.
type NodeLost struct {
	Node  string    `json:"node"`
	Boxes []LostBox `json:"boxes"`
	// Drives were on it: each is declared, empty, where its boxes went
	// (or where a new drive would go); what it held is lost.
	Drives []MovedBox `json:"drives"`
	// Snapshots were on it and never shipped to the object store: they
	// are lost, and forgotten.
	Snapshots []string `json:"snapshots"`
}

// LostBox is a box of a lost server, declared on another: made there
// from its newest shipped snapshot (From, taken at Taken), or from its
// image when it has none (From empty); Lost says, in words, what of it
// is gone (its note says the same).
type LostBox struct {
	Box   string     `json:"box"`
	To    string     `json:"to"`
	From  string     `json:"from,omitempty"`
	Taken *time.Time `json:"taken,omitempty"`
	Lost  string     `json:"lost"`
}

// MovePost moves a box, with the drives it mounts, to another server
// (POST /v1/boxes/NAME/move), or a drive (POST /v1/drives/NAME/move).
type MovePost struct {
	// Node is the server's name, as GET /v1/nodes says it.
	Node string `json:"node"`
	// With are other boxes of the same server that move in the same go:
	// a drive moves with every box that mounts it, or not at all.
	With []string `json:"with,omitempty"`
	// FromStore makes the box on Node from its newest snapshot in the
	// object store, for a box whose server is down ('paddock start BOX
	// --node N'): what it wrote after that snapshot is lost (its note
	// says so), and its container there is removed once that server
	// answers again. Nothing else moves with it.
	FromStore bool `json:"from_store,omitempty"`
}

// NodeJoin is a one-time join token for a server (POST /v1/nodes/joins,
// the owner's): Command is what to run on the new server.
type NodeJoin struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	// CASHA256 is the cluster authority's fingerprint: the joining server
	// trusts that authority and no other.
	CASHA256 string `json:"ca_sha256"`
	Command  string `json:"command"`
}

// NodeJoinRequest is what a server sends to join (POST /v1/nodes/join,
// authenticated by its token alone).
type NodeJoinRequest struct {
	Token string `json:"token"`
	// Name is the name the server asks for (its host name); the answer
	// says the one it got.
	Name string `json:"name"`
	// Addr is where its agent answers (host:port, a private address the
	// control plane reaches).
	Addr string `json:"addr"`
	// PublicKey is its agent's public key (PEM, PKIX): the private half
	// never leaves it.
	PublicKey string `json:"public_key"`
}

// NodeJoined is what a server that joined needs to serve as a node.
type NodeJoined struct {
	Name string `json:"name"`
	// Cert is its agent's certificate, CA the cluster authority's (PEM).
	Cert string `json:"cert"`
	CA   string `json:"ca"`
	// Subnet is its box network; Instance names its engine objects and
	// its nftables table.
	Subnet   string `json:"subnet"`
	Instance string `json:"instance"`
	// Caller is the name in the certificate of the control plane, the one
	// caller its agent answers.
	Caller string `json:"caller"`
	// Swarm is what its engine joins the cluster's swarm with: sent only
	// to a server that showed a valid join token, over the TLS its join
	// command pinned.
	Swarm SwarmJoin `json:"swarm"`
}

// SwarmJoin is how an engine joins the cluster's swarm: the swarm's ID,
// its manager's address (IP:2377) and a worker token, which the next
// 'paddock node add' replaces.
type SwarmJoin struct {
	ClusterID string   `json:"cluster_id"`
	Managers  []string `json:"managers"`
	Token     string   `json:"token"`
}

// Node is a server of this Paddock (GET /v1/nodes, the owner's).
type Node struct {
	Name string `json:"name"`
	// ControlPlane marks the server paddockd runs on.
	ControlPlane bool              `json:"control_plane,omitempty"`
	Addr         string            `json:"addr,omitempty"`
	Subnet       string            `json:"subnet"`
	Labels       map[string]string `json:"labels"`
	// State is "up", or "down" with Error saying why: Swarm's word on the
	// server (its heartbeats), or its agent not answering.
	State string `json:"state"`
	// Swarm is the swarm's node ID and its word on the server (ready,
	// down, unknown); empty before the server is in the swarm.
	SwarmID string `json:"swarm_id,omitempty"`
	// Drained: no new box goes there ('paddock node drain').
	Drained    bool   `json:"drained,omitempty"`
	SwarmState string `json:"swarm_state,omitempty"`
	Error      string `json:"error,omitempty"`
	// Routes are the server's routes, come since paddockd started,
	// that take addresses of its box network away from its bridge
	// ("ADDR goes by ROUTE"): its boxes there cannot be reached until
	// they are removed.
	Routes []string `json:"routes,omitempty"`
	Boxes  int      `json:"boxes"`
	Pool   int      `json:"pool"`
	// OwnPool is the server's own warm pool: pool boxes of each type
	// kept on it ('paddock node pool'), beside warm_pool's.
	OwnPool     map[string]int `json:"own_pool,omitempty"`
	Drives      int            `json:"drives"`
	CPUs        int            `json:"cpus,omitempty"`
	MemoryBytes int64          `json:"memory_bytes,omitempty"`
	MemoryFree  int64          `json:"memory_free,omitempty"`
	DiskBytes   int64          `json:"disk_bytes,omitempty"`
	DiskFree    int64          `json:"disk_free,omitempty"`
	Joined      time.Time      `json:"joined,omitempty"`
}

// StateText is how a server's state reads in a list: up or down, drained,
// why it is down, and the box addresses its routes take elsewhere.
func (n Node) StateText() string {
	s := n.State
	if n.Drained {
		s += ", drained"
	}
	if n.Error != "" {
		s += ": " + n.Error
	}
	if len(n.Routes) > 0 {
		s += "; box addresses routed elsewhere, unreachable: " + strings.Join(n.Routes, "; ")
	}
	return s
}

// NodePool replaces a server's own warm pool (PUT /v1/nodes/NAME/pool):
// how many ready boxes of each type are kept on it (0: none).
type NodePool struct {
	Pool map[string]int `json:"pool"`
}

// NodeLabels replaces a server's labels (PUT /v1/nodes/NAME/labels).
type NodeLabels struct {
	Labels map[string]string `json:"labels"`
}
