package access

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// CreateToken makes an API token of the user for automation (with e2b,
// an E2B key: its value begins with "e2b_"); its value is returned once
// and only its hash is kept.
func (a *Access) CreateToken(ctx context.Context, name string, e2b bool) (api.TokenCreated, error) {
	if err := api.ValidName("token", name); err != nil {
		return api.TokenCreated{}, err
	}
	ts, err := a.store.Tokens(caller.OwnerID(ctx), store.TokenAPI)
	if err != nil {
		return api.TokenCreated{}, err
	}
	for _, t := range ts {
		if t.Name == name {
			return api.TokenCreated{}, api.Conflict("a token named %q exists", name)
		}
	}
	if err := a.mayMintToken(ctx, len(ts)); err != nil {
		return api.TokenCreated{}, err
	}
	prefix := auth.Prefix
	if e2b {
		prefix = auth.E2BPrefix
	}
	tok, hash := auth.NewTokenWith(prefix)
	if err := a.store.AddToken(store.Token{Hash: hash, Name: name, UserID: caller.OwnerID(ctx), Kind: store.TokenAPI, Created: a.core.Time()}); err != nil {
		return api.TokenCreated{}, err
	}
	return api.TokenCreated{Name: name, Token: tok}, nil
}

// Tokens lists the user's API tokens by name (never their values).
func (a *Access) Tokens(ctx context.Context) ([]api.TokenInfo, error) {
	ts, err := a.store.Tokens(caller.OwnerID(ctx), store.TokenAPI)
	if err != nil {
		return nil, err
	}
	out := []api.TokenInfo{}
	for _, t := range ts {
		out = append(out, api.TokenInfo{Name: t.Name, Created: t.Created})
	}
	return out, nil
}

// RevokeToken deletes one of the user's tokens; requests with it fail
// from then on.
func (a *Access) RevokeToken(ctx context.Context, name string) error {
	if err := a.store.DeleteToken(caller.OwnerID(ctx), name); errors.Is(err, store.ErrNotFound) {
		return api.NotFound("token", name)
	} else if err != nil {
		return err
	}
	return nil
}

// What a user may mint: API tokens held at once, and API tokens and
// dashboard sign-in links made per hour (each kind its own budget, a
// burst of MintsPerHour, then one every hour/MintsPerHour). Rate limits
// count per user, so that new tokens buy no new budget, and these bound
// the tokens and links themselves.
const (
	MaxTokens    = 50
	MintsPerHour = 30
)

type mintLimits struct {
	once sync.Once
	l    *auth.Limiter
}

// mayMintToken refuses one more API token to the user of ctx, who holds
// held, past MaxTokens held or MintsPerHour made. Every way of making one
// passes here: 'paddock token create' and a device login's approval.
func (a *Access) mayMintToken(ctx context.Context, held int) error {
	if held >= MaxTokens {
		return &api.Error{Code: api.CodeTooMany, Message: fmt.Sprintf("you hold %d API tokens, the most a user may: revoke one first ('paddock token rm NAME')", held)}
	}
	return a.mint(ctx, "API tokens")
}

// mint takes one of the user's hourly mints of kind, or says when the
// next comes.
func (a *Access) mint(ctx context.Context, kind string) error {
	a.mints.once.Do(func() {
		a.mints.l = &auth.Limiter{Every: time.Hour / MintsPerHour, Burst: MintsPerHour}
	})
	if ok, wait := a.mints.l.Allow(fmt.Sprint(kind, ":", caller.OwnerID(ctx))); !ok {
		return &api.Error{Code: api.CodeTooMany, Message: fmt.Sprintf("you made %d %s within the hour, the most a user may: the next in %s", MintsPerHour, kind, wait.Round(time.Second))}
	}
	return nil
}
