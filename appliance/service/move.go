package service

import (
	"context"
	"fmt"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Mover moves a box to another server (package nodes has the moves).
type Mover interface {
	MoveBox(ctx context.Context, name, to string) (api.Box, error)
}

// forkOnto forks box src onto server p.Node (the owner's): the fork is
// made where its snapshot is, then moved there (MoveBox) when that is
// another server. A fork mounts its box's drives, so it goes where they
// are: another server is refused before anything is made.
func (s *Service) forkOnto(ctx context.Context, src store.Box, p api.ForkPost) (api.Box, error) {
	if err := caller.RequireOwner(ctx, "fork onto a chosen server"); err != nil {
		return api.Box{}, err
	}
	ns, err := s.Store.ListNodes()
	if err != nil {
		return api.Box{}, err
	}
	if s.Cluster == nil || len(ns) == 0 || s.Moves == nil {
		return api.Box{}, api.Invalid("node", "this Paddock has one server: a fork is made on it (leave out the server)")
	}
	target, err := s.Wanted(p.Node, ns)
	if err != nil {
		return api.Box{}, err
	}
	at := src.Node // a snapshot taken now is where the box is
	if p.Snapshot != "" {
		if n, err := s.Store.Where("snapshot", p.Snapshot); err == nil {
			at = n
		}
	}
	if len(src.Mounts) > 0 && target != at {
		return api.Box{}, api.Invalid("node", "box %q mounts drives (%s, …) on %s: its fork mounts them too, and is made there, not on %s", src.Name, src.Mounts[0].Drive, s.NodeDisplay(at), p.Node)
	}
	q := p
	q.Node = ""
	fb, err := s.Fork(ctx, src.Name, q)
	if err != nil || target == at {
		return fb, err
	}
	moved, err := s.Moves.MoveBox(ctx, fb.Name, p.Node)
	if err != nil {
		return fb, fmt.Errorf("the fork %s was made on %s, where its snapshot is; moving it to %s failed: %w", fb.Name, s.NodeDisplay(at), p.Node, err)
	}
	return moved, nil
}
