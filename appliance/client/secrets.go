package client

import (
	"bytes"
	"context"
	"github.com/paddock-dev/paddock/appliance/api"
	"net/url"
)

// Secrets lists secret names.
func (c *Client) Secrets(ctx context.Context) ([]api.Secret, error) {
	var s []api.Secret
	return s, c.do(ctx, "GET", "/secrets", nil, &s)
}

// SetSecret stores a secret of the caller's; shared (owners only) lets
// every user's boxes use it.
//
// With brk, the secret is brokered: boxes get a stand-in for it.
func (c *Client) SetSecret(ctx context.Context, name string, value []byte, shared bool, brk *api.SecretBroker) error {
	q := url.Values{}
	if shared {
		q.Set("shared", "true")
	}
	if brk != nil {
		q["broker"] = brk.Hosts
		if brk.Header != "" {
			q.Set("header", brk.Header)
		}
		if brk.Limit != "" {
			q.Set("limit", brk.Limit)
		}
	}
	path := "/secrets/" + esc(name)
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	req, err := c.request(ctx, "PUT", path, bytes.NewReader(value))
	if err != nil {
		return err
	}
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// SetSecretBroker changes how a secret is brokered, keeping its value
// (no hosts: not brokered).
func (c *Client) SetSecretBroker(ctx context.Context, name string, brk api.SecretBroker) error {
	return c.do(ctx, "PUT", "/secrets/"+esc(name)+"/broker", brk, nil)
}

// RemoveSecret removes a secret.
func (c *Client) RemoveSecret(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/secrets/"+esc(name), nil, nil)
}
