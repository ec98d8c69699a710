package client

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

// Whoami checks the token.
func (c *Client) Whoami(ctx context.Context) (api.Whoami, error) {
	var w api.Whoami
	return w, c.do(ctx, "GET", "/whoami", nil, &w)
}

// AddKey registers an SSH public key.
func (c *Client) AddKey(ctx context.Context, p api.KeyPost) (api.Key, error) {
	var k api.Key
	return k, c.do(ctx, "POST", "/keys", p, &k)
}

// Keys lists registered SSH keys.
func (c *Client) Keys(ctx context.Context) ([]api.Key, error) {
	var k []api.Key
	return k, c.do(ctx, "GET", "/keys", nil, &k)
}

// RemoveKey removes an SSH key by name or fingerprint.
func (c *Client) RemoveKey(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/keys/"+esc(name), nil, nil)
}

// SignInLink asks for a single-use link that signs a browser in to the
// dashboard as this client's user (on box's page, if one is named).
func (c *Client) SignInLink(ctx context.Context, box string) (api.SignInLink, error) {
	var l api.SignInLink
	return l, c.do(ctx, "POST", "/signin-links", api.SignInPost{Box: box}, &l)
}

// CreateToken makes an API token; its value is in the answer only.
func (c *Client) CreateToken(ctx context.Context, name string) (api.TokenCreated, error) {
	var t api.TokenCreated
	return t, c.do(ctx, "POST", "/tokens", api.TokenPost{Name: name}, &t)
}

// Tokens lists tokens.
func (c *Client) Tokens(ctx context.Context) ([]api.TokenInfo, error) {
	var t []api.TokenInfo
	return t, c.do(ctx, "GET", "/tokens", nil, &t)
}

// RevokeToken deletes a token.
func (c *Client) RevokeToken(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/tokens/"+esc(name), nil, nil)
}

// Users lists users.
func (c *Client) Users(ctx context.Context) ([]api.User, error) {
	var u []api.User
	return u, c.do(ctx, "GET", "/users", nil, &u)
}

// Invite makes an invitation link.
func (c *Client) Invite(ctx context.Context, role string) (api.InviteCreated, error) {
	var i api.InviteCreated
	return i, c.do(ctx, "POST", "/users/invites", api.InvitePost{Role: role}, &i)
}

// Invites lists the invitations not used yet.
func (c *Client) Invites(ctx context.Context) ([]api.Invite, error) {
	var is []api.Invite
	return is, c.do(ctx, "GET", "/users/invites", nil, &is)
}

// RevokeInvite takes an invitation back.
func (c *Client) RevokeInvite(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/users/invites/"+url.PathEscape(id), nil, nil)
}

// RemoveUser removes a user.
func (c *Client) RemoveUser(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/users/"+esc(name), nil, nil)
}

// Logout revokes the client's token.
func (c *Client) Logout(ctx context.Context) error {
	return c.do(ctx, "POST", "/logout", nil, nil)
}

// DeviceStart begins a device login for a token called name.
func (c *Client) DeviceStart(ctx context.Context, name string) (api.DeviceCode, error) {
	var d api.DeviceCode
	return d, c.do(ctx, "POST", "/login/device", api.DevicePost{Name: name}, &d)
}

// DeviceWait polls until the device login is approved (returning its
// token), denied or expired.
func (c *Client) DeviceWait(ctx context.Context, d api.DeviceCode) (string, error) {
	interval := time.Duration(d.Interval) * time.Second
	if interval <= 0 {
		interval = 2 * time.Second
	}
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(interval):
		}
		var t api.DeviceToken
		err := c.do(ctx, "POST", "/login/device/token", api.DeviceTokenPost{DeviceCode: d.DeviceCode}, &t)
		var ae *api.Error
		switch {
		case err == nil:
			return t.Token, nil
		case errors.As(err, &ae) && ae.Code == api.CodePending:
		case errors.As(err, &ae) && ae.Code == api.CodeSlowDown:
			interval += time.Second
		default:
			return "", err
		}
	}
}

// CreateE2BKey makes an E2B key: a token whose value begins with "e2b_".
func (c *Client) CreateE2BKey(ctx context.Context, name string) (api.TokenCreated, error) {
	var t api.TokenCreated
	return t, c.do(ctx, "POST", "/tokens", api.TokenPost{Name: name, E2B: true}, &t)
}
