package client

import (
	"context"
	"github.com/paddock-dev/paddock/appliance/api"
)

// Prompt hands an agent a task in a box, as a job.
func (c *Client) Prompt(ctx context.Context, box string, p api.PromptPost) (api.Job, error) {
	var j api.Job
	return j, c.do(ctx, "POST", "/boxes/"+esc(box)+"/prompt", p, &j)
}

// Agents lists the agent table.
func (c *Client) Agents(ctx context.Context) ([]api.Agent, error) {
	var a []api.Agent
	return a, c.do(ctx, "GET", "/agents", nil, &a)
}

// BoxAgents tells which agents a box has and whether each has credentials.
func (c *Client) BoxAgents(ctx context.Context, box string) ([]api.BoxAgent, error) {
	var a []api.BoxAgent
	return a, c.do(ctx, "GET", "/boxes/"+esc(box)+"/agents", nil, &a)
}
