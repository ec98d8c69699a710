package client

import (
	"context"
	"github.com/paddock-dev/paddock/appliance/api"
)

// Quota is a user's quota and use (a member may read their own).
func (c *Client) Quota(ctx context.Context, user string) (api.UserQuota, error) {
	var q api.UserQuota
	return q, c.do(ctx, "GET", "/users/"+esc(user)+"/quota", nil, &q)
}

// SetQuota changes a member's quota (the owner or an admin).
func (c *Client) SetQuota(ctx context.Context, user string, p api.QuotaPut) (api.UserQuota, error) {
	var q api.UserQuota
	return q, c.do(ctx, "PUT", "/users/"+esc(user)+"/quota", p, &q)
}

// Groups lists the groups (the owner's and admins').
func (c *Client) Groups(ctx context.Context) ([]api.Group, error) {
	var gs []api.Group
	return gs, c.do(ctx, "GET", "/groups", nil, &gs)
}

// AddToGroup puts a user in a group.
func (c *Client) AddToGroup(ctx context.Context, group, user string) error {
	return c.do(ctx, "PUT", "/groups/"+esc(group)+"/members/"+esc(user), nil, nil)
}

// RemoveFromGroup takes a user put in a group by hand out of it.
func (c *Client) RemoveFromGroup(ctx context.Context, group, user string) error {
	return c.do(ctx, "DELETE", "/groups/"+esc(group)+"/members/"+esc(user), nil, nil)
}

// SetGroupQuota changes a group's quota.
func (c *Client) SetGroupQuota(ctx context.Context, group string, p api.QuotaPut) (api.Group, error) {
	var g api.Group
	return g, c.do(ctx, "PUT", "/groups/"+esc(group)+"/quota", p, &g)
}
