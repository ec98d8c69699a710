package policy

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Set changes a box's policy; it takes effect on the running box at
// once (the rules are rebuilt before this returns).
func (ps *Policies) Set(ctx context.Context, name, policy string) (api.Box, error) {
	err := ps.core.UpdateBox(name, func(tx *store.Tx, b *store.Box) error {
		if policy == "" {
			return api.Invalid("policy", "no policy given")
		}
		if err := ps.core.CheckPolicy(ctx, tx, policy); err != nil {
			return err
		}
		b.Policy = policy
		return nil
	})
	if err != nil {
		return api.Box{}, err
	}
	// Only the rules change: no container is touched.
	if err := ps.rules.SyncPolicies(ctx); err != nil {
		return api.Box{}, err
	}
	return ps.core.GetBox(name)
}

// List lists the named policies the user of ctx sees, and which
// of their boxes use each.
func (ps *Policies) List(ctx context.Context) ([]api.Policy, error) {
	pols, err := ps.store.ListPolicies()
	if err != nil {
		return nil, err
	}
	boxes, err := ps.store.ListBoxes()
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

// Create declares a named policy outside any Boxfile.
func (ps *Policies) Create(ctx context.Context, p api.PolicyPost) (api.Policy, error) {
	return ps.put(ctx, p, true)
}

// Remove removes a named policy that no box uses and no Boxfile owns.
func (ps *Policies) Remove(ctx context.Context, name string) error {
	return ps.store.Declare(func(tx *store.Tx) error {
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

// Report returns what a box's firewall and resolver did.
func (ps *Policies) Report(name string) (api.PolicyReport, error) {
	b, err := ps.store.GetBox(name)
	if errors.Is(err, store.ErrNotFound) {
		return api.PolicyReport{}, api.NotFound("box", name)
	} else if err != nil {
		return api.PolicyReport{}, err
	}
	out := api.PolicyReport{Box: name, Policy: b.Policy, Drops: map[string]uint64{}, DNS: []api.DNSDecision{}}
	if ps.firewall == nil {
		return out, nil
	}
	r, err := ps.firewall.Report(name)
	if err != nil {
		return out, err
	}
	out.Drops = r.Drops
	for _, d := range r.DNS {
		out.DNS = append(out.DNS, api.DNSDecision{Time: d.Time, Name: d.Name, Allowed: d.Allowed, Reason: d.Reason})
	}
	return out, nil
}

// Update replaces the allowlists of a named policy made outside any
// Boxfile; the boxes that use it get the new rules before this returns.
// A Boxfile's policy is changed in its Boxfile, so that the next apply
// does not undo the change.
func (ps *Policies) Update(ctx context.Context, p api.PolicySpec) (api.Policy, error) {
	return ps.put(ctx, p, false)
}

// put makes policy p (create: its name is not taken, by anyone) or
// changes the caller's policy of its name.
func (ps *Policies) put(ctx context.Context, p api.PolicySpec, create bool) (api.Policy, error) {
	if err := api.ValidateProject(api.ProjectSpec{Policies: []api.PolicySpec{p}}); err != nil {
		return api.Policy{}, err
	}
	err := ps.store.Declare(func(tx *store.Tx) error {
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
	if err := ps.rules.SyncPolicies(ctx); err != nil {
		return api.Policy{}, err
	}
	pols, err := ps.List(ctx)
	for _, pol := range pols {
		if pol.Name == p.Name {
			return pol, err
		}
	}
	return api.Policy{PolicySpec: p}, err
}
