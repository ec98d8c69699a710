package client

import (
	"context"
	"github.com/paddock-dev/paddock/appliance/api"
)

// Snapshot snapshots a box.
func (c *Client) Snapshot(ctx context.Context, name string) (api.Snapshot, error) {
	var s api.Snapshot
	return s, c.do(ctx, "POST", "/boxes/"+esc(name)+"/snapshots", nil, &s)
}

// Snapshots lists a box's snapshots.
func (c *Client) Snapshots(ctx context.Context, name string) ([]api.Snapshot, error) {
	var s []api.Snapshot
	return s, c.do(ctx, "GET", "/boxes/"+esc(name)+"/snapshots", nil, &s)
}

// Restore brings back a snapshot.
func (c *Client) Restore(ctx context.Context, name, snapshot string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "POST", "/boxes/"+esc(name)+"/restore", api.RestorePost{Snapshot: snapshot}, &b)
}
