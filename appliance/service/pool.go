package service

import (
	"context"

	"github.com/paddock-dev/paddock/appliance/pool"
	"github.com/paddock-dev/paddock/appliance/reconcile"
	"github.com/paddock-dev/paddock/appliance/store"
)

// keeper is the warm pool's work (package pool) over the core as it
// stands now.
func (s *Service) keeper() pool.Keeper {
	return pool.Keeper{Core: s, Store: s.Store, Driver: s.Driver, Rec: s.Rec, Cfg: &s.Cfg, Log: s.Log, Fore: &s.Fore, Cold: &s.cold}
}

// TakePool, in the transaction that declares b, gives b a ready pool
// box's container (pool.Keeper.Take); false when none fits or is ready.
func (s *Service) TakePool(tx *store.Tx, b *store.Box, want string) (bool, error) {
	return s.keeper().Take(tx, b, want)
}

// KeepPool makes the declared pool what the configuration asks for and
// marks the pool boxes that answer ready (pool.Keeper.Keep); it returns
// how many are not ready yet.
func (s *Service) KeepPool(ctx context.Context) (int, error) { return s.keeper().Keep(ctx) }

// PoolStatus says how many pool boxes of each type are ready and how many
// are kept, e.g. "small: 2 of 2 ready" ("" with no pool).
func (s *Service) PoolStatus() (string, error) { return s.keeper().Status() }

// ForegroundClaimed gives every running box claimed from the pool a box's
// CPU share if it still has a pool box's (paddockd runs it at its start).
func (s *Service) ForegroundClaimed(ctx context.Context) { s.keeper().ForegroundClaimed(ctx) }

// NotePoolChange tells the pool's keeper (PoolChanged) that what it
// keeps changed.
func (s *Service) NotePoolChange() {
	if s.PoolChanged != nil {
		s.PoolChanged()
	}
}

// withoutPool drops what a run did to the warm pool: nobody's boxes, and
// not news to anyone.
func withoutPool(res reconcile.Result) reconcile.Result {
	out := reconcile.Result{Errors: res.Errors}
	for _, c := range res.Changes {
		if !c.Pool {
			out.Changes = append(out.Changes, c)
		}
	}
	return out
}
