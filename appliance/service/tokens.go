package service

import (
	"context"
	"errors"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/store"
)

// CreateToken makes an API token of the user for automation; its value
// is returned once and only its hash is kept.
func (s *Service) CreateToken(ctx context.Context, name string) (api.TokenCreated, error) {
	if err := api.ValidName("token", name); err != nil {
		return api.TokenCreated{}, err
	}
	ts, err := s.Store.Tokens(ownerID(ctx), store.TokenAPI)
	if err != nil {
		return api.TokenCreated{}, err
	}
	for _, t := range ts {
		if t.Name == name {
			return api.TokenCreated{}, conflict("a token named %q exists", name)
		}
	}
	tok, hash := auth.NewToken()
	if err := s.Store.AddToken(store.Token{Hash: hash, Name: name, UserID: ownerID(ctx), Kind: store.TokenAPI, Created: s.now()}); err != nil {
		return api.TokenCreated{}, err
	}
	return api.TokenCreated{Name: name, Token: tok}, nil
}

// Tokens lists the user's API tokens by name (never their values).
func (s *Service) Tokens(ctx context.Context) ([]api.TokenInfo, error) {
	ts, err := s.Store.Tokens(ownerID(ctx), store.TokenAPI)
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
func (s *Service) RevokeToken(ctx context.Context, name string) error {
	if err := s.Store.DeleteToken(ownerID(ctx), name); errors.Is(err, store.ErrNotFound) {
		return notFound("token", name)
	} else if err != nil {
		return err
	}
	return nil
}
