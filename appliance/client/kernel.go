package client

import (
	"context"
	"github.com/paddock-dev/paddock/appliance/api"
)

// RunCode runs code in a box's code interpreter.
func (c *Client) RunCode(ctx context.Context, box string, p api.RunPost) (api.RunResult, error) {
	var r api.RunResult
	return r, c.do(ctx, "POST", "/boxes/"+esc(box)+"/run", p, &r)
}

// Contexts lists the contexts of a box's code interpreter.
func (c *Client) Contexts(ctx context.Context, box string) ([]api.CodeContext, error) {
	var cs []api.CodeContext
	return cs, c.do(ctx, "GET", "/boxes/"+esc(box)+"/contexts", nil, &cs)
}

// CreateContext starts a context of a box's code interpreter.
func (c *Client) CreateContext(ctx context.Context, box string, p api.ContextPost) (api.CodeContext, error) {
	var cc api.CodeContext
	return cc, c.do(ctx, "POST", "/boxes/"+esc(box)+"/contexts", p, &cc)
}

// RestartContext starts a context's kernel again.
func (c *Client) RestartContext(ctx context.Context, box, name string) (api.CodeContext, error) {
	var cc api.CodeContext
	return cc, c.do(ctx, "POST", "/boxes/"+esc(box)+"/contexts/"+esc(name)+"/restart", nil, &cc)
}

// RemoveContext ends a context's kernel and forgets it.
func (c *Client) RemoveContext(ctx context.Context, box, name string) error {
	return c.do(ctx, "DELETE", "/boxes/"+esc(box)+"/contexts/"+esc(name), nil, nil)
}
