package project

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/broker"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// stateReader is what the store and a transaction both read.
type stateReader interface {
	Serial() (int64, error)
	ListBoxes() ([]store.Box, error)
	ListDrives() ([]store.Drive, error)
	ListPolicies() ([]store.Policy, error)
	OwnSecrets(owner int64) ([]store.SecretInfo, error)
}

// projectState reads what a project plan is computed against, from the
// store or from within a transaction.
func (pr *Projects) projectState(ctx context.Context, from stateReader) (State, error) {
	var st State
	obs, err := pr.drv.Boxes(ctx)
	if err != nil {
		return st, err
	}
	if st.Serial, err = from.Serial(); err != nil {
		return st, err
	}
	if st.Boxes, err = from.ListBoxes(); err != nil {
		return st, err
	}
	byKey := map[string]driver.BoxState{}
	for _, b := range obs {
		byKey[b.Name] = b
	}
	st.Observed = map[string]driver.BoxState{}
	for _, b := range st.Boxes {
		if o, ok := byKey[b.Key()]; ok {
			st.Observed[b.Name] = o
		}
	}
	if st.Drives, err = from.ListDrives(); err != nil {
		return st, err
	}
	if st.Policies, err = from.ListPolicies(); err != nil {
		return st, err
	}
	if st.Secrets, err = from.OwnSecrets(caller.OwnerID(ctx)); err != nil {
		return st, err
	}
	return st, nil
}

// maskForeign keeps another user's objects in st by their names (one
// namespace) but not where they belong: a plan that meets one says only
// that the name is taken. After checkProjectOwner, which needs them.
func maskForeign(ctx context.Context, st *State) {
	for i := range st.Boxes {
		if !caller.Visible(ctx, st.Boxes[i].Owner) {
			st.Boxes[i].Project = Foreign
		}
	}
	for i := range st.Drives {
		if !caller.Visible(ctx, st.Drives[i].Owner) {
			st.Drives[i].Project = Foreign
		}
	}
	for i := range st.Policies {
		if !caller.Visible(ctx, st.Policies[i].Owner) {
			st.Policies[i].Project = Foreign
		}
	}
}

// checkProjectOwner refuses a project whose objects belong to a user that
// the user of ctx may not touch.
func checkProjectOwner(ctx context.Context, proj string, st State) error {
	owners := []int64{}
	for _, b := range st.Boxes {
		if b.Project == proj {
			owners = append(owners, b.Owner)
		}
	}
	for _, d := range st.Drives {
		if d.Project == proj {
			owners = append(owners, d.Owner)
		}
	}
	for _, p := range st.Policies {
		if p.Project == proj {
			owners = append(owners, p.Owner)
		}
	}
	for _, o := range owners {
		if !caller.Visible(ctx, o) {
			return api.Conflict("project %q belongs to another user", proj)
		}
	}
	return nil
}

// checkImages makes sure the image of every box a plan makes is on the
// engine: one of the server's, or a user's image the user may use (its
// engine name, in refs from projectImages). An image the project builds
// itself need not be there yet when only planning (applying: the CLI has
// built it).
func (pr *Projects) checkImages(ctx context.Context, spec api.ProjectSpec, plan api.Plan, refs map[string]bool, applying bool) error {
	spec = Normalize(spec, pr.cfg.Image, pr.cfg.DesktopDefault)
	made := map[string]bool{}
	for _, c := range plan.Changes {
		if c.Action == api.ActionCreate || c.Action == api.ActionReplace {
			made[c.Address] = true
		}
	}
	for _, b := range spec.Boxes {
		if !made["box."+b.Name] {
			continue
		}
		if err := pr.projectImage(ctx, b.Image, refs, applying); errors.Is(err, api.ErrNoImage) {
			return &api.Error{Code: api.CodeInvalid, Field: "box." + b.Name + ".image",
				Message: fmt.Sprintf("box.%s: %v", b.Name, err)}
		} else if err != nil {
			return err
		}
	}
	return nil
}

// validProject checks a spec, its secrets' brokering with the rest.
func validProject(spec api.ProjectSpec) error {
	if err := api.ValidateProject(spec); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, sec := range spec.Secrets {
		addr := "secret." + sec.Name
		if !api.SecretName(sec.Name) {
			return api.Invalid(addr, "%s: bad secret name: use an environment variable name (letters, digits, _)", addr)
		}
		if seen[sec.Name] {
			return api.Invalid(addr, "%s is declared twice", addr)
		}
		seen[sec.Name] = true
		brk := sec.Broker
		if len(brk.Hosts) == 0 {
			return api.Invalid(addr, "%s: give the host(s) its value may be sent to (broker)", addr)
		}
		if _, err := broker.Check(&brk); err != nil {
			return api.Invalid(addr, "%s: %v", addr, err)
		}
	}
	return nil
}

// MakePlan computes what applying a project's spec would change.
func (pr *Projects) MakePlan(ctx context.Context, req api.PlanRequest) (api.Plan, error) {
	if err := validProject(req.Spec); err != nil {
		return api.Plan{}, err
	}
	if req.Spec.Project == "" {
		return api.Plan{}, api.Invalid("project", "a Boxfile project needs a name")
	}
	st, err := pr.projectState(ctx, pr.store)
	if err != nil {
		return api.Plan{}, err
	}
	if err := checkProjectOwner(ctx, req.Spec.Project, st); err != nil {
		return api.Plan{}, err
	}
	maskForeign(ctx, &st)
	refs := pr.projectImages(ctx, &req.Spec)
	plan, err := Plan(req.Spec, st, pr.planOptions(req))
	if err != nil {
		return plan, err
	}
	if !req.Destroy {
		// Images first: the CLI builds them before it applies the rest.
		if ic := pr.planImages(ctx, req.Spec); len(ic) > 0 {
			plan.Changes = append(ic, plan.Changes...)
		}
	}
	return plan, pr.checkImages(ctx, req.Spec, plan, refs, false)
}

func (pr *Projects) planOptions(req api.PlanRequest) Options {
	return Options{Destroy: req.Destroy, Drives: req.Drives, DefaultImage: pr.cfg.Image, DefaultDesktop: pr.cfg.DesktopDefault}
}

// Apply applies a plan made at req.Serial: it writes the declared
// state in one transaction (refused if the serial moved), reconciles, and
// reports object by object.
func (pr *Projects) Apply(ctx context.Context, req api.ApplyRequest) (api.ApplyResult, error) {
	var res api.ApplyResult
	if err := validProject(req.Spec); err != nil {
		return res, err
	}
	if req.Spec.Project == "" {
		return res, api.Invalid("project", "a Boxfile project needs a name")
	}
	spec := Normalize(req.Spec, pr.cfg.Image, pr.cfg.DesktopDefault)
	refs := pr.projectImages(ctx, &spec)
	var plan api.Plan
	err := pr.store.Declare(func(tx *store.Tx) error {
		st, err := pr.projectState(ctx, tx)
		if err != nil {
			return err
		}
		if err := checkProjectOwner(ctx, spec.Project, st); err != nil {
			return err
		}
		maskForeign(ctx, &st)
		if st.Serial != req.Serial {
			return api.Conflict("the state changed since this plan was made (serial %d, now %d): plan again", req.Serial, st.Serial)
		}
		if plan, err = Plan(spec, st, pr.planOptions(req.PlanRequest)); err != nil {
			return err
		}
		if err := pr.checkImages(ctx, spec, plan, refs, true); err != nil {
			return err
		}
		if err := pr.writePlan(tx, spec, plan, caller.OwnerID(ctx)); err != nil {
			return err
		}
		return pr.recordApply(ctx, tx, req.PlanRequest, st.Serial+1)
	})
	if err != nil {
		return res, err
	}
	res.Plan = plan
	rr, err := pr.rec.Run(ctx)
	pr.core.NotePoolChange() // boxes may have been claimed from it
	if err != nil {
		return res, err
	}
	res.Failed = map[string]string{}
	for _, c := range plan.Changes {
		if e := changeError(c.Address, rr.Errors); e != nil {
			res.Failed[c.Address] = e.Error()
		} else {
			res.Done = append(res.Done, c.Address)
		}
	}
	if res.Serial, err = pr.store.Serial(); err != nil {
		return res, err
	}
	boxes, err := pr.store.ListBoxes()
	if err != nil {
		return res, err
	}
	for _, b := range boxes {
		if b.Project == spec.Project && b.Setup == "pending" && res.Failed["box."+b.Name] == "" {
			res.Setup = append(res.Setup, b.Name)
		}
	}
	return res, nil
}

// changeError finds the reconcile errors about a plan address.
func changeError(addr string, errs map[string]error) error {
	kind, name, _ := strings.Cut(addr, ".")
	switch kind {
	case "box":
		if e := errs["box."+name]; e != nil {
			return e
		}
		return errs["volume.boxdata."+name]
	case "drive":
		if e := errs["volume.drive."+name]; e != nil {
			return e
		}
		return errs["drive."+name]
	}
	return nil
}

func specBox(b api.BoxSpec, into *store.Box) {
	ttl, _ := api.ParseTTL(b.TTL)
	into.Type, into.Image, into.Policy, into.Agent, into.Env, into.Desktop = b.Type, b.Image, b.Policy, b.Agent, b.Env, b.Desktop != nil && *b.Desktop
	if into.TTL != ttl {
		into.TTL = ttl
		into.ExpiresAt = nil
	}
	into.NodeLabels, into.Labels = b.NodeLabels, b.Labels
	into.IdleStop, _ = api.ParseIdleStop(b.IdleStop)
	into.Mounts = nil
	for _, m := range b.Mounts {
		into.Mounts = append(into.Mounts, store.Mount{Drive: m.Drive, Path: m.Path, ReadOnly: m.ReadOnly})
	}
	into.Buckets = nil
	for _, m := range b.Buckets {
		into.Buckets = append(into.Buckets, store.BucketMount(m))
	}
}

func hasSetup(b api.BoxSpec) bool { return len(b.Push) > 0 || len(b.Setup) > 0 }

// writePlan turns a plan into declared state.
func (pr *Projects) writePlan(tx *store.Tx, spec api.ProjectSpec, plan api.Plan, owner int64) error {
	boxes := map[string]api.BoxSpec{}
	for _, b := range spec.Boxes {
		boxes[b.Name] = b
	}
	drives := map[string]api.DriveSpec{}
	for _, d := range spec.Drives {
		drives[d.Name] = d
	}
	policies := map[string]api.PolicySpec{}
	for _, p := range spec.Policies {
		policies[p.Name] = p
	}
	secrets := map[string]api.SecretSpec{}
	for _, sec := range spec.Secrets {
		secrets[sec.Name] = sec
	}
	now := pr.core.Time()
	for _, c := range plan.Changes {
		kind, name, _ := strings.Cut(c.Address, ".")
		var err error
		switch kind {
		case "image":
			continue // built by the CLI, not declared state
		case "policy":
			if c.Action == api.ActionDelete {
				err = tx.DeletePolicy(name)
			} else {
				p := policies[name]
				err = tx.PutPolicy(store.Policy{Name: name, Project: spec.Project, AllowDomains: p.AllowDomains, AllowCIDRs: p.AllowCIDRs, Owner: owner})
			}
		case "drive":
			d := drives[name]
			switch c.Action {
			case api.ActionCreate:
				var where string
				if where, err = pr.core.DriveNode(tx); err == nil {
					err = tx.CreateDrive(store.Drive{Name: name, State: "ready", Created: now, Project: spec.Project, Size: d.Size, Labels: d.Labels, Owner: owner, Node: where})
				}
			case api.ActionUpdate:
				err = tx.UpdateDrive(store.Drive{Name: name, Size: d.Size, Labels: d.Labels})
			case api.ActionDelete:
				err = tx.SetDriveState(name, "deleting")
			}
		case "box":
			err = pr.writeBox(tx, spec.Project, name, boxes[name], c, now, owner)
		case "secret":
			var b api.SecretBroker
			brk := secrets[name].Broker
			if b, err = broker.Check(&brk); err == nil {
				err = tx.SetSecretBroker(owner, name, store.Broker(b))
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", c.Address, err)
		}
	}
	return nil
}

func (pr *Projects) writeBox(tx *store.Tx, proj, name string, b api.BoxSpec, c api.Change, now time.Time, owner int64) error {
	if c.Action == api.ActionDelete {
		if err := tx.DeleteBox(name); err != nil {
			return err
		}
		return tx.MarkSnapshotsDeleting(name)
	}
	old, err := tx.GetBox(name)
	if errors.Is(err, store.ErrNotFound) {
		nb := store.Box{Name: name, Project: proj, Desired: "running", Created: now, Owner: owner}
		specBox(b, &nb)
		if hasSetup(b) {
			nb.Setup = "pending"
		}
		if nb.TTL > 0 {
			exp := now.Add(nb.TTL)
			nb.ExpiresAt = &exp
		}
		// A box that fits the warm pool takes a pool box's container; the
		// apply's reconcile gives it its policy and hostname, and the pool
		// is refilled after the apply.
		claimed, err := pr.core.TakePool(tx, &nb, "")
		if err != nil {
			return err
		}
		if !claimed {
			want := ""
			if strings.HasPrefix(nb.Image, pr.cfg.Instance+"/") {
				want = pr.core.LocalNodeName() // a user's image is on this server only
			}
			if err := pr.core.PlaceOn(tx, &nb, want); err != nil {
				return err
			}
		}
		return pr.core.DeclareBox(tx, nb)
	}
	if err != nil {
		return err
	}
	specBox(b, &old)
	switch c.Action {
	case api.ActionReplace:
		old.Generation++
		old.From = ""
		old.Desired = "running"
		old.Setup, old.SetupError = "", ""
		if hasSetup(b) {
			old.Setup = "pending"
		}
	case api.ActionCreate:
		// The container went missing: the reconciler makes it again, as a
		// new box, so its one-time steps run again too.
		if hasSetup(b) {
			old.Setup = "pending"
		}
	}
	if old.TTL > 0 && old.ExpiresAt == nil && old.Desired == "running" {
		exp := now.Add(old.TTL)
		old.ExpiresAt = &exp
	}
	return tx.UpdateBox(old)
}

// SetupDone records the outcome of a box's one-time push and setup steps. A
// failed setup marks the box failed; the next plan replaces it.
func (pr *Projects) SetupDone(name string, p api.SetupPost) error {
	return pr.core.UpdateBox(name, func(_ *store.Tx, b *store.Box) error {
		if b.Setup != "pending" {
			return api.Conflict("box %q has no setup waiting (setup is %q)", name, b.Setup)
		}
		if p.OK {
			b.Setup, b.SetupError = "done", ""
		} else {
			b.Setup, b.SetupError = "failed", p.Error
			if b.SetupError == "" {
				b.SetupError = "setup failed"
			}
		}
		return nil
	})
}
