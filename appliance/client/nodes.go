package client

import (
	"context"
	"github.com/paddock-dev/paddock/appliance/api"
)

// DrainNode drains a server: its boxes move to others.
func (c *Client) DrainNode(ctx context.Context, name string) (api.Drained, error) {
	var d api.Drained
	return d, c.do(ctx, "POST", "/nodes/"+esc(name)+"/drain", nil, &d)
}

// UndrainNode lets new boxes go to a drained server again.
func (c *Client) UndrainNode(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/nodes/"+esc(name)+"/drain", nil, nil)
}

// MoveBox moves a box to another server.
func (c *Client) MoveBox(ctx context.Context, name, node string, with ...string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "POST", "/boxes/"+esc(name)+"/move", api.MovePost{Node: node, With: with}, &b)
}

// StartElsewhere makes a box whose server is down on server node, from
// its newest snapshot in the object store, and starts it.
func (c *Client) StartElsewhere(ctx context.Context, name, node string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "POST", "/boxes/"+esc(name)+"/move", api.MovePost{Node: node, FromStore: true}, &b)
}

// MoveDrive moves a drive, and the boxes with (all those that mount it),
// to another server.
func (c *Client) MoveDrive(ctx context.Context, name, node string, with ...string) (api.Drive, error) {
	var d api.Drive
	return d, c.do(ctx, "POST", "/drives/"+esc(name)+"/move", api.MovePost{Node: node, With: with}, &d)
}

// Nodes lists the servers boxes are placed on (the owner's).
func (c *Client) Nodes(ctx context.Context) ([]api.Node, error) {
	var ns []api.Node
	return ns, c.do(ctx, "GET", "/nodes", nil, &ns)
}

// NodeJoin makes a one-time join token and its command (the owner's).
func (c *Client) NodeJoin(ctx context.Context) (api.NodeJoin, error) {
	var j api.NodeJoin
	return j, c.do(ctx, "POST", "/nodes/joins", nil, &j)
}

// LabelNode replaces a server's labels (the owner's).
func (c *Client) LabelNode(ctx context.Context, name string, labels map[string]string) (api.Node, error) {
	var n api.Node
	return n, c.do(ctx, "PUT", "/nodes/"+esc(name)+"/labels", api.NodeLabels{Labels: labels}, &n)
}

// SetNodePool replaces a server's own warm pool (the owner's).
func (c *Client) SetNodePool(ctx context.Context, name string, pool map[string]int) (api.Node, error) {
	var n api.Node
	return n, c.do(ctx, "PUT", "/nodes/"+esc(name)+"/pool", api.NodePool{Pool: pool}, &n)
}

// RemoveNode forgets a server that holds nothing (the owner's).
func (c *Client) RemoveNode(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/nodes/"+esc(name), nil, nil)
}

// LoseNode declares a server that is gone for good lost: its boxes are
// made again on the others, and it is forgotten.
func (c *Client) LoseNode(ctx context.Context, name string) (api.NodeLost, error) {
	var l api.NodeLost
	return l, c.do(ctx, "POST", "/nodes/"+esc(name)+"/lost", nil, &l)
}
