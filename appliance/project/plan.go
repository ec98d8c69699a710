// Package project is Boxfile projects: it plans a project against
// paddockd's declared state (which boxes, drives and policies to create,
// update in place, replace or delete, with the attributes that change and
// the reasons: what forces a replacement, what drifted outside Paddock),
// and, as the projects capability (Projects, over the core's Core),
// applies a plan by writing the declared state and reconciling, lists
// projects with their drift, and serves their API routes. Plan is pure.
//
// What updates in place: a box's ttl, policy, env (for the next exec) and
// agent; a drive's size and labels; a policy's lists. What forces
// replacement: a box's image, type, mounts (drives' and buckets') and desktop, and a failed setup.
// Objects belong to one project: a plan never touches another project's
// objects, nor boxes made with 'paddock new', and a name already taken by
// one of those is an error.
package project

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/broker"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// State is what the plan is computed against.
type State struct {
	Serial   int64
	Boxes    []store.Box
	Drives   []store.Drive
	Policies []store.Policy
	// Secrets are the applying user's own secrets.
	Secrets []store.SecretInfo
	// Observed is the engine's view of boxes, by box name.
	Observed map[string]driver.BoxState
}

// Options change what a plan may do.
type Options struct {
	// Destroy removes every box and policy of the project.
	Destroy bool
	// Drives allows deleting drives (and their data) that are no longer
	// declared, or all the project's drives with Destroy.
	Drives bool
	// DefaultImage fills in a box's image when the spec has none.
	DefaultImage string
	// DefaultDesktop is a box's desktop when the spec does not say.
	DefaultDesktop bool
}

func owner(project string) string {
	if project == "" {
		return "no project (made with 'paddock new')"
	}
	return "project " + strconv.Quote(project)
}

// Foreign stands as the project of an object that is not the caller's:
// the state holds it (names are one namespace), but a plan says nothing
// of where it belongs.
const Foreign = "\x00another user's"

func taken(kind, name, project string) error {
	msg := fmt.Sprintf("%s %q already exists and belongs to %s", kind, name, owner(project))
	if project == Foreign {
		msg = fmt.Sprintf("the %s name %q is taken; choose another", kind, name)
	}
	return &api.Error{Code: api.CodeConflict, Field: kind + "." + name, Message: msg}
}

// Normalize fills in defaults so that a spec compares equal to what the
// state holds after applying it.
func Normalize(spec api.ProjectSpec, defaultImage string, defaultDesktop bool) api.ProjectSpec {
	out := spec
	out.Boxes = make([]api.BoxSpec, len(spec.Boxes))
	for i, b := range spec.Boxes {
		if b.Type == "" {
			b.Type = "small"
		}
		if b.Image == "" {
			b.Image = defaultImage
		}
		if b.Policy == "" {
			b.Policy = api.PolicyAllowAll
		}
		if b.Desktop == nil {
			d := defaultDesktop
			b.Desktop = &d
		}
		out.Boxes[i] = b
	}
	out.Secrets = make([]api.SecretSpec, len(spec.Secrets))
	for i, sec := range spec.Secrets {
		out.Secrets[i] = normalSecret(sec)
	}
	return out
}

// normalSecret writes a secret's header and limit as the store keeps
// them (a header spec left unread when it is not valid).
func normalSecret(s api.SecretSpec) api.SecretSpec {
	if s.Broker.Header == "" {
		s.Broker.Header = "bearer"
	}
	if h, err := broker.ParseHeader(s.Broker.Header); err == nil {
		s.Broker.Header = h.String()
	}
	if l, err := broker.ParseLimit(s.Broker.Limit); err == nil {
		s.Broker.Limit = l.String()
	}
	return s
}

// Plan computes the changes that make the project's declared state match
// spec. The returned error is an *api.Error for conflicts with objects of
// other projects.
func Plan(spec api.ProjectSpec, st State, opt Options) (api.Plan, error) {
	spec = Normalize(spec, opt.DefaultImage, opt.DefaultDesktop)
	plan := api.Plan{Project: spec.Project, Serial: st.Serial, Changes: []api.Change{}}
	if opt.Destroy {
		spec.Boxes, spec.Policies, spec.Secrets = nil, nil, nil
		if opt.Drives {
			spec.Drives = nil
		}
	}

	boxes := map[string]store.Box{}
	for _, b := range st.Boxes {
		boxes[b.Name] = b
	}
	drives := map[string]store.Drive{}
	for _, d := range st.Drives {
		drives[d.Name] = d
	}
	policies := map[string]store.Policy{}
	for _, p := range st.Policies {
		policies[p.Name] = p
	}

	// Secrets: how the applying user's own are brokered. One not set
	// (its value is never in a Boxfile) stops the plan; one no longer
	// declared is left as it is.
	secrets := map[string]store.SecretInfo{}
	for _, sec := range st.Secrets {
		secrets[sec.Name] = sec
	}
	for _, sec := range spec.Secrets {
		old, ok := secrets[sec.Name]
		if !ok {
			return plan, &api.Error{Code: api.CodeInvalid, Field: "secret." + sec.Name,
				Message: fmt.Sprintf("secret.%s: you have no secret %s: set its value first with 'paddock secret set %s' (on stdin); a Boxfile says how it is brokered, never its value", sec.Name, sec.Name, sec.Name)}
		}
		var attrs []api.AttrChange
		attrs = attr(attrs, "broker", listText(old.Broker.Hosts), listText(sec.Broker.Hosts), false)
		if len(old.Broker.Hosts) > 0 || len(sec.Broker.Hosts) > 0 {
			attrs = attr(attrs, "header", quoteNonEmpty(old.Broker.Header), quoteNonEmpty(sec.Broker.Header), false)
			attrs = attr(attrs, "limit", quoteNonEmpty(old.Broker.Limit), quoteNonEmpty(sec.Broker.Limit), false)
		}
		if len(attrs) > 0 {
			plan.Changes = append(plan.Changes, api.Change{Address: "secret." + sec.Name, Action: api.ActionUpdate, Attrs: attrs})
		}
	}

	// Policies.
	want := map[string]bool{}
	for _, p := range spec.Policies {
		want[p.Name] = true
		old, ok := policies[p.Name]
		switch {
		case !ok:
			plan.Changes = append(plan.Changes, api.Change{Address: "policy." + p.Name, Action: api.ActionCreate, Attrs: policyAttrs(store.Policy{}, p)})
		case old.Project != spec.Project:
			return plan, taken("policy", p.Name, old.Project)
		default:
			if attrs := policyAttrs(old, p); len(attrs) > 0 {
				plan.Changes = append(plan.Changes, api.Change{Address: "policy." + p.Name, Action: api.ActionUpdate, Attrs: attrs})
			}
		}
	}
	var dels []api.Change
	for _, p := range st.Policies {
		if p.Project == spec.Project && spec.Project != "" && !want[p.Name] {
			dels = append(dels, api.Change{Address: "policy." + p.Name, Action: api.ActionDelete})
		}
	}

	// Drives.
	want = map[string]bool{}
	for _, d := range spec.Drives {
		want[d.Name] = true
		old, ok := drives[d.Name]
		switch {
		case !ok:
			plan.Changes = append(plan.Changes, api.Change{Address: "drive." + d.Name, Action: api.ActionCreate, Attrs: driveAttrs(store.Drive{}, d)})
		case old.Project != spec.Project:
			return plan, taken("drive", d.Name, old.Project)
		case old.State == "deleting":
			return plan, &api.Error{Code: api.CodeConflict, Field: "drive." + d.Name, Message: fmt.Sprintf("drive %q is being deleted; plan again in a moment", d.Name)}
		default:
			if attrs := driveAttrs(old, d); len(attrs) > 0 {
				plan.Changes = append(plan.Changes, api.Change{Address: "drive." + d.Name, Action: api.ActionUpdate, Attrs: attrs})
			}
			if opt.Destroy {
				// A destroy keeps the project's drives unless told.
				plan.Notes = append(plan.Notes, fmt.Sprintf("drive.%s is kept, with its data (destroy -drives deletes it too)", d.Name))
			}
		}
	}
	var driveDels []string
	for _, d := range st.Drives {
		if d.Project != spec.Project || spec.Project == "" || want[d.Name] || d.State == "deleting" {
			continue
		}
		if opt.Drives {
			driveDels = append(driveDels, d.Name)
			dels = append(dels, api.Change{Address: "drive." + d.Name, Action: api.ActionDelete, Reasons: []string{"its data is deleted"}})
		} else {
			plan.Notes = append(plan.Notes, fmt.Sprintf("drive.%s is no longer declared; its data is kept (plan with -drives to delete it)", d.Name))
		}
	}

	// Boxes.
	want = map[string]bool{}
	for _, b := range spec.Boxes {
		want[b.Name] = true
		addr := "box." + b.Name
		old, ok := boxes[b.Name]
		if !ok {
			plan.Changes = append(plan.Changes, api.Change{Address: addr, Action: api.ActionCreate, Attrs: append(boxAttrs(nil, b), onceAttrs(b)...)})
			continue
		}
		if old.Project != spec.Project {
			return plan, taken("box", b.Name, old.Project)
		}
		attrs := boxAttrs(&old, b)
		c := api.Change{Address: addr, Attrs: attrs}
		for _, a := range attrs {
			if a.Forces {
				c.Action = api.ActionReplace
				c.Reasons = append(c.Reasons, a.Name+" forces replacement")
			}
		}
		if c.Action == "" && old.Setup == "failed" {
			c.Action = api.ActionReplace
			c.Reasons = append(c.Reasons, "setup failed ("+firstLine(old.SetupError)+"): the box is made again")
		}
		if c.Action == api.ActionReplace {
			c.Attrs = append(c.Attrs, onceAttrs(b)...)
		}
		if c.Action == "" {
			obs, seen := st.Observed[b.Name]
			switch {
			case old.Desired == "running" && !seen:
				c.Action = api.ActionCreate
				c.Reasons = append(c.Reasons, "the container is missing (removed outside Paddock)")
			case old.Desired == "running" && !obs.Running:
				c.Action = api.ActionUpdate
				c.Reasons = append(c.Reasons, "the container is "+obs.Status+" (stopped outside Paddock); apply starts it")
			}
		}
		if c.Action == "" && len(attrs) > 0 {
			c.Action = api.ActionUpdate
		}
		// Setup waiting is said also beside a stopped container: one
		// paddockd has just made again (removed outside Paddock) is
		// "created" until it starts.
		if (c.Action == "" || c.Action == api.ActionUpdate) && old.Setup == "pending" {
			c.Action = api.ActionUpdate
			c.Reasons = append(c.Reasons, "push and setup have not finished")
		}
		if c.Action != "" {
			plan.Changes = append(plan.Changes, c)
		}
	}
	for _, b := range st.Boxes {
		if b.Project == spec.Project && spec.Project != "" && !want[b.Name] {
			dels = append(dels, api.Change{Address: "box." + b.Name, Action: api.ActionDelete, Attrs: boxAttrs(&b, api.BoxSpec{})})
		}
	}
	// A drive being deleted must not be mounted by a box that stays.
	for _, name := range driveDels {
		for _, b := range st.Boxes {
			if want[b.Name] || (b.Project == spec.Project && spec.Project != "") {
				continue
			}
			for _, m := range b.Mounts {
				if m.Drive == name {
					return plan, &api.Error{Code: api.CodeConflict, Field: "drive." + name,
						Message: fmt.Sprintf("drive %q is mounted by box %q of %s", name, b.Name, owner(b.Project))}
				}
			}
		}
	}

	sortChanges(plan.Changes)
	sortChanges(dels)
	// Deletions go last, boxes before the drives and policies they use.
	sort.SliceStable(dels, func(i, j int) bool { return kindOrder(dels[i].Address) > kindOrder(dels[j].Address) })
	plan.Changes = append(plan.Changes, dels...)
	return plan, nil
}

func kindOrder(addr string) int {
	switch {
	case strings.HasPrefix(addr, "policy."):
		return 0
	case strings.HasPrefix(addr, "drive."):
		return 1
	}
	return 2
}

func sortChanges(cs []api.Change) {
	sort.SliceStable(cs, func(i, j int) bool {
		if ki, kj := kindOrder(cs[i].Address), kindOrder(cs[j].Address); ki != kj {
			return ki < kj
		}
		return cs[i].Address < cs[j].Address
	})
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// attr adds an attribute change when before and after differ. On a create
// every set attribute differs from "", and on a delete from its value.
func attr(out []api.AttrChange, name, before, after string, forces bool) []api.AttrChange {
	if before == after {
		return out
	}
	return append(out, api.AttrChange{Name: name, Before: before, After: after, Forces: forces})
}

// Quote renders a string as HCL would.
func Quote(s string) string { return strconv.Quote(s) }

// TTLText renders a TTL as a short duration ("1h", "90m", "5s").
func TTLText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return Quote(s)
}

func mapText(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+" = "+Quote(m[k]))
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

func listText(l []string) string {
	if len(l) == 0 {
		return ""
	}
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func policyText(p string) string {
	switch p {
	case "", api.PolicyAllowAll, api.PolicyDenyAll:
		return Quote(p)
	}
	return "policy." + p
}

func boolText(b bool) string {
	if !b {
		return ""
	}
	return "true"
}

// idleText is how a box's own idle stop reads in a plan: "" for its
// type's, "off", or a duration.
func idleText(d time.Duration) string {
	switch {
	case d < 0:
		return Quote("off")
	case d > 0:
		return Quote(d.String())
	}
	return ""
}

func mountText(m api.Mount) string {
	s := Quote(m.Path)
	if m.ReadOnly {
		s += " (readonly)"
	}
	return s
}

// boxAttrs compares a declared box (nil on create) with a spec (zero on
// delete).
func boxAttrs(old *store.Box, b api.BoxSpec) []api.AttrChange {
	var before store.Box
	create := old == nil
	if old != nil {
		before = *old
	}
	ttl, _ := api.ParseTTL(b.TTL)
	var out []api.AttrChange
	out = attr(out, "type", quoteNonEmpty(before.Type), quoteNonEmpty(b.Type), true)
	out = attr(out, "image", quoteNonEmpty(before.Image), quoteNonEmpty(b.Image), true)
	out = attr(out, "ttl", TTLText(before.TTL), TTLText(ttl), false)
	idle, _ := api.ParseIdleStop(b.IdleStop)
	out = attr(out, "idle_stop", idleText(before.IdleStop), idleText(idle), false)
	bp := before.Policy
	if create {
		bp = ""
	}
	out = attr(out, "policy", nonEmpty(bp, policyText), nonEmpty(b.Policy, policyText), false)
	out = attr(out, "agent", quoteNonEmpty(before.Agent), quoteNonEmpty(b.Agent), false)
	out = attr(out, "env", mapText(before.Env), mapText(b.Env), false)
	out = attr(out, "desktop", boolText(before.Desktop), boolText(b.Desktop != nil && *b.Desktop), true)
	// Where a box is made: a new constraint is kept, and moves nothing.
	out = attr(out, "placement", mapText(before.NodeLabels), mapText(b.NodeLabels), false)
	out = attr(out, "labels", mapText(before.Labels), mapText(b.Labels), false)

	mb := map[string]api.Mount{}
	for _, m := range before.Mounts {
		mb[m.Drive] = api.Mount{Drive: m.Drive, Path: m.Path, ReadOnly: m.ReadOnly}
	}
	ma := map[string]api.Mount{}
	for _, m := range b.Mounts {
		ma[m.Drive] = m
	}
	names := map[string]bool{}
	for k := range mb {
		names[k] = true
	}
	for k := range ma {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		bt, at := "", ""
		if m, ok := mb[k]; ok {
			bt = mountText(m)
		}
		if m, ok := ma[k]; ok {
			at = mountText(m)
		}
		out = attr(out, "mount."+k, bt, at, true)
	}
	// Buckets, by where the box sees them: a change makes the box again
	// (its container is made with the mounts).
	bb, ba := map[string]string{}, map[string]string{}
	for _, m := range before.Buckets {
		bb[m.To] = bucketText(api.BucketMount(m))
	}
	for _, m := range b.Buckets {
		ba[m.To] = bucketText(m)
	}
	for _, k := range sortedUnion(bb, ba) {
		out = attr(out, "mount."+k, bb[k], ba[k], true)
	}
	return out
}

// bucketText is a bucket mount as a plan shows it (its secret by name).
func bucketText(m api.BucketMount) string {
	s := fmt.Sprintf("%q at %s, secret %s", m.URL, m.To, m.Secret)
	if m.ReadOnly {
		s += ", read-only"
	}
	if m.Endpoint != "" {
		s += ", endpoint " + m.Endpoint
	}
	if m.Region != "" {
		s += ", region " + m.Region
	}
	return s
}

func sortedUnion(a, b map[string]string) []string {
	var out []string
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// onceAttrs are what a box that is made (or made again) has done once
// after it: its pushes ("push" and the local path, then where to) and
// its setup steps, in their order, each in full. A Boxfile may come from
// someone else's repository: what it runs is in the plan.
func onceAttrs(b api.BoxSpec) []api.AttrChange {
	var out []api.AttrChange
	for _, p := range b.Push {
		out = append(out, api.AttrChange{Name: "push " + Quote(p.Local), After: Quote(p.To)})
	}
	for i, cmd := range b.Setup {
		out = append(out, api.AttrChange{Name: fmt.Sprintf("setup[%d]", i), After: Quote(cmd)})
	}
	return out
}

func quoteNonEmpty(s string) string { return nonEmpty(s, Quote) }

func nonEmpty(s string, f func(string) string) string {
	if s == "" {
		return ""
	}
	return f(s)
}

func driveAttrs(old store.Drive, d api.DriveSpec) []api.AttrChange {
	var out []api.AttrChange
	out = attr(out, "size", quoteNonEmpty(old.Size), quoteNonEmpty(d.Size), false)
	out = attr(out, "labels", mapText(old.Labels), mapText(d.Labels), false)
	return out
}

func policyAttrs(old store.Policy, p api.PolicySpec) []api.AttrChange {
	var out []api.AttrChange
	out = attr(out, "allow_domains", listText(old.AllowDomains), listText(p.AllowDomains), false)
	out = attr(out, "allow_cidrs", listText(old.AllowCIDRs), listText(p.AllowCIDRs), false)
	return out
}
