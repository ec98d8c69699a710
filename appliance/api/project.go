package api

import "time"

// ProjectSpec is the desired state a Boxfile declares: everything one
// project has. Package boxfiles produces it; paddockd plans and applies it.
type ProjectSpec struct {
	Project  string       `json:"project"`
	Boxes    []BoxSpec    `json:"boxes,omitempty"`
	Drives   []DriveSpec  `json:"drives,omitempty"`
	Policies []PolicySpec `json:"policies,omitempty"`
	// Secrets say how secrets of the user who applies are brokered; their
	// values are set apart ('paddock secret set'), never in a Boxfile.
	Secrets []SecretSpec `json:"secrets,omitempty"`
	// Images are the user's own images the project builds (the CLI builds
	// them, from its local context, before applying the rest).
	Images []ImageSpec `json:"images,omitempty"`
}

// ImageSpec is an image block of a Boxfile: the applying user's image
// NAME:TAG, built from a context on the applier's computer.
type ImageSpec struct {
	Name string `json:"name"`
	Tag  string `json:"tag"`
	// Context is the context folder, relative to the Boxfile's; Dockerfile
	// its path in it.
	Context    string `json:"context"`
	Dockerfile string `json:"dockerfile"`
	// ContextDigest is the context's digest as the CLI read it (a plan
	// says the image is unchanged when its last build's is the same).
	ContextDigest string `json:"context_digest,omitempty"`
	// Policy is the builder box's egress policy ("" allow-all).
	Policy string `json:"policy,omitempty"`
}

// SecretSpec is a secret block of a Boxfile: how the applying user's
// secret of that name is brokered.
type SecretSpec struct {
	Name   string       `json:"name"`
	Broker SecretBroker `json:"broker"`
}

// BoxSpec is a declared box.
type BoxSpec struct {
	Name  string `json:"name"`
	Type  string `json:"type,omitempty"`
	Image string `json:"image,omitempty"`
	TTL   string `json:"ttl,omitempty"`
	// IdleStop stops the box once unused that long ("30m"; "off": never;
	// empty: its type's); it changes in place.
	IdleStop string `json:"idle_stop,omitempty"`
	// Policy is "allow-all", "deny-all" or the name of a declared policy.
	Policy string            `json:"policy,omitempty"`
	Agent  string            `json:"agent,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
	Mounts []Mount           `json:"mounts,omitempty"`
	// Buckets are the buckets the box mounts (mount "s3://…" blocks).
	Buckets []BucketMount `json:"buckets,omitempty"`
	// Desktop is nil when the Boxfile does not say: the server's default.
	Desktop *bool `json:"desktop,omitempty"`
	// Push and Setup run once, after the box is made; the CLI carries
	// them out (it has the local files) and reports the outcome.
	Push  []PushSpec `json:"push,omitempty"`
	Setup []string   `json:"setup,omitempty"`
	// Labels are the box's own labels, to find it by ('paddock ls
	// --label'); they change in place.
	Labels map[string]string `json:"labels,omitempty"`
	// NodeLabels are the labels of the server the box must be made on
	// (placement { labels = {...} }).
	NodeLabels map[string]string `json:"node_labels,omitempty"`
}

// PushSpec copies a local path (relative to the Boxfile's directory) into a
// directory in the box.
type PushSpec struct {
	Local string `json:"local"`
	To    string `json:"to"`
}

// DriveSpec is a declared drive.
type DriveSpec struct {
	Name   string            `json:"name"`
	Size   string            `json:"size,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

// PolicySpec is a declared egress policy.
type PolicySpec struct {
	Name         string   `json:"name"`
	AllowDomains []string `json:"allow_domains,omitempty"`
	AllowCIDRs   []string `json:"allow_cidrs,omitempty"`
}

// Policy modes that need no declaration.
const (
	PolicyAllowAll = "allow-all"
	PolicyDenyAll  = "deny-all"
)

// PlanRequest asks for a plan of a project.
type PlanRequest struct {
	Spec ProjectSpec `json:"spec"`
	// Destroy plans the removal of every box of the project.
	Destroy bool `json:"destroy,omitempty"`
	// Drives allows drives whose declaration is gone (or, with Destroy,
	// every drive of the project) to be deleted with their data.
	Drives bool `json:"drives,omitempty"`
}

// ApplyRequest applies a plan; it is refused when the state has changed
// since Serial.
type ApplyRequest struct {
	PlanRequest
	Serial int64 `json:"serial"`
}

// Plan actions.
const (
	ActionCreate  = "create"
	ActionUpdate  = "update"
	ActionReplace = "replace"
	ActionDelete  = "delete"
)

// Plan is what applying a project's spec would change.
type Plan struct {
	Project string `json:"project"`
	// Serial is the declared-state serial the plan was computed from.
	Serial  int64    `json:"serial"`
	Changes []Change `json:"changes"`
	// Notes are things worth knowing that change nothing.
	Notes []string `json:"notes,omitempty"`
}

// Change is one object's change.
type Change struct {
	Address string       `json:"address"` // box.web, drive.cache, policy.registries
	Action  string       `json:"action"`
	Attrs   []AttrChange `json:"attrs,omitempty"`
	// Reasons say why: what forces a replacement, what drifted.
	Reasons []string `json:"reasons,omitempty"`
}

// AttrChange is one attribute's before and after, as HCL-like text.
// Before is empty on create, After on delete.
type AttrChange struct {
	Name   string `json:"name"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Forces is true when this attribute's change forces replacement.
	Forces bool `json:"forces,omitempty"`
}

// Counts returns how many objects a plan adds, changes and destroys
// (a replacement counts as one added and one destroyed).
func (p Plan) Counts() (add, change, destroy int) {
	for _, c := range p.Changes {
		switch c.Action {
		case ActionCreate:
			add++
		case ActionUpdate:
			change++
		case ActionReplace:
			add++
			destroy++
		case ActionDelete:
			destroy++
		}
	}
	return
}

// ApplyResult reports what an apply did, object by object.
type ApplyResult struct {
	Plan   Plan              `json:"plan"`
	Done   []string          `json:"done"`
	Failed map[string]string `json:"failed,omitempty"`
	Serial int64             `json:"serial"`
	// Setup lists boxes whose push and setup steps are still to run.
	Setup []string `json:"setup,omitempty"`
}

// SetupPost reports the outcome of a box's push and setup steps.
type SetupPost struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// Project is a Boxfile project as the dashboard shows it (GET
// /v1/projects): its objects, its last apply, and its drift.
type Project struct {
	Name     string   `json:"name"`
	Owner    string   `json:"owner,omitempty"`
	Boxes    []string `json:"boxes"`
	Drives   []string `json:"drives"`
	Policies []string `json:"policies"`
	// AppliedAt, AppliedBy and Serial tell the last apply (none for a
	// project applied before Paddock kept them).
	AppliedAt *time.Time `json:"applied_at,omitempty"`
	AppliedBy string     `json:"applied_by,omitempty"`
	// Serial is the declared-state serial the last apply left.
	Serial int64 `json:"serial,omitempty"`
	// Drift is what 'paddock plan' of the last applied Boxfile would
	// change now; empty when the machine matches it.
	Drift      []Change `json:"drift,omitempty"`
	DriftError string   `json:"drift_error,omitempty"`
}
