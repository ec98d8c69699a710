package client

import (
	"context"
	"github.com/paddock-dev/paddock/appliance/api"
)

// ReconcileResult is what one reconcile pass changed.
type ReconcileResult struct {
	Changes []string          `json:"changes"`
	Errors  map[string]string `json:"errors,omitempty"`
}

// Reconcile runs one reconcile pass now.
func (c *Client) Reconcile(ctx context.Context) (ReconcileResult, error) {
	var r ReconcileResult
	return r, c.do(ctx, "POST", "/reconcile", nil, &r)
}

// Plan asks for a project plan.
func (c *Client) Plan(ctx context.Context, req api.PlanRequest) (api.Plan, error) {
	var p api.Plan
	return p, c.do(ctx, "POST", "/plan", req, &p)
}

// Apply applies a project plan made at req.Serial.
func (c *Client) Apply(ctx context.Context, req api.ApplyRequest) (api.ApplyResult, error) {
	var r api.ApplyResult
	return r, c.do(ctx, "POST", "/apply", req, &r)
}

// SetupDone reports the outcome of a box's push and setup steps.
func (c *Client) SetupDone(ctx context.Context, box string, p api.SetupPost) error {
	return c.do(ctx, "POST", "/boxes/"+esc(box)+"/setup", p, nil)
}
