package client

import (
	"context"
	"github.com/paddock-dev/paddock/appliance/api"
)

// SetPolicy changes a box's policy.
func (c *Client) SetPolicy(ctx context.Context, box, policy string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "PUT", "/boxes/"+esc(box)+"/policy", api.PolicyPut{Policy: policy}, &b)
}

// PolicyReport returns a box's drop counters and DNS decisions.
func (c *Client) PolicyReport(ctx context.Context, box string) (api.PolicyReport, error) {
	var r api.PolicyReport
	return r, c.do(ctx, "GET", "/boxes/"+esc(box)+"/policy", nil, &r)
}

// Policies lists named policies.
func (c *Client) Policies(ctx context.Context) ([]api.Policy, error) {
	var p []api.Policy
	return p, c.do(ctx, "GET", "/policies", nil, &p)
}

// CreatePolicy declares a named policy.
func (c *Client) CreatePolicy(ctx context.Context, p api.PolicyPost) (api.Policy, error) {
	var out api.Policy
	return out, c.do(ctx, "POST", "/policies", p, &out)
}

// RemovePolicy removes a named policy.
func (c *Client) RemovePolicy(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/policies/"+esc(name), nil, nil)
}
