package client

import (
	"context"
	"github.com/paddock-dev/paddock/appliance/api"
	"net/url"
)

// Metrics is the newest sample of each running box the caller sees.
func (c *Client) Metrics(ctx context.Context) ([]api.Sample, error) {
	var ms []api.Sample
	return ms, c.do(ctx, "GET", "/metrics", nil, &ms)
}

// BoxMetrics is a box's samples since a duration back (90m, 1h, 2d) or a
// time ("": the server's default, 15 minutes).
func (c *Client) BoxMetrics(ctx context.Context, box, since string) (api.BoxMetrics, error) {
	var m api.BoxMetrics
	p := "/boxes/" + esc(box) + "/metrics"
	if since != "" {
		p += "?since=" + url.QueryEscape(since)
	}
	return m, c.do(ctx, "GET", p, nil, &m)
}
