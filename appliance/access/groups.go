package access

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Groups: users in a group share its quota (limits a member has unless
// set for them: the most generous of their groups', over the server's
// defaults) and the boxes shared with it ('paddock share web @eng').
// The owner or an admin puts users in groups by hand; a sign-in provider
// puts its users in the groups its ID token lists (replaced at each
// sign-in and recheck). Group names are like user names; a provider's
// are PROVIDER/NAME (@corp/eng), a name space of their own: a provider's
// group named like one of the owner's gets none of its shares or quota,
// and the owner gives its own to the provider's by that full name.

// providerGroup is a provider's group's name as Paddock keeps it.
func providerGroup(provider, group string) string { return provider + "/" + group }

// Groups lists every group with members or a quota (the owner's and
// admins').
func (a *Access) Groups(ctx context.Context) ([]api.Group, error) {
	if err := caller.RequireAdmin(ctx, "list groups"); err != nil {
		return nil, err
	}
	ms, err := a.store.GroupMembers()
	if err != nil {
		return nil, err
	}
	withQuota, err := a.store.GroupQuotas()
	if err != nil {
		return nil, err
	}
	names := a.core.OwnerNames()
	by := map[string]*api.Group{}
	get := func(g string) *api.Group {
		if by[g] == nil {
			by[g] = &api.Group{Name: g, Members: []api.GroupMember{}}
		}
		return by[g]
	}
	for _, m := range ms {
		get(m.Group).Members = append(get(m.Group).Members, api.GroupMember{User: names[m.UserID], Source: m.Source})
	}
	for _, g := range withQuota {
		q, err := a.store.GroupQuota(g)
		if err != nil {
			return nil, err
		}
		get(g).Quota = quotaPut(q)
	}
	out := make([]api.Group, 0, len(by))
	for _, g := range by {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func quotaPut(q store.Quota) api.QuotaPut {
	return api.QuotaPut{Boxes: q.Boxes, Running: q.Running, Drives: q.Drives, DriveGiB: q.DriveGiB, Jobs: q.Jobs, Types: q.Types}
}

// AddToGroup puts a user in a group by hand (not in a provider's: its
// members are those the provider lists).
func (a *Access) AddToGroup(ctx context.Context, group, user string) error {
	u, err := a.groupChange(ctx, group, user)
	if err != nil {
		return err
	}
	if p, _, ok := strings.Cut(group, "/"); ok {
		return api.Invalid("group", "@%s is the sign-in provider %s's group: its members are those %s lists at their sign-in", group, p, p)
	}
	return a.store.AddToGroup(u.ID, group, store.GroupByOwner)
}

// RemoveFromGroup takes a user put in a group by hand out of it (a
// provider's groups are the provider's).
func (a *Access) RemoveFromGroup(ctx context.Context, group, user string) error {
	u, err := a.groupChange(ctx, group, user)
	if err != nil {
		return err
	}
	err = a.store.RemoveFromGroup(u.ID, group, store.GroupByOwner)
	if errors.Is(err, store.ErrNotFound) {
		return api.NotFound("member of group "+group+" put there by hand", user)
	}
	return err
}

func (a *Access) groupChange(ctx context.Context, group, user string) (store.User, error) {
	if err := caller.RequireAdmin(ctx, "change groups"); err != nil {
		return store.User{}, err
	}
	if err := api.ValidGroup(group); err != nil {
		return store.User{}, err
	}
	u, err := a.store.UserByName(user)
	if errors.Is(err, store.ErrNotFound) {
		return u, api.NotFound("user", user)
	}
	return u, err
}

// SetGroupQuota changes a group's quota: each field given is set (0: no
// bound); those in Default are unset.
func (a *Access) SetGroupQuota(ctx context.Context, group string, p api.QuotaPut) (api.Group, error) {
	if err := caller.RequireAdmin(ctx, "set quotas"); err != nil {
		return api.Group{}, err
	}
	if err := api.ValidGroup(group); err != nil {
		return api.Group{}, err
	}
	set, err := a.store.GroupQuota(group)
	if err != nil {
		return api.Group{}, err
	}
	if set, err = applyQuotaPut(set, p); err != nil {
		return api.Group{}, err
	}
	if err := a.store.SetGroupQuota(group, set); err != nil {
		return api.Group{}, err
	}
	gs, err := a.Groups(ctx)
	for _, g := range gs {
		if g.Name == group {
			return g, err
		}
	}
	return api.Group{Name: group, Members: []api.GroupMember{}, Quota: quotaPut(set)}, err
}

// SyncSSOGroups puts a provider's user in the groups it listed (valid
// names only, as PROVIDER/NAME), and out of those it no longer lists.
func (a *Access) SyncSSOGroups(user int64, provider string, groups []string) error {
	var ok []string
	for _, g := range groups {
		if g = providerGroup(provider, strings.ToLower(g)); api.ValidGroup(g) == nil {
			ok = append(ok, g)
		}
	}
	return a.store.SetGroupsFrom(user, "sso:"+provider, ok)
}
