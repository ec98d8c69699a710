package service

import (
	"context"
	"fmt"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// CheckPolicy accepts "allow-all", "deny-all" or the name of a policy the
// user of ctx may see.
func (s *Service) CheckPolicy(ctx context.Context, tx *store.Tx, name string) error {
	switch name {
	case "", api.PolicyAllowAll, api.PolicyDenyAll:
		return nil
	}
	pols, err := tx.ListPolicies()
	if err != nil {
		return err
	}
	var names []string
	for _, p := range pols {
		if !caller.Visible(ctx, p.Owner) {
			continue
		}
		if p.Name == name {
			return nil
		}
		names = append(names, p.Name)
	}
	msg := fmt.Sprintf("no policy named %q: use allow-all, deny-all", name)
	if len(names) > 0 {
		msg += " or one of " + strings.Join(names, ", ")
	}
	return &api.Error{Code: api.CodeInvalid, Field: "policy", Message: msg}
}
