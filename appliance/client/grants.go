package client

import (
	"context"
	"github.com/paddock-dev/paddock/appliance/api"
)

// Grants lists who a box is shared with.
func (c *Client) Grants(ctx context.Context, box string) ([]api.Grant, error) {
	var gs []api.Grant
	return gs, c.do(ctx, "GET", "/boxes/"+esc(box)+"/grants", nil, &gs)
}

// Share shares a box with a user as access (viewer or member).
func (c *Client) Share(ctx context.Context, box, user, access string) (api.Grant, error) {
	var g api.Grant
	return g, c.do(ctx, "PUT", "/boxes/"+esc(box)+"/grants/"+esc(user), api.GrantPut{Access: access}, &g)
}

// Unshare stops sharing a box with a user.
func (c *Client) Unshare(ctx context.Context, box, user string) error {
	return c.do(ctx, "DELETE", "/boxes/"+esc(box)+"/grants/"+esc(user), nil, nil)
}
