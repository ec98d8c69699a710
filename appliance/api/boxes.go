package api

import (
	"time"
)

// Box is a box as the API shows it: what is declared and what was observed.
type Box struct {
	Name       string     `json:"name"`
	Type       string     `json:"type"`
	Image      string     `json:"image"`
	TTLSeconds int64      `json:"ttl_seconds,omitempty"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	Mounts     []Mount    `json:"mounts,omitempty"`
	// Buckets are the buckets of the user's own it mounts.
	Buckets []BucketMount     `json:"buckets,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Desired is the declared run state: "running" or "stopped".
	Desired string `json:"desired"`
	// Status is the observed state: "running", "stopped", "pending"
	// (declared, not yet made) or "error".
	Status    string    `json:"status"`
	Error     string    `json:"error,omitempty"`
	CPUs      float64   `json:"cpus"`
	MemoryMiB int64     `json:"memory_mib"`
	Created   time.Time `json:"created"`
	// From names the snapshot the box's filesystem was made from, if any.
	From string `json:"from,omitempty"`
	// Project is the Boxfile project that declares the box, if any.
	Project string `json:"project,omitempty"`
	Policy  string `json:"policy,omitempty"`
	Agent   string `json:"agent,omitempty"`
	Desktop bool   `json:"desktop,omitempty"`
	// Setup is the state of a Boxfile box's one-time push and setup:
	// pending, done or failed.
	Setup string `json:"setup,omitempty"`
	// Owner is the name of the user the box belongs to.
	Owner string `json:"owner,omitempty"`
	// IP is the box's address on the box network.
	IP string `json:"ip,omitempty"`
	// Note says why the box was stopped when its user did not stop it:
	// its disk use passed its type's disk_gib, or it went unused for its
	// idle stop; or that it lost its container and was made again from a
	// snapshot, losing what it wrote after. Cleared when it starts by hand.
	Note string `json:"note,omitempty"`
	// IdleStop is how long the box may go unused before it is stopped
	// (its own, or its type's; empty: never).
	IdleStop string `json:"idle_stop,omitempty"`
	// Sleeping says that its idle stop stopped it: its next use (a
	// command, an SSH connection, a push or pull, a preview, its desktop
	// or terminal) starts it.
	Sleeping bool `json:"sleeping,omitempty"`
	// Docker is how the box's own Docker engine is, on a running box asked
	// for by name with ?detail=1: "ready" (an engine with no containers:
	// it starts on first use), "starting", "up", "failed: WHY", or "off"
	// (its runtime does not allow one). After a failure in a running box,
	// once a pause is over, WHY ends "the next docker command starts it
	// again".
	Docker string `json:"docker,omitempty"`
	// DesktopState is how the desktop of a running box with one is, asked
	// for by name with ?detail=1: "starting", "up" (its X server answers
	// on :1), "down" (it started and answers no more: screenshots and the
	// desktop page fail) or "failed: WHY" (it did not start).
	DesktopState string `json:"desktop_state,omitempty"`
	// Node is the server the box is on, once the server has more than
	// one (see Node).
	Node string `json:"node,omitempty"`
	// Labels are the box's own labels (what it is for: team=web).
	Labels map[string]string `json:"labels,omitempty"`
	// NodeLabels are the labels its server had to have when it was made.
	NodeLabels map[string]string `json:"node_labels,omitempty"`
	// OOMKills counts the processes in the box the kernel killed for
	// its memory bound (its type's memory_mib); OOMAt is when the last
	// was seen.
	OOMKills int64      `json:"oom_kills,omitempty"`
	OOMAt    *time.Time `json:"oom_at,omitempty"`
	// Broker is what the box sent through the credential broker, by
	// secret (one box's answer only, not the list's).
	Broker []BrokerUse `json:"broker,omitempty"`
	// Access is how the box is shared with the caller, when it is not
	// theirs: "viewer" (they read it) or "member" (they work in it).
	Access string `json:"access,omitempty"`
}

// Screenshot is one kept screenshot of a box's desktop (its PNG is at
// GET /v1/boxes/NAME/screenshots/ID).
type Screenshot struct {
	ID    string    `json:"id"`
	Taken time.Time `json:"taken"`
	Size  int64     `json:"size"`
}

// Port is a TCP port something listens on in a box.
type Port struct {
	Port int `json:"port"`
	// Address is what it listens on: 0.0.0.0, ::, 127.0.0.1, ::1 or one
	// address.
	Address string `json:"address"`
	// URL is its preview (empty when the server serves no previews, or
	// when a preview cannot reach it: Note says why).
	URL  string `json:"url,omitempty"`
	Note string `json:"note,omitempty"`
}

// ReconcileResult is what one reconcile did: its changes, and the
// errors of those that failed, by address.
type ReconcileResult struct {
	Changes []string          `json:"changes"`
	Errors  map[string]string `json:"errors,omitempty"`
}

// TTLPut gives a box a new TTL counted from now ("" or "0": none).
type TTLPut struct {
	TTL string `json:"ttl"`
}

// BoxPost creates a box.
type BoxPost struct {
	Name   string  `json:"name,omitempty"`
	Type   string  `json:"type,omitempty"`
	Image  string  `json:"image,omitempty"`
	TTL    string  `json:"ttl,omitempty"`
	Mounts []Mount `json:"mounts,omitempty"`
	// Buckets are buckets of the user's own to mount (BucketMount).
	Buckets []BucketMount     `json:"buckets,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Policy is "allow-all" (the default), "deny-all" or a policy's name.
	Policy string `json:"policy,omitempty"`
	// Desktop gives the box an XFCE desktop on display :1 (nil: the
	// server's default, desktop_default).
	Desktop *bool `json:"desktop,omitempty"`
	// Node puts the box on that server (see GET /v1/nodes); empty: where
	// Paddock places it.
	Node string `json:"node,omitempty"`
	// Labels are the box's own labels, to find it by.
	Labels map[string]string `json:"labels,omitempty"`
	// NodeLabels put the box on a server with all these labels ('paddock
	// node label').
	NodeLabels map[string]string `json:"node_labels,omitempty"`
	// IdleStop stops the box, with a snapshot, once it went that long
	// unused ("30m"); it starts again on its next use. Empty: its type's
	// idle_stop; "off": never.
	IdleStop string `json:"idle_stop,omitempty"`
}

// Mount attaches a named drive to a box.
type Mount struct {
	Drive    string `json:"drive"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"readonly,omitempty"`
}

// BucketMount is a bucket of the user's own, or a prefix of one, in an
// S3-compatible store, mounted in a box by its server: the keys are a
// Paddock secret the server uses, never seen in the box.
type BucketMount struct {
	// URL is s3://BUCKET or s3://BUCKET/PREFIX.
	URL string `json:"url"`
	// To is where the box sees it: an absolute path, not a system folder.
	To       string `json:"to"`
	ReadOnly bool   `json:"read_only,omitempty"`
	// Secret names the box owner's secret that holds the keys, as
	// ACCESS_KEY_ID:SECRET_ACCESS_KEY.
	Secret string `json:"secret"`
	// Endpoint is the store's address (http(s)://HOST[:PORT]); empty:
	// Amazon S3.
	Endpoint string `json:"endpoint,omitempty"`
	// Region is the bucket's region, where the store wants one.
	Region string `json:"region,omitempty"`
}

// ForkPost makes a new box from a snapshot of another.
type ForkPost struct {
	Name string `json:"name,omitempty"`
	// Snapshot chooses an existing snapshot; empty takes a new one now.
	Snapshot string `json:"snapshot,omitempty"`
	// Node puts the fork on that server (the owner's): it is made where
	// its snapshot is, then moved there. Empty: where the snapshot is.
	Node string `json:"node,omitempty"`
}

// RestorePost brings a box's filesystem back to a snapshot.
type RestorePost struct {
	// Snapshot defaults to the box's newest.
	Snapshot string `json:"snapshot,omitempty"`
}
