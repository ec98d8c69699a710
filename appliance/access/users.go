package access

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// LinkTTL bounds one-time links when the config does not say.
const LinkTTL = 24 * time.Hour

func (a *Access) linkTTL() time.Duration {
	if a.cfg.LinkTTL > 0 {
		return a.cfg.LinkTTL
	}
	return LinkTTL
}

// SetupLink makes a fresh one-time owner setup link while no owner exists
// (replacing any earlier one); it returns "" once there is an owner.
func (a *Access) SetupLink() (string, error) {
	has, err := a.store.HasOwner()
	if err != nil || has {
		return "", err
	}
	tok, hash := auth.NewToken()
	now := a.core.Time()
	err = a.store.AddLink(store.Link{Hash: hash, Kind: store.LinkSetup, Role: store.RoleOwner, Created: now, Expires: now.Add(a.linkTTL())})
	return tok, err
}

// Invite makes a one-time link that creates a user with a role.
func (a *Access) Invite(ctx context.Context, p api.InvitePost) (api.InviteCreated, error) {
	if err := caller.RequireAdmin(ctx, "invite users"); err != nil {
		return api.InviteCreated{}, err
	}
	if p.Role == "" {
		p.Role = store.RoleMember
	}
	if p.Role != store.RoleMember && p.Role != store.RoleAdmin && p.Role != store.RoleOwner && p.Role != store.RoleViewer {
		return api.InviteCreated{}, api.Invalid("role", "role must be %q, %q, %q or %q, not %q", store.RoleMember, store.RoleViewer, store.RoleAdmin, store.RoleOwner, p.Role)
	}
	if p.Role == store.RoleOwner {
		if err := caller.RequireOwner(ctx, "invite an owner"); err != nil {
			return api.InviteCreated{}, err
		}
	}
	if err := a.membersAllowed(p.Role); err != nil {
		return api.InviteCreated{}, err
	}
	if !a.cfg.PasswordLogin && p.Role != store.RoleOwner {
		return api.InviteCreated{}, api.Conflict("password sign-in is off on this server (password_login = false): people sign in with its single sign-on provider, with no invitation")
	}
	tok, hash := auth.NewToken()
	now := a.core.Time()
	l := store.Link{Hash: hash, Kind: store.LinkInvite, Role: p.Role, Created: now, Expires: now.Add(a.linkTTL())}
	if u, ok := caller.From(ctx); ok {
		l.By = u.ID
	}
	if err := a.store.AddLink(l); err != nil {
		return api.InviteCreated{}, err
	}
	return api.InviteCreated{ID: l.ID(), Token: tok, Role: p.Role, Expires: l.Expires}, nil
}

// Invites lists the invitations not used yet and not expired (the owner
// or an admin): who made each, for what role, until when. Their links
// are not kept, and not shown.
func (a *Access) Invites(ctx context.Context) ([]api.Invite, error) {
	if err := caller.RequireAdmin(ctx, "list invitations"); err != nil {
		return nil, err
	}
	links, err := a.store.Links(store.LinkInvite, a.core.Time())
	if err != nil {
		return nil, err
	}
	us, err := a.store.Users()
	if err != nil {
		return nil, err
	}
	names := map[int64]string{}
	for _, u := range us {
		names[u.ID] = u.Name
	}
	out := []api.Invite{}
	for _, l := range links {
		out = append(out, api.Invite{ID: l.ID(), Role: l.Role, By: names[l.By], Created: l.Created, Expires: l.Expires})
	}
	return out, nil
}

// RevokeInvite takes an invitation back: its link signs nobody up. An
// owner's invitation is the owner's to revoke, as it is to make.
func (a *Access) RevokeInvite(ctx context.Context, id string) error {
	if err := caller.RequireAdmin(ctx, "revoke invitations"); err != nil {
		return err
	}
	links, err := a.store.Links(store.LinkInvite, a.core.Time())
	if err != nil {
		return err
	}
	for _, l := range links {
		if l.ID() != id {
			continue
		}
		if l.Role == store.RoleOwner {
			if err := caller.RequireOwner(ctx, "revoke an owner's invitation"); err != nil {
				return err
			}
		}
		if err := a.store.DeleteLink(l.Hash); errors.Is(err, store.ErrNotFound) {
			return noInvite(id)
		} else if err != nil {
			return err
		}
		audit.From(ctx).Note("role", l.Role)
		return nil
	}
	return noInvite(id)
}

func noInvite(id string) error {
	return &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no pending invitation %q: it was used, revoked or has expired ('paddock user invites' lists those pending)", id)}
}

// ErrUnsafeWithMembers is why a server whose boxes may run Docker on runc
// (unsafe_docker_in_runc_boxes: root in any box is root on the machine)
// takes no member: every member would own the machine.
var ErrUnsafeWithMembers = &api.Error{Code: api.CodeConflict, Message: "this server has unsafe_docker_in_runc_boxes = true, which makes root in any box root on this machine: it takes no members; turn the setting off first"}

// membersAllowed refuses a member (role) while the server's boxes may
// run Docker on runc.
func (a *Access) membersAllowed(role string) error {
	if role != store.RoleOwner && a.cfg.UnsafeDockerInRuncBoxes {
		return ErrUnsafeWithMembers
	}
	return nil
}

// CheckUnsafeSetting refuses unsafe_docker_in_runc_boxes while the
// server has a member (paddockd does not start so).
func CheckUnsafeSetting(unsafe bool, users []store.User) error {
	if !unsafe {
		return nil
	}
	var members []string
	for _, u := range users {
		if u.Role != store.RoleOwner {
			members = append(members, u.Name)
		}
	}
	if len(members) > 0 {
		return fmt.Errorf("unsafe_docker_in_runc_boxes = true makes root in any box root on this machine, and this server has members (%s): remove them or turn the setting off", strings.Join(members, ", "))
	}
	return nil
}

// LinkKind says what a live one-time link does ("setup" or "invite");
// a used, expired or unknown link is not found.
func (a *Access) LinkKind(token string) (string, error) {
	l, err := a.store.GetLink(auth.Hash(token), a.core.Time())
	if errors.Is(err, store.ErrNotFound) {
		return "", &api.Error{Code: api.CodeGone, Message: "this link has been used or has expired"}
	}
	if err == nil && l.Kind == store.LinkSetup {
		if has, herr := a.store.HasOwner(); herr != nil || has {
			return "", errors.Join(herr, &api.Error{Code: api.CodeGone, Message: "this server already has an owner"})
		}
	}
	return l.Kind, err
}

// Redeem uses a one-time link to create a user (the owner, for the setup
// link) and returns a browser session for them.
func (a *Access) Redeem(token, name, password string) (store.User, api.Session, error) {
	if err := api.ValidName("user", name); err != nil {
		return store.User{}, api.Session{}, err
	}
	if err := auth.CheckNewPassword(password); err != nil {
		return store.User{}, api.Session{}, api.Invalid("password", "%v", err)
	}
	if l, err := a.store.GetLink(auth.Hash(token), a.core.Time()); err == nil {
		if err := a.membersAllowed(l.Role); err != nil {
			return store.User{}, api.Session{}, err
		}
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		return store.User{}, api.Session{}, err
	}
	u, err := a.store.RedeemLink(auth.Hash(token), a.core.Time(), store.User{Name: name, Password: hash, Created: a.core.Time()})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return u, api.Session{}, &api.Error{Code: api.CodeGone, Message: "this link has been used or has expired"}
	case errors.Is(err, store.ErrConflict) && u.Role == "":
		return u, api.Session{}, &api.Error{Code: api.CodeGone, Message: "this server already has an owner"}
	case errors.Is(err, store.ErrConflict):
		return u, api.Session{}, &api.Error{Code: api.CodeConflict, Field: "name", Message: fmt.Sprintf("a user named %q exists", name)}
	case err != nil:
		return u, api.Session{}, err
	}
	sess, err := a.NewSession(u)
	return u, sess, err
}

// SessionTTL is how long a browser session lasts.
const SessionTTL = 7 * 24 * time.Hour

// NewSession starts a browser session for u.
func (a *Access) NewSession(u store.User) (api.Session, error) {
	tok, hash := auth.NewToken()
	csrf, _ := auth.NewToken()
	exp := a.core.Time().Add(SessionTTL)
	err := a.store.AddToken(store.Token{Hash: hash, Name: "session", UserID: u.ID, Kind: store.TokenSession, Created: a.core.Time(), Expires: &exp, CSRF: csrf})
	return api.Session{Token: tok, CSRF: csrf, Expires: exp}, err
}

// ErrPasswordOff refuses a password sign-in but the owner's
// (password_login = false).
var ErrPasswordOff = &api.Error{Code: api.CodeForbidden, Message: "password sign-in is off on this server: sign in with its single sign-on provider (only the owner's password works, as the way in when the provider is down)"}

// Login checks a name and password and starts a session. A wrong name
// and a wrong password get the same answer, in the same time.
func (a *Access) Login(name, password string) (store.User, api.Session, error) {
	u, err := a.store.UserByName(name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return u, api.Session{}, err
	}
	if !auth.CheckPassword(u.Password, password) {
		return u, api.Session{}, &api.Error{Code: api.CodeUnauthorized, Message: "wrong user name or password"}
	}
	if !a.cfg.PasswordLogin && u.Role != store.RoleOwner {
		return u, api.Session{}, ErrPasswordOff
	}
	sess, err := a.NewSession(u)
	return u, sess, err
}

// Users lists users (the owner sees all; a member, themselves).
func (a *Access) Users(ctx context.Context) ([]api.User, error) {
	us, err := a.store.Users()
	if err != nil {
		return nil, err
	}
	links, err := a.store.SSOLinks()
	if err != nil {
		return nil, err
	}
	byUser := map[int64]store.SSOLink{}
	for _, l := range links {
		byUser[l.UserID] = l
	}
	out := []api.User{}
	for _, u := range us {
		if caller.Visible(ctx, u.ID) {
			l := byUser[u.ID]
			out = append(out, api.User{Name: u.Name, Role: u.Role, Created: u.Created, SSO: l.Provider, Email: l.Email, Password: u.Password != ""})
		}
	}
	return out, nil
}

// RemoveUser removes a user, their tokens, sessions and keys. Their boxes
// and drives stay, and the owner can remove them.
func (a *Access) RemoveUser(ctx context.Context, name string) error {
	if err := caller.RequireAdmin(ctx, "remove users"); err != nil {
		return err
	}
	u, err := a.store.UserByName(name)
	if errors.Is(err, store.ErrNotFound) {
		return api.NotFound("user", name)
	}
	if err != nil {
		return err
	}
	if u.Role == store.RoleOwner {
		if err := caller.RequireOwner(ctx, "remove an owner"); err != nil {
			return err
		}
	}
	if me, ok := caller.From(ctx); ok && me.ID == u.ID {
		return api.Conflict("you cannot remove yourself")
	}
	return a.store.DeleteUser(u.ID)
}

// A device login lets the CLI on a laptop get a token that a person
// approves in a browser where they are logged in (RFC 8628's flow): the
// CLI shows a short code and polls; the person types or follows the code.
type deviceLogin struct {
	userCode string
	name     string // the token's name
	from     string // the address the login was asked from
	started  time.Time
	expires  time.Time
	token    string // set when approved
	denied   bool
	lastPoll time.Time
}

// Devices holds device logins in progress (in memory: a restart only
// makes people start again).
type Devices struct {
	mu     sync.Mutex
	byCode map[string]*deviceLogin // by device code hash
}

// DeviceTTL bounds a device login.
const DeviceTTL = 10 * time.Minute

// DeviceInterval is how often the CLI may poll.
const DeviceInterval = 2 * time.Second

// userCodeAlphabet has no letters that look alike (no 0/O, 1/I/L).
const userCodeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

func newUserCode() string {
	b := make([]byte, 8)
	rand.Read(b)
	for i := range b {
		b[i] = userCodeAlphabet[int(b[i])%len(userCodeAlphabet)]
	}
	return string(b[:4]) + "-" + string(b[4:])
}

// normalizeUserCode accepts a code as people type it.
func normalizeUserCode(c string) string {
	c = strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(c))
	if len(c) != 8 {
		return c
	}
	return c[:4] + "-" + c[4:]
}

// DeviceStart begins a device login for a token to be called name, asked
// from the client address from.
func (a *Access) DeviceStart(name, from string) (api.DeviceCode, error) {
	if name == "" {
		name = "cli"
	}
	if err := api.ValidName("token", name); err != nil {
		return api.DeviceCode{}, err
	}
	// Approval needs someone who can log in to the pages (local mode's
	// owner has no password; a sign-in provider lets people in): say so
	// now rather than wait ten minutes.
	us, err := a.store.Users()
	if err != nil {
		return api.DeviceCode{}, err
	}
	canApprove := len(a.core.Providers().Providers()) > 0
	for _, u := range us {
		canApprove = canApprove || u.Password != ""
	}
	if !canApprove {
		return api.DeviceCode{}, api.Conflict("nobody on this server can log in with a password to approve a login: use 'paddock login URL --token TOKEN' (local mode prints the token)")
	}
	dev, hash := auth.NewToken()
	d := &deviceLogin{userCode: newUserCode(), name: name, from: from, started: a.core.Time(), expires: a.core.Time().Add(DeviceTTL)}
	a.devices.mu.Lock()
	defer a.devices.mu.Unlock()
	if a.devices.byCode == nil {
		a.devices.byCode = map[string]*deviceLogin{}
	}
	now := a.core.Time()
	for k, v := range a.devices.byCode {
		if now.After(v.expires) {
			delete(a.devices.byCode, k)
		}
	}
	if len(a.devices.byCode) > 1000 {
		return api.DeviceCode{}, &api.Error{Code: api.CodeTooMany, Message: "too many logins in progress; try again in a few minutes"}
	}
	a.devices.byCode[hash] = d
	return api.DeviceCode{DeviceCode: dev, UserCode: d.userCode, ExpiresIn: int(DeviceTTL / time.Second), Interval: int(DeviceInterval / time.Second)}, nil
}

func (a *Access) deviceByUserCode(code string) *deviceLogin {
	code = normalizeUserCode(code)
	for _, d := range a.devices.byCode {
		if d.userCode == code && a.core.Time().Before(d.expires) && d.token == "" && !d.denied {
			return d
		}
	}
	return nil
}

// DeviceRequest is what a person is shown before approving a login.
type DeviceRequest struct {
	Code, TokenName, From string
	Started               time.Time
}

// DeviceInfo tells what the device login waiting for a user code asks for.
func (a *Access) DeviceInfo(code string) (DeviceRequest, error) {
	a.devices.mu.Lock()
	defer a.devices.mu.Unlock()
	d := a.deviceByUserCode(code)
	if d == nil {
		return DeviceRequest{}, &api.Error{Code: api.CodeNotFound, Field: "code", Message: fmt.Sprintf("no login waits for the code %q (codes last %d minutes)", code, int(DeviceTTL/time.Minute))}
	}
	return DeviceRequest{Code: d.userCode, TokenName: d.name, From: d.from, Started: d.started}, nil
}

// DeviceApprove gives the device login with a user code a new API token
// of the user of ctx (approve false denies it).
func (a *Access) DeviceApprove(ctx context.Context, code string, approve bool) error {
	u, ok := caller.From(ctx)
	if !ok {
		return errors.New("device approval needs a user")
	}
	a.devices.mu.Lock()
	defer a.devices.mu.Unlock()
	d := a.deviceByUserCode(code)
	if d == nil {
		return &api.Error{Code: api.CodeNotFound, Field: "code", Message: fmt.Sprintf("no login waits for the code %q (codes last %d minutes)", code, int(DeviceTTL/time.Minute))}
	}
	if !approve {
		d.denied = true
		return nil
	}
	held, err := a.store.Tokens(u.ID, store.TokenAPI)
	if err != nil {
		return err
	}
	if err := a.mayMintToken(ctx, len(held)); err != nil {
		return err
	}
	tok, hash := auth.NewToken()
	if err := a.store.AddToken(store.Token{Hash: hash, Name: d.name, UserID: u.ID, Kind: store.TokenAPI, Created: a.core.Time()}); err != nil {
		return err
	}
	d.token = tok
	return nil
}

// DevicePoll answers the CLI's poll: the token once approved (then the
// login is gone), or an api.Error with code authorization_pending,
// slow_down, access_denied or expired_token.
func (a *Access) DevicePoll(deviceCode string) (string, error) {
	a.devices.mu.Lock()
	defer a.devices.mu.Unlock()
	h := auth.Hash(deviceCode)
	d, ok := a.devices.byCode[h]
	now := a.core.Time()
	if !ok || now.After(d.expires) {
		delete(a.devices.byCode, h)
		return "", &api.Error{Code: api.CodeExpiredToken, Message: "the login expired; run 'paddock login' again"}
	}
	switch {
	case d.denied:
		delete(a.devices.byCode, h)
		return "", &api.Error{Code: api.CodeAccessDenied, Message: "the login was denied in the browser"}
	case d.token != "":
		delete(a.devices.byCode, h)
		return d.token, nil
	case now.Sub(d.lastPoll) < DeviceInterval/2:
		d.lastPoll = now
		return "", &api.Error{Code: api.CodeSlowDown, Message: "polling too fast"}
	}
	d.lastPoll = now
	return "", &api.Error{Code: api.CodePending, Message: "waiting for approval in the browser"}
}
