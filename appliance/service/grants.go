package service

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

// BoxAccess is what u may do with box b.
func (s *Service) BoxAccess(u store.User, b store.Box) (string, error) {
	return caller.AccessFor(s.Store, u, b)
}

// AccessOf is what the user of ctx may do with the box named name (all,
// for the daemon itself; none, for a box that is not there).
func (s *Service) AccessOf(ctx context.Context, name string) (string, error) {
	b, ok, err := s.LookBox(name)
	if err != nil || !ok {
		return caller.AccessNone, err
	}
	return s.BoxAccessOf(ctx, b)
}

// LookBox reads box name; ok is false when there is none. A request
// reads its box once, at its route, and hands it on (OwnerName,
// BoxAccessOf, UseAwake, CheckExecIn, ExecIn).
func (s *Service) LookBox(name string) (b store.Box, ok bool, err error) {
	b, err = s.Store.GetBox(name)
	if errors.Is(err, store.ErrNotFound) {
		return b, false, nil
	}
	return b, err == nil, err
}

// BoxAccessOf is what the user of ctx may do with box b.
func (s *Service) BoxAccessOf(ctx context.Context, b store.Box) (string, error) {
	u, ok := caller.From(ctx)
	if !ok {
		return caller.AccessAll, nil
	}
	return s.BoxAccess(u, b)
}

// ShareBox shares a box with a user as access (viewer or member).
func (s *Service) ShareBox(ctx context.Context, box, user, access string) (api.Grant, error) {
	if access == "" {
		access = caller.AccessViewer
	}
	if access != caller.AccessViewer && access != caller.AccessMember {
		return api.Grant{}, api.Invalid("access", "access %q: give viewer or member", access)
	}
	b, err := s.shareable(ctx, box)
	if err != nil {
		return api.Grant{}, err
	}
	if g, ok := strings.CutPrefix(user, "@"); ok {
		if err := api.ValidGroup(g); err != nil {
			return api.Grant{}, err
		}
		if err := s.Store.SetGroupGrant(box, g, access); err != nil {
			return api.Grant{}, err
		}
		return api.Grant{User: user, Access: access}, nil
	}
	u, err := s.Store.UserByName(user)
	if errors.Is(err, store.ErrNotFound) {
		return api.Grant{}, api.NotFound("user", user)
	}
	if err != nil {
		return api.Grant{}, err
	}
	if u.ID == b.Owner {
		return api.Grant{}, api.Invalid("user", "%s owns box %s", user, box)
	}
	if err := s.Store.SetGrant(store.Grant{Box: box, UserID: u.ID, Access: access}); err != nil {
		return api.Grant{}, err
	}
	return api.Grant{User: u.Name, Access: access}, nil
}

// UnshareBox stops sharing a box with a user.
func (s *Service) UnshareBox(ctx context.Context, box, user string) error {
	if _, err := s.shareable(ctx, box); err != nil {
		return err
	}
	var err error
	if g, ok := strings.CutPrefix(user, "@"); ok {
		err = s.Store.RemoveGroupGrant(box, g)
	} else {
		var u store.User
		if u, err = s.Store.UserByName(user); err == nil {
			err = s.Store.RemoveGrant(box, u.ID)
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		return api.NotFound("share of box "+box+" with user", user)
	}
	return err
}

// BoxGrants lists who a box is shared with.
func (s *Service) BoxGrants(ctx context.Context, box string) ([]api.Grant, error) {
	if _, err := s.shareable(ctx, box); err != nil {
		return nil, err
	}
	gs, err := s.Store.Grants(box)
	if err != nil {
		return nil, err
	}
	names := s.OwnerNames()
	out := []api.Grant{}
	for _, g := range gs {
		out = append(out, api.Grant{User: names[g.UserID], Access: g.Access})
	}
	groups, err := s.Store.GroupGrants(box)
	if err != nil {
		return nil, err
	}
	for g, a := range groups {
		out = append(out, api.Grant{User: "@" + g, Access: a})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].User < out[j].User })
	return out, nil
}

// shareable is a box the user of ctx may share: theirs, or any for an
// owner or admin.
func (s *Service) shareable(ctx context.Context, box string) (store.Box, error) {
	b, err := s.Store.GetBox(box)
	if errors.Is(err, store.ErrNotFound) {
		return b, api.NotFound("box", box)
	}
	if err != nil {
		return b, err
	}
	switch a, err := s.BoxAccessOf(ctx, b); {
	case err != nil:
		return b, err
	case a == caller.AccessNone:
		return b, api.NotFound("box", box)
	case a != caller.AccessAll:
		return b, &api.Error{Code: api.CodeForbidden, Message: fmt.Sprintf("box %s is shared with you as a %s: only its owner shares it", box, a)}
	}
	return b, nil
}

// grantsOf maps the boxes shared with the user of ctx to their access.
func (s *Service) grantsOf(ctx context.Context) (map[string]string, error) {
	u, ok := caller.From(ctx)
	if !ok {
		return nil, nil
	}
	gs, err := s.Store.GrantsOf(u.ID)
	if err != nil {
		return nil, err
	}
	ggs, err := s.Store.GroupGrantsOf(u.ID)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, g := range append(ggs, gs...) {
		if caller.AccessRank(out[g.Box]) > caller.AccessRank(g.Access) {
			continue
		}
		a := g.Access
		if a == caller.AccessMember && u.Role == store.RoleViewer {
			a = caller.AccessViewer
		}
		out[g.Box] = a
	}
	return out, nil
}
