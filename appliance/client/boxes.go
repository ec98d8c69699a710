package client

import (
	"context"
	"github.com/paddock-dev/paddock/appliance/api"
	"io"
	"net/url"
)

// CreateBox creates a box.
func (c *Client) CreateBox(ctx context.Context, p api.BoxPost) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "POST", "/boxes", p, &b)
}

// Boxes lists boxes.
func (c *Client) Boxes(ctx context.Context) ([]api.Box, error) {
	return c.BoxesLabelled(ctx, nil)
}

// BoxesLabelled lists the boxes that have every one of labels.
func (c *Client) BoxesLabelled(ctx context.Context, labels map[string]string) ([]api.Box, error) {
	q := url.Values{}
	for k, v := range labels {
		q.Add("label", k+"="+v)
	}
	path := "/boxes"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var bs []api.Box
	return bs, c.do(ctx, "GET", path, nil, &bs)
}

// Box returns one box.
func (c *Client) Box(ctx context.Context, name string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "GET", "/boxes/"+esc(name), nil, &b)
}

// BoxDetail is Box with what only the running box can tell (its Docker
// engine), which costs a command in the box.
func (c *Client) BoxDetail(ctx context.Context, name string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "GET", "/boxes/"+esc(name)+"?detail=1", nil, &b)
}

// RemoveBox removes a box.
func (c *Client) RemoveBox(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/boxes/"+esc(name), nil, nil)
}

// StopBox snapshots and stops a box.
func (c *Client) StopBox(ctx context.Context, name string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "POST", "/boxes/"+esc(name)+"/stop", nil, &b)
}

// StartBox starts a box.
func (c *Client) StartBox(ctx context.Context, name string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "POST", "/boxes/"+esc(name)+"/start", nil, &b)
}

// Fork makes a new box from a snapshot of another.
func (c *Client) Fork(ctx context.Context, name string, p api.ForkPost) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "POST", "/boxes/"+esc(name)+"/fork", p, &b)
}

// Screenshot returns a PNG of a box's display.
func (c *Client) Screenshot(ctx context.Context, box string) ([]byte, error) {
	req, err := c.request(ctx, "GET", "/boxes/"+esc(box)+"/screenshot", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// PreviewLink asks for a single-use link that signs a browser in and
// lands it on the preview of a port of a box.
func (c *Client) PreviewLink(ctx context.Context, box string, port int) (api.SignInLink, error) {
	var l api.SignInLink
	return l, c.do(ctx, "POST", "/signin-links", api.SignInPost{Box: box, Port: port}, &l)
}

// BoxPorts lists what listens in a running box, with preview URLs.
func (c *Client) BoxPorts(ctx context.Context, box string) ([]api.Port, error) {
	var ps []api.Port
	return ps, c.do(ctx, "GET", "/boxes/"+esc(box)+"/ports", nil, &ps)
}

// SetTTL gives a box a new time to live, counted from now: seconds or a
// duration ("" or "0": none).
func (c *Client) SetTTL(ctx context.Context, name, ttl string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "PUT", "/boxes/"+esc(name)+"/ttl", api.TTLPut{TTL: ttl}, &b)
}
