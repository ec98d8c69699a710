package api

import (
	"time"
)

// SignInPost asks for a dashboard sign-in link.
type SignInPost struct {
	// Box lands the browser on that box's page instead of the list.
	Box string `json:"box,omitempty"`
	// Port, with Box, lands it on the preview of that port of the box.
	Port int `json:"port,omitempty"`
}

// SignInLink is a single-use link that signs a browser in as the caller.
type SignInLink struct {
	URL     string    `json:"url"`
	Expires time.Time `json:"expires"`
}

// Whoami answers who a token belongs to.
type Whoami struct {
	Token  string `json:"token"`
	User   string `json:"user"`
	Role   string `json:"role"`
	Server string `json:"server"`
	// SSHPort is the SSH gateway's port (0: none).
	SSHPort int `json:"ssh_port,omitempty"`
	// SSHHostKey is the SSH gateway's host key, as a known_hosts line
	// takes it ("ssh-ed25519 AAAA..."): 'paddock ssh' trusts that key
	// for the gateway and no other.
	SSHHostKey string `json:"ssh_host_key,omitempty"`
	// Version is the server's release (see package version).
	Version string `json:"version"`
	// Images are the server's images any box may be made from, the
	// default first (users' own images are GET /v1/images).
	Images []string `json:"images,omitempty"`
}

// KeyPost registers an SSH public key.
type KeyPost struct {
	Name string `json:"name,omitempty"`
	// Key is one line of authorized_keys.
	Key string `json:"key"`
}

// Key is a registered SSH public key.
type Key struct {
	Name        string    `json:"name"`
	Fingerprint string    `json:"fingerprint"`
	Type        string    `json:"type"`
	Created     time.Time `json:"created"`
}

// TokenCreated carries a new token's value, shown this once.
type TokenCreated struct {
	Name  string `json:"name"`
	Token string `json:"token"`
}

// TokenInfo describes a token without its value.
type TokenInfo struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

// TokenPost asks for a token.
type TokenPost struct {
	Name string `json:"name"`
	// E2B makes the token an E2B key: its value begins with "e2b_", the
	// form E2B's SDKs take (E2B_API_KEY); it acts as any token does.
	E2B bool `json:"e2b,omitempty"`
}

// User is a person who may use the server.
type User struct {
	Name    string    `json:"name"`
	Role    string    `json:"role"`
	Created time.Time `json:"created"`
	// SSO is the single sign-on provider the user signs in with (its
	// id), and Email the address it gave at their last sign-in.
	SSO   string `json:"sso,omitempty"`
	Email string `json:"email,omitempty"`
	// Password says the user has a password (to sign in at /login); a
	// user with neither that nor SSO signs in with tokens and the links
	// 'paddock dashboard' makes (local mode's user, say).
	Password bool `json:"password,omitempty"`
}

// InvitePost asks for an invitation link.
type InvitePost struct {
	// Role is "member" (the default), "admin" or "owner" (an owner's to give).
	Role string `json:"role,omitempty"`
}

// InviteCreated carries an invitation's one-time token and its link.
type InviteCreated struct {
	// ID names the invitation in the list of those pending, and to revoke
	// it; it is not the link.
	ID      string    `json:"id"`
	Token   string    `json:"token"`
	URL     string    `json:"url,omitempty"`
	Role    string    `json:"role"`
	Expires time.Time `json:"expires"`
}

// Invite is an invitation not used yet: its link signs one person up
// with its role until it expires (the link itself is shown once, when it
// is made, and not kept).
type Invite struct {
	ID      string    `json:"id"`
	Role    string    `json:"role"`
	By      string    `json:"by,omitempty"` // who made it ("" once they are removed)
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

// Session is a browser session: the cookie's value and the value its
// pages send back against cross-site requests.
type Session struct {
	Token   string    `json:"-"`
	CSRF    string    `json:"-"`
	Expires time.Time `json:"expires"`
}

// DevicePost starts a device login.
type DevicePost struct {
	// Name is the name of the token the login makes (default "cli").
	Name string `json:"name,omitempty"`
}

// DeviceCode answers a device login's start.
type DeviceCode struct {
	DeviceCode string `json:"device_code"`
	UserCode   string `json:"user_code"`
	// VerificationURI is the page to type the code on; the Complete form
	// carries the code.
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int    `json:"expires_in"`
	Interval                int    `json:"interval"`
}

// DeviceTokenPost is the CLI's poll.
type DeviceTokenPost struct {
	DeviceCode string `json:"device_code"`
}

// DeviceToken is the token a device login made.
type DeviceToken struct {
	Token string `json:"token"`
}
