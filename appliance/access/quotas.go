package access

import (
	"context"
	"errors"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Quota is a user's quota and use: the owner reads anyone's; a member,
// their own ("" is the caller).
func (a *Access) Quota(ctx context.Context, name string) (api.UserQuota, error) {
	u, err := a.quotaUser(ctx, name)
	if err != nil {
		return api.UserQuota{}, err
	}
	return a.core.QuotaView(u)
}

// quotaUser is the user a quota request is about: "" is the caller; a
// member asking of another is told there is no such user.
func (a *Access) quotaUser(ctx context.Context, name string) (store.User, error) {
	me, ok := caller.From(ctx)
	if name == "" {
		if !ok {
			return store.User{}, api.Invalid("user", "name the user")
		}
		return me, nil
	}
	u, err := a.store.UserByName(name)
	if errors.Is(err, store.ErrNotFound) || (err == nil && ok && !me.SeesAll() && me.ID != u.ID) {
		return store.User{}, api.NotFound("user", name)
	}
	return u, err
}

// SetQuota changes a user's quota (the owner's).
func (a *Access) SetQuota(ctx context.Context, name string, p api.QuotaPut) (api.UserQuota, error) {
	if err := caller.RequireAdmin(ctx, "set quotas"); err != nil {
		return api.UserQuota{}, err
	}
	u, err := a.quotaUser(ctx, name)
	if err != nil {
		return api.UserQuota{}, err
	}
	if u.Role != store.RoleMember {
		return api.UserQuota{}, api.Conflict("%s is an %s: owners and admins have no quota", u.Name, u.Role)
	}
	set, err := a.store.GetQuota(u.ID)
	if err != nil {
		return api.UserQuota{}, err
	}
	if set, err = applyQuotaPut(set, p); err != nil {
		return api.UserQuota{}, err
	}
	if err := a.store.SetQuota(u.ID, set); err != nil {
		return api.UserQuota{}, err
	}
	return a.Quota(ctx, u.Name)
}

// applyQuotaPut changes what is set of a quota as p says.
func applyQuotaPut(set store.Quota, p api.QuotaPut) (store.Quota, error) {
	for _, f := range []struct {
		name string
		v    *int
		to   **int
	}{{"boxes", p.Boxes, &set.Boxes}, {"running", p.Running, &set.Running}, {"drives", p.Drives, &set.Drives}, {"jobs", p.Jobs, &set.Jobs}} {
		if f.v != nil {
			if *f.v < 0 {
				return set, api.Invalid(f.name, "%s must be 0 (no bound) or more", f.name)
			}
			*f.to = f.v
		}
	}
	if p.DriveGiB != nil {
		if *p.DriveGiB < 0 {
			return set, api.Invalid("drive_gib", "drive_gib must be 0 (no bound) or more")
		}
		set.DriveGiB = p.DriveGiB
	}
	if p.Types != nil {
		for _, t := range *p.Types {
			if err := api.ValidType(t); err != nil {
				return set, err
			}
		}
		set.Types = p.Types
	}
	for _, f := range p.Default {
		switch f {
		case "boxes":
			set.Boxes = nil
		case "running":
			set.Running = nil
		case "drives":
			set.Drives = nil
		case "drive_gib":
			set.DriveGiB = nil
		case "jobs":
			set.Jobs = nil
		case "types":
			set.Types = nil
		default:
			return set, api.Invalid("default", "no quota field %q: the fields are %s", f, strings.Join(api.QuotaFields, ", "))
		}
	}
	return set, nil
}
