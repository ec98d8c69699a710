package project

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// recordApply keeps what was applied to a project, when and by whom, and
// the serial the apply leaves; a destroy forgets the project.
func (pr *Projects) recordApply(ctx context.Context, tx *store.Tx, req api.PlanRequest, serial int64) error {
	if req.Destroy {
		return tx.DeleteProject(req.Spec.Project)
	}
	u, _ := caller.From(ctx)
	by := u.Name
	if by == "" {
		by = "paddockd"
	}
	raw, err := json.Marshal(api.PlanRequest{Spec: req.Spec, Drives: req.Drives})
	if err != nil {
		return err
	}
	return tx.PutProject(store.Project{Name: req.Spec.Project, Owner: caller.OwnerID(ctx), Request: string(raw), Applied: pr.core.Time(), AppliedBy: by, Serial: serial})
}

// List lists the Boxfile projects the user of ctx sees: each with its
// objects, its last apply, and its drift: the plan its last applied
// Boxfile would make now against the declared and observed state (empty
// when the machine matches it).
func (pr *Projects) List(ctx context.Context) ([]api.Project, error) {
	recs, err := pr.store.ListProjects()
	if err != nil {
		return nil, err
	}
	st, err := pr.projectState(ctx, pr.store)
	if err != nil {
		return nil, err
	}
	byName := map[string]*api.Project{}
	get := func(name string) *api.Project {
		if p, ok := byName[name]; ok {
			return p
		}
		p := &api.Project{Name: name, Boxes: []string{}, Drives: []string{}, Policies: []string{}}
		byName[name] = p
		return p
	}
	for _, b := range st.Boxes {
		if b.Project != "" && caller.Visible(ctx, b.Owner) {
			get(b.Project).Boxes = append(get(b.Project).Boxes, b.Name)
		}
	}
	for _, d := range st.Drives {
		if d.Project != "" && caller.Visible(ctx, d.Owner) {
			get(d.Project).Drives = append(get(d.Project).Drives, d.Name)
		}
	}
	for _, p := range st.Policies {
		if p.Project != "" && caller.Visible(ctx, p.Owner) {
			get(p.Project).Policies = append(get(p.Project).Policies, p.Name)
		}
	}
	names := pr.core.OwnerNames()
	for _, r := range recs {
		if !caller.Visible(ctx, r.Owner) {
			continue
		}
		p := get(r.Name)
		at := r.Applied
		p.AppliedAt, p.AppliedBy, p.Serial, p.Owner = &at, r.AppliedBy, r.Serial, names[r.Owner]
		var req api.PlanRequest
		if err := json.Unmarshal([]byte(r.Request), &req); err != nil {
			p.DriftError = "the recorded Boxfile cannot be read: " + err.Error()
			continue
		}
		plan, err := Plan(req.Spec, st, pr.planOptions(req))
		if err != nil {
			p.DriftError = err.Error()
			continue
		}
		p.Drift = plan.Changes
	}
	out := make([]api.Project, 0, len(byName))
	for _, p := range byName {
		if p.AppliedAt == nil && len(p.Boxes)+len(p.Drives)+len(p.Policies) == 0 {
			continue
		}
		sort.Strings(p.Boxes)
		sort.Strings(p.Drives)
		sort.Strings(p.Policies)
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
