package grants

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Share shares a box with a user as access (viewer or member).
func (g *Grants) Share(ctx context.Context, box, user, access string) (api.Grant, error) {
	if access == "" {
		access = caller.AccessViewer
	}
	if access != caller.AccessViewer && access != caller.AccessMember {
		return api.Grant{}, api.Invalid("access", "access %q: give viewer or member", access)
	}
	b, err := g.shareable(ctx, box)
	if err != nil {
		return api.Grant{}, err
	}
	if group, ok := strings.CutPrefix(user, "@"); ok {
		if err := api.ValidGroup(group); err != nil {
			return api.Grant{}, err
		}
		if err := g.store.SetGroupGrant(box, group, access); err != nil {
			return api.Grant{}, err
		}
		return api.Grant{User: user, Access: access}, nil
	}
	u, err := g.store.UserByName(user)
	if errors.Is(err, store.ErrNotFound) {
		return api.Grant{}, api.NotFound("user", user)
	}
	if err != nil {
		return api.Grant{}, err
	}
	if u.ID == b.Owner {
		return api.Grant{}, api.Invalid("user", "%s owns box %s", user, box)
	}
	if err := g.store.SetGrant(store.Grant{Box: box, UserID: u.ID, Access: access}); err != nil {
		return api.Grant{}, err
	}
	return api.Grant{User: u.Name, Access: access}, nil
}

// Unshare stops sharing a box with a user.
func (g *Grants) Unshare(ctx context.Context, box, user string) error {
	if _, err := g.shareable(ctx, box); err != nil {
		return err
	}
	var err error
	if group, ok := strings.CutPrefix(user, "@"); ok {
		err = g.store.RemoveGroupGrant(box, group)
	} else {
		var u store.User
		if u, err = g.store.UserByName(user); err == nil {
			err = g.store.RemoveGrant(box, u.ID)
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		return api.NotFound("share of box "+box+" with user", user)
	}
	return err
}

// List lists who a box is shared with.
func (g *Grants) List(ctx context.Context, box string) ([]api.Grant, error) {
	if _, err := g.shareable(ctx, box); err != nil {
		return nil, err
	}
	gs, err := g.store.Grants(box)
	if err != nil {
		return nil, err
	}
	names := g.core.OwnerNames()
	out := []api.Grant{}
	for _, gr := range gs {
		out = append(out, api.Grant{User: names[gr.UserID], Access: gr.Access})
	}
	groups, err := g.store.GroupGrants(box)
	if err != nil {
		return nil, err
	}
	for group, a := range groups {
		out = append(out, api.Grant{User: "@" + group, Access: a})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].User < out[j].User })
	return out, nil
}

// shareable is a box the user of ctx may share: theirs, or any for an
// owner or admin.
func (g *Grants) shareable(ctx context.Context, box string) (store.Box, error) {
	b, err := g.store.GetBox(box)
	if errors.Is(err, store.ErrNotFound) {
		return b, api.NotFound("box", box)
	}
	if err != nil {
		return b, err
	}
	switch a, err := g.core.BoxAccessOf(ctx, b); {
	case err != nil:
		return b, err
	case a == caller.AccessNone:
		return b, api.NotFound("box", box)
	case a != caller.AccessAll:
		return b, &api.Error{Code: api.CodeForbidden, Message: fmt.Sprintf("box %s is shared with you as a %s: only its owner shares it", box, a)}
	}
	return b, nil
}
