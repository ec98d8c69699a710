package service

import (
	"context"
	"errors"

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
