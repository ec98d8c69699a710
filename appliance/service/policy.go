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

// checkPolicy accepts "allow-all", "deny-all" or the name of a policy the
// user of ctx may see.
func (s *Service) checkPolicy(ctx context.Context, tx *store.Tx, name string) error {
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

// SetPolicy changes a box's policy; it takes effect on the running box at
// once (the rules are rebuilt before this returns).
func (s *Service) SetPolicy(ctx context.Context, name, policy string) (api.Box, error) {
	err := s.UpdateBox(name, func(tx *store.Tx, b *store.Box) error {
		if policy == "" {
			return api.Invalid("policy", "no policy given")
		}
		if err := s.checkPolicy(ctx, tx, policy); err != nil {
			return err
		}
		b.Policy = policy
		return nil
	})
	if err != nil {
		return api.Box{}, err
	}
	// Only the rules change: no container is touched.
	if err := s.Rec.SyncPolicies(ctx); err != nil {
		return api.Box{}, err
	}
	return s.GetBox(name)
}

// ListPolicies lists the named policies the user of ctx sees, and which
// of their boxes use each.
func (s *Service) ListPolicies(ctx context.Context) ([]api.Policy, error) {
	pols, err := s.Store.ListPolicies()
	if err != nil {
		return nil, err
	}
	boxes, err := s.Store.ListBoxes()
	if err != nil {
		return nil, err
	}
	out := []api.Policy{}
	for _, p := range pols {
		if !caller.Visible(ctx, p.Owner) {
			continue
		}
		ap := api.Policy{PolicySpec: api.PolicySpec{Name: p.Name, AllowDomains: p.AllowDomains, AllowCIDRs: p.AllowCIDRs}, Project: p.Project}
		for _, b := range boxes {
			if b.Policy == p.Name && caller.Visible(ctx, b.Owner) {
				ap.UsedBy = append(ap.UsedBy, b.Name)
			}
		}
		sort.Strings(ap.UsedBy)
		out = append(out, ap)
	}
	return out, nil
}

// CreatePolicy declares a named policy outside any Boxfile.
func (s *Service) CreatePolicy(ctx context.Context, p api.PolicyPost) (api.Policy, error) {
	return s.putPolicy(ctx, p, true)
}

// RemovePolicy removes a named policy that no box uses and no Boxfile owns.
func (s *Service) RemovePolicy(ctx context.Context, name string) error {
	return s.Store.Declare(func(tx *store.Tx) error {
		pols, err := tx.ListPolicies()
		if err != nil {
			return err
		}
		var found *store.Policy
		for i := range pols {
			if pols[i].Name == name {
				found = &pols[i]
			}
		}
		if found == nil || !caller.Visible(ctx, found.Owner) {
			return api.NotFound("policy", name)
		}
		if found.Project != "" {
			return api.Conflict("policy %q belongs to project %q: change its Boxfile", name, found.Project)
		}
		boxes, err := tx.ListBoxes()
		if err != nil {
			return err
		}
		var users []string
		for _, b := range boxes {
			if b.Policy == name {
				users = append(users, b.Name)
			}
		}
		if len(users) > 0 {
			return api.Conflict("policy %q is used by %s", name, strings.Join(users, ", "))
		}
		return tx.DeletePolicy(name)
	})
}

// PolicyReport returns what a box's firewall and resolver did.
func (s *Service) PolicyReport(name string) (api.PolicyReport, error) {
	b, err := s.Store.GetBox(name)
	if errors.Is(err, store.ErrNotFound) {
		return api.PolicyReport{}, api.NotFound("box", name)
	} else if err != nil {
		return api.PolicyReport{}, err
	}
	out := api.PolicyReport{Box: name, Policy: b.Policy, Drops: map[string]uint64{}, DNS: []api.DNSDecision{}}
	if s.Firewall == nil {
		return out, nil
	}
	r, err := s.Firewall.Report(name)
	if err != nil {
		return out, err
	}
	out.Drops = r.Drops
	for _, d := range r.DNS {
		out.DNS = append(out.DNS, api.DNSDecision{Time: d.Time, Name: d.Name, Allowed: d.Allowed, Reason: d.Reason})
	}
	return out, nil
}

// UpdatePolicy replaces the allowlists of a named policy made outside any
// Boxfile; the boxes that use it get the new rules before this returns.
// A Boxfile's policy is changed in its Boxfile, so that the next apply
// does not undo the change.
func (s *Service) UpdatePolicy(ctx context.Context, p api.PolicySpec) (api.Policy, error) {
	return s.putPolicy(ctx, p, false)
}

// putPolicy makes policy p (create: its name is not taken, by anyone) or
// changes the caller's policy of its name.
func (s *Service) putPolicy(ctx context.Context, p api.PolicySpec, create bool) (api.Policy, error) {
	if err := api.ValidateProject(api.ProjectSpec{Policies: []api.PolicySpec{p}}); err != nil {
		return api.Policy{}, err
	}
	err := s.Store.Declare(func(tx *store.Tx) error {
		pols, err := tx.ListPolicies()
		if err != nil {
			return err
		}
		for _, old := range pols {
			switch {
			case old.Name != p.Name:
			case create:
				return api.Conflict("a policy named %q already exists", p.Name)
			case !caller.Visible(ctx, old.Owner):
			case old.Project != "":
				return api.Conflict("policy %q is declared by project %q's Boxfile; change it there and apply", p.Name, old.Project)
			default:
				old.AllowDomains, old.AllowCIDRs = p.AllowDomains, p.AllowCIDRs
				return tx.PutPolicy(old)
			}
		}
		if create {
			return tx.PutPolicy(store.Policy{Name: p.Name, AllowDomains: p.AllowDomains, AllowCIDRs: p.AllowCIDRs, Owner: caller.OwnerID(ctx)})
		}
		return api.NotFound("policy", p.Name)
	})
	if err != nil {
		return api.Policy{}, err
	}
	if create {
		// No box uses it yet.
		return api.Policy{PolicySpec: p}, nil
	}
	if err := s.Rec.SyncPolicies(ctx); err != nil {
		return api.Policy{}, err
	}
	pols, err := s.ListPolicies(ctx)
	for _, pol := range pols {
		if pol.Name == p.Name {
			return pol, err
		}
	}
	return api.Policy{PolicySpec: p}, err
}
