package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/sso"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Single sign-on: a person an OpenID provider signed in (package sso)
// and its rules let in is the user tied to the provider's subject for
// them, made at their first sign-in as a member (or admin, by a group's
// role), with a name from the provider's (their preferred_username, else
// their email's local part, made a valid name, with -2, -3... when
// taken). Their role follows their groups at each sign-in and each
// recheck; an owner stays an owner.
//
// Every sso_recheck, each such user's refresh token is used at their
// provider: one the provider refuses (the person was removed or signed
// out there), or whose groups no longer let them in, loses every API
// token and session at once, and must sign in again (which the provider
// then refuses). A user whose provider gave no refresh token loses them
// sso_max_age after their last sign-in.

// SignInSSO makes or finds the user of a person the provider signed in
// and let in with role, and starts a browser session for them.
func (a *Access) SignInSSO(ctx context.Context, id sso.Identity, role string) (store.User, api.Session, error) {
	now := a.core.Time()
	u, l, err := a.store.SSOUser(id.Provider, id.Subject)
	switch {
	case err == nil:
		l.Email, l.SignedIn, l.Checked = id.Email, now, now
		if id.Refresh != "" {
			l.Refresh = sso.Seal(a.core.ProvidersKey(), id.Refresh)
		}
		if err := a.store.UpdateSSO(l, role); err != nil {
			return u, api.Session{}, err
		}
		was := u.Role
		if u, err = a.store.GetUser(u.ID); err != nil {
			return u, api.Session{}, err
		}
		a.ssoRoleChanged(u, was, id.Provider, "sign-in")
		if err := a.SyncSSOGroups(u.ID, id.Provider, id.Groups); err != nil {
			return u, api.Session{}, err
		}
	case errors.Is(err, store.ErrNotFound):
		if err := a.membersAllowed(role); err != nil {
			return u, api.Session{}, err
		}
		l = store.SSOLink{Provider: id.Provider, Subject: id.Subject, Email: id.Email, Refresh: sso.Seal(a.core.ProvidersKey(), id.Refresh), SignedIn: now, Checked: now}
		base := ssoName(id)
		for i := 1; ; i++ {
			name := base
			if i > 1 {
				name = fmt.Sprintf("%s-%d", strings.TrimRight(base[:min(len(base), 58)], "-"), i)
			}
			u, err = a.store.AddSSOUser(store.User{Name: name, Role: role, Created: now}, l)
			if !errors.Is(err, store.ErrConflict) || i >= 100 {
				break
			}
		}
		if err != nil {
			return u, api.Session{}, err
		}
		a.log.Info("user created", "user", u.Name, "role", u.Role, "by", "sso:"+id.Provider, "email", id.Email)
		detail, _ := json.Marshal(map[string]any{"role": u.Role, "email": id.Email, "groups": id.Groups})
		a.core.Record(audit.Entry{User: "paddockd", Via: "sso:" + id.Provider, Action: "user.create", Object: u.Name, Result: "ok", Detail: detail})
		if err := a.SyncSSOGroups(u.ID, id.Provider, id.Groups); err != nil {
			return u, api.Session{}, err
		}
	default:
		return u, api.Session{}, err
	}
	sess, err := a.NewSession(u)
	return u, sess, err
}

// ssoRoleChanged writes to the log and the audit log a role that a
// sign-in provider's groups changed (at a sign-in or a recheck).
func (a *Access) ssoRoleChanged(u store.User, was, provider, at string) {
	if u.Role == was {
		return
	}
	a.log.Info("sso role changed", "user", u.Name, "from", was, "to", u.Role, "at", at)
	detail, _ := json.Marshal(map[string]any{"from": was, "to": u.Role, "at": at})
	a.core.Record(audit.Entry{User: "paddockd", Via: "sso:" + provider, Action: "user.role", Object: u.Name, Result: "ok", Detail: detail})
}

var notName = regexp.MustCompile(`[^a-z0-9-]+`)

// ssoName makes a valid user name of what the provider calls the person.
func ssoName(id sso.Identity) string {
	n := notName.ReplaceAllString(strings.ToLower(id.Username), "-")
	n = strings.Trim(n, "-")
	if len(n) > 60 {
		n = strings.Trim(n[:60], "-")
	}
	if api.ValidName("user", n) != nil {
		n = "user"
	}
	return n
}

// RecheckSSO asks each single sign-on user's provider about them again
// (see above); the users who lost their tokens are named in the log and
// the audit log.
func (a *Access) RecheckSSO(ctx context.Context) error {
	if a.core.Providers() == nil {
		return nil
	}
	links, err := a.store.SSOLinks()
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range links {
		u, err := a.store.GetUser(l.UserID)
		if err != nil {
			continue
		}
		now := a.core.Time()
		refresh, err := sso.Open(a.core.ProvidersKey(), l.Refresh)
		if err != nil || refresh == "" {
			if now.Sub(l.SignedIn) >= a.cfg.SSOMaxAge {
				a.revokeSSO(u, fmt.Sprintf("no refresh token from the provider, and the last sign-in is older than sso_max_age = %s", a.cfg.SSOMaxAge))
			}
			continue
		}
		id, err := a.core.Providers().Refresh(ctx, l.Provider, refresh)
		var refused *sso.Refused
		if errors.As(err, &refused) {
			l.Refresh = ""
			errs = append(errs, a.store.UpdateSSO(l, ""))
			a.revokeSSO(u, refused.Why)
			continue
		}
		if err != nil {
			// The provider is away: ask again at the next recheck.
			a.log.Warn("sso recheck", "user", u.Name, "provider", l.Provider, "err", err)
			continue
		}
		role := ""
		if id.Subject != "" {
			p, _ := a.core.Providers().Provider(l.Provider)
			if role, err = p.Admit(id); err != nil {
				l.Refresh = ""
				errs = append(errs, a.store.UpdateSSO(l, ""))
				a.revokeSSO(u, err.Error())
				continue
			}
			errs = append(errs, a.SyncSSOGroups(u.ID, l.Provider, id.Groups))
		}
		l.Refresh, l.Checked = sso.Seal(a.core.ProvidersKey(), id.Refresh), now
		errs = append(errs, a.store.UpdateSSO(l, role))
		if now, err := a.store.GetUser(u.ID); err == nil {
			a.ssoRoleChanged(now, u.Role, l.Provider, "recheck")
		}
	}
	return errors.Join(errs...)
}

// revokeSSO removes a single sign-on user's API tokens and sessions.
func (a *Access) revokeSSO(u store.User, why string) {
	n, err := a.store.RevokeTokens(u.ID)
	if err != nil {
		a.log.Error("revoking tokens", "user", u.Name, "err", err)
		return
	}
	if n == 0 {
		return
	}
	a.log.Warn("sso user's tokens revoked", "user", u.Name, "tokens", n, "why", why)
	detail, _ := json.Marshal(map[string]any{"why": why, "tokens": n})
	a.core.Record(audit.Entry{User: "paddockd", Via: "sso", Action: "user.sso.revoke", Object: u.Name, Result: "ok", Detail: detail})
}
