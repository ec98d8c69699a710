// Package api holds the wire types of paddockd's HTTP API: the request and
// response bodies (BoxPost to create, Box for everything), the JSON error
// body, and the validation rules that both the CLI and the server apply to
// names, types and durations. It depends on the standard library only, so the
// CLI can import it on every platform.
package api

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Version is the API path prefix.
const Version = "v1"

// Box is a box as the API shows it: what is declared and what was observed.
type Box struct {
	Name       string            `json:"name"`
	Type       string            `json:"type"`
	Image      string            `json:"image"`
	TTLSeconds int64             `json:"ttl_seconds,omitempty"`
	ExpiresAt  *time.Time        `json:"expires_at,omitempty"`
	Mounts     []Mount           `json:"mounts,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
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
	// idle stop. Cleared when it starts.
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

// Grant is a user a box is shared with (GET /v1/boxes/NAME/grants).
type Grant struct {
	User string `json:"user"`
	// Access is "viewer" (reads the box: its state, jobs and their logs,
	// files, screenshots, metrics) or "member" (works in it as its owner
	// does, but cannot remove, move or share it, or change its policy).
	Access string `json:"access"`
}

// GrantPut shares a box with a user (PUT /v1/boxes/NAME/grants/USER).
type GrantPut struct {
	// Access is "viewer" (the default) or "member".
	Access string `json:"access,omitempty"`
}

// Sample is what a running box used at one moment: GET
// /v1/boxes/NAME/metrics, GET /v1/metrics, and the events stream's
// "metrics" events.
type Sample struct {
	Box string    `json:"box"`
	At  time.Time `json:"at"`
	// CPU is the percentage of one CPU the box's processes used since
	// the sample before (200: two CPUs busy).
	CPU float64 `json:"cpu_percent"`
	// Memory is what its processes hold, less the page cache the kernel
	// can drop; MemoryLimit is its bound (0: none).
	Memory      int64 `json:"memory_bytes"`
	MemoryLimit int64 `json:"memory_limit_bytes"`
	// Disk is what it has written (its writable layer and its
	// /var/lib/docker), as last measured (every disk_check_interval
	// with a disk bound, every metrics_disk_interval without);
	// DiskLimit is its type's disk_gib (0: none).
	Disk      int64 `json:"disk_bytes"`
	DiskLimit int64 `json:"disk_limit_bytes"`
	// NetRx and NetTx are the bytes its network took in and sent since
	// it started; the rates are bytes a second since the sample before.
	NetRx     int64   `json:"net_rx_bytes"`
	NetTx     int64   `json:"net_tx_bytes"`
	NetRxRate float64 `json:"net_rx_rate"`
	NetTxRate float64 `json:"net_tx_rate"`
	// Processes counts its processes (and threads).
	Processes int `json:"processes"`
}

// BoxMetrics is a box's samples (GET /v1/boxes/NAME/metrics).
type BoxMetrics struct {
	Box string `json:"box"`
	// Interval is how often a running box is sampled; samples older
	// than an hour are kept one a minute.
	Interval string `json:"interval"`
	// Samples are oldest first; the last is the newest (none: the box
	// did not run in that time).
	Samples []Sample `json:"samples"`
}

// Dir is a directory in a box (GET /v1/boxes/NAME/dir?path=).
type Dir struct {
	Path    string     `json:"path"`
	Entries []DirEntry `json:"entries"`
	// Truncated says the directory has more entries than were listed.
	Truncated bool `json:"truncated,omitempty"`
}

// DirEntry is one entry of a Dir.
type DirEntry struct {
	Name string `json:"name"`
	// Type is "dir", "file", "link" or "other".
	Type     string    `json:"type"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	// Target is a link's target.
	Target string `json:"target,omitempty"`
}

// Screenshot is one kept screenshot of a box's desktop (its PNG is at
// GET /v1/boxes/NAME/screenshots/ID).
type Screenshot struct {
	ID    string    `json:"id"`
	Taken time.Time `json:"taken"`
	Size  int64     `json:"size"`
}

// SignInPost asks for a dashboard sign-in link.
type SignInPost struct {
	// Box lands the browser on that box's page instead of the list.
	Box string `json:"box,omitempty"`
	// Port, with Box, lands it on the preview of that port of the box.
	Port int `json:"port,omitempty"`
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

// SignInLink is a single-use link that signs a browser in as the caller.
type SignInLink struct {
	URL     string    `json:"url"`
	Expires time.Time `json:"expires"`
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

// PolicyPut sets a box's policy.
type PolicyPut struct {
	Policy string `json:"policy"`
}

// PolicyPost creates a named policy outside any Boxfile.
type PolicyPost = PolicySpec

// Policy is a named policy.
type Policy struct {
	PolicySpec
	Project string   `json:"project,omitempty"`
	UsedBy  []string `json:"used_by,omitempty"`
}

// PolicyReport is what a box's firewall did.
type PolicyReport struct {
	Box    string            `json:"box"`
	Policy string            `json:"policy"`
	Drops  map[string]uint64 `json:"drops"`
	DNS    []DNSDecision     `json:"dns"`
}

// DNSDecision is one answer of the boxes' resolver.
type DNSDecision struct {
	Time    time.Time `json:"time"`
	Name    string    `json:"name"`
	Allowed bool      `json:"allowed"`
	Reason  string    `json:"reason"`
}

// BoxPost creates a box.
type BoxPost struct {
	Name   string            `json:"name,omitempty"`
	Type   string            `json:"type,omitempty"`
	Image  string            `json:"image,omitempty"`
	TTL    string            `json:"ttl,omitempty"`
	Mounts []Mount           `json:"mounts,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
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
// Drained is what 'paddock node drain' did: the boxes that moved, and
// where to.
type Drained struct {
	Node  string     `json:"node"`
	Moved []MovedBox `json:"moved"`
}

// MovedBox is a box, or a drive no box mounts, that a drain moved.
type MovedBox struct {
	Box   string `json:"box,omitempty"`
	Drive string `json:"drive,omitempty"`
	To    string `json:"to"`
}

// MovePost moves a box, with the drives it mounts, to another server
// (POST /v1/boxes/NAME/move), or a drive (POST /v1/drives/NAME/move).
type MovePost struct {
	// Node is the server's name, as GET /v1/nodes says it.
	Node string `json:"node"`
	// With are other boxes of the same server that move in the same go:
	// a drive moves with every box that mounts it, or not at all.
	With []string `json:"with,omitempty"`
}

type RestorePost struct {
	// Snapshot defaults to the box's newest.
	Snapshot string `json:"snapshot,omitempty"`
}

// Snapshot is a filesystem snapshot of a box.
type Snapshot struct {
	ID      string    `json:"id"`
	Box     string    `json:"box"`
	Reason  string    `json:"reason"`
	State   string    `json:"state"` // pending, ready, failed, deleting
	Error   string    `json:"error,omitempty"`
	Created time.Time `json:"created"`
	// Size is the bytes the snapshot adds to what its box was made from
	// (absent: not known).
	Size int64 `json:"size,omitempty"`
}

// Drive is a named volume that outlives the boxes that mount it.
type Drive struct {
	Name    string    `json:"name"`
	State   string    `json:"state"` // ready, pending, deleting
	UsedBy  []string  `json:"used_by,omitempty"`
	Created time.Time `json:"created"`
	// Project is the Boxfile project that declares the drive, if any.
	Project string `json:"project,omitempty"`
	// Size and Labels are what the Boxfile declares. Size is recorded and
	// shown, not enforced: Docker's local volumes have no quota.
	Size   string            `json:"size,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// Node is the server the drive's data is on, once the server has
	// more than one (its boxes are on it too).
	Node string `json:"node,omitempty"`
}

// DrivePost creates a drive.
type DrivePost struct {
	Name string `json:"name"`
}

// ExecPost runs a command in a box. Attached, it is sent with an upgrade to
// the exec stream protocol (package stream); detached, it makes a job.
type ExecPost struct {
	Cmd     []string          `json:"cmd"`
	Env     map[string]string `json:"env,omitempty"`
	WorkDir string            `json:"workdir,omitempty"`
	TTY     bool              `json:"tty,omitempty"`
	// Desktop runs the command on the box's display (detached only).
	Desktop bool   `json:"desktop,omitempty"`
	Rows    uint16 `json:"rows,omitempty"`
	Cols    uint16 `json:"cols,omitempty"`
	// Timeout ends the command after this long (seconds, or a duration
	// such as "90s"; empty: no bound): its process group gets SIGTERM,
	// then SIGKILL 5 s later, and the exit code is 124, as with
	// coreutils timeout.
	Timeout string `json:"timeout,omitempty"`
	// Stdin keeps a detached job's input open: what is sent to
	// .../jobs/ID/input reaches it, until a send with eof=1 ends it.
	// Without it a job's input is empty. (An attached exec's input is
	// its stream.)
	Stdin bool `json:"stdin,omitempty"`
}

// SignalPost is a signal for a running job's process group.
type SignalPost struct {
	// Signal is TERM (the default), INT, KILL, HUP, QUIT, USR1 or USR2.
	Signal string `json:"signal,omitempty"`
}

// JobInput is what a send to a job's input did.
type JobInput struct {
	// Bytes is what reached the job's input from this send.
	Bytes int64 `json:"bytes"`
	// Closed says the job's input is ended (this send's eof=1, or an
	// earlier one's).
	Closed bool `json:"closed"`
}

// Job is a detached command whose output the server keeps.
type Job struct {
	ID       string     `json:"id"`
	Box      string     `json:"box"`
	Cmd      []string   `json:"cmd"`
	State    string     `json:"state"` // running, exited, lost
	ExitCode *int       `json:"exit_code,omitempty"`
	Started  time.Time  `json:"started"`
	Ended    *time.Time `json:"ended,omitempty"`
}

// Whoami answers who a token belongs to.
type Whoami struct {
	Token  string `json:"token"`
	User   string `json:"user"`
	Role   string `json:"role"`
	Server string `json:"server"`
	// SSHPort is the SSH gateway's port (0: none).
	SSHPort int `json:"ssh_port,omitempty"`
	// SSHHostKey is the SSH gateway's host key, as a known_hosts line
	// takes it ("ssh-ed25519 AAAA..."): 'paddock ssh' trusts that key
	// for the gateway and no other.
	SSHHostKey string `json:"ssh_host_key,omitempty"`
	// Version is the server's release (see package version).
	Version string `json:"version"`
}

// Error is the body of every non-2xx answer.
type Error struct {
	// Code is a stable word: not_found, invalid, conflict, unauthorized, internal.
	Code    string `json:"error"`
	Message string `json:"message"`
	// Field names the request field that was invalid, when one was.
	Field string `json:"field,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Error codes.
const (
	CodeNotFound     = "not_found"
	CodeInvalid      = "invalid"
	CodeConflict     = "conflict"
	CodeUnauthorized = "unauthorized"
	CodeInternal     = "internal"
	CodeForbidden    = "forbidden"
	CodeGone         = "gone"
	CodeTooMany      = "too_many_requests"
	// CodeDiskFull (HTTP 507): the disk under the server's state is full;
	// nothing was changed.
	CodeDiskFull = "disk_full"
	// The device login's poll answers (RFC 8628, 3.5).
	CodePending      = "authorization_pending"
	CodeSlowDown     = "slow_down"
	CodeAccessDenied = "access_denied"
	CodeExpiredToken = "expired_token"
)

// Header names of the exec upgrade.
const (
	UpgradeExec = "paddock-exec/1"
)

// Secret is a secret's name; its value is never sent back.
type Secret struct {
	Name    string    `json:"name"`
	Updated time.Time `json:"updated"`
	// Shared: set by an owner for every user's boxes that have no secret
	// of this name; those boxes' users can read it there.
	Shared bool `json:"shared"`
	// Mine: the caller's own (else an owner's shared one).
	Mine bool `json:"mine"`
	// Broker, when set, says the secret is brokered: boxes get a
	// stand-in, and the value goes only to these hosts, through the
	// broker.
	Broker *SecretBroker `json:"broker,omitempty"`
}

// SecretBroker is how a secret is brokered: the hosts it may be sent to,
// the header it goes in ("x-api-key", "bearer", "token", a header's name,
// or "NAME: PREFIX"), and how many requests a box may send with it
// ("60/min", "1000/day"; "" for no limit).
type SecretBroker struct {
	Hosts  []string `json:"hosts"`
	Header string   `json:"header"`
	Limit  string   `json:"limit,omitempty"`
}

// BrokerUse is what a box sent through the broker with one secret.
type BrokerUse struct {
	Secret   string `json:"secret"`
	Requests int64  `json:"requests"`
	// Refused counts requests the broker turned away (another box's
	// stand-in, a host the secret is not for, past the limit, ...).
	Refused   int64 `json:"refused"`
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
	// Status counts the API's answers by class: "2xx", "4xx", "5xx".
	Status     map[string]int64 `json:"status,omitempty"`
	LastStatus int              `json:"last_status,omitempty"`
	Last       *time.Time       `json:"last,omitempty"`
}

// Agent is an entry of the agent table.
type Agent struct {
	Name     string   `json:"name"`
	Command  []string `json:"command"`
	Secrets  []string `json:"secrets,omitempty"`
	Required []string `json:"required,omitempty"`
}

// BoxAgent is what one box has of an agent: whether it is installed, and
// where its credentials would come from (never their values).
type BoxAgent struct {
	Name      string `json:"name"`
	Installed bool   `json:"installed"`
	// Credentials: "secret NAME" (a secret of the box's owner is set),
	// "brokered secret NAME" (set, and the box gets a stand-in for it),
	// "env NAME" (the box's own environment has it), "login" (the
	// agent's own login files are in the box), or "".
	Credentials string `json:"credentials"`
	// Missing are required secrets that are not set: a prompt is refused.
	Missing []string `json:"missing,omitempty"`
	// Hint, when set, is why a prompt to this agent would be refused and
	// what to do (not installed, a secret missing, no credentials).
	Hint string `json:"hint,omitempty"`
}

// PromptPost hands an agent a task in a box.
type PromptPost struct {
	Agent   string `json:"agent,omitempty"`
	Task    string `json:"task"`
	WorkDir string `json:"workdir,omitempty"`
}

// KeyPost registers an SSH public key.
type KeyPost struct {
	Name string `json:"name,omitempty"`
	// Key is one line of authorized_keys.
	Key string `json:"key"`
}

// Key is a registered SSH public key.
type Key struct {
	Name        string    `json:"name"`
	Fingerprint string    `json:"fingerprint"`
	Type        string    `json:"type"`
	Created     time.Time `json:"created"`
}

// DesktopTicket opens a box's desktop in a browser once.
type DesktopTicket struct {
	Ticket string `json:"ticket"`
	// Path is the page's path on the server, with the ticket in its fragment.
	Path    string    `json:"path"`
	Expires time.Time `json:"expires"`
	// ViewOnly says the desktop is seen, not used: the box is shared with
	// the caller as a viewer, and the server drops their input.
	ViewOnly bool `json:"view_only,omitempty"`
}

// DesktopAction is one action on a box's desktop, in the vocabulary and
// with the argument names of Anthropic's computer-use tool, so that an
// agent loop can forward its tool calls as they are. Coordinates are
// pixels of the screenshots the caller sees: with a scale, they are
// scaled back to the screen's.
type DesktopAction struct {
	// Action is key, type, mouse_move, left_click, right_click,
	// middle_click, double_click, triple_click, left_click_drag,
	// left_mouse_down, left_mouse_up, scroll, hold_key, wait,
	// cursor_position, screenshot or zoom; or, beyond that tool's,
	// windows, launch or wait_idle.
	Action string `json:"action"`
	// Coordinate is [x, y]: where the mouse goes first (mouse_move, the
	// clicks, scroll; the end of left_click_drag).
	Coordinate []int `json:"coordinate,omitempty"`
	// StartCoordinate is where left_click_drag starts (default: where the
	// mouse is).
	StartCoordinate []int `json:"start_coordinate,omitempty"`
	// Text is what type types (any Unicode; a newline is Return), the
	// keys of key and hold_key in xdotool's names ("ctrl+s", "Return";
	// several separated by spaces), or the modifier keys held during a
	// click or scroll ("shift", "ctrl+alt").
	Text string `json:"text,omitempty"`
	// ScrollDirection is up, down, left or right; ScrollAmount the
	// wheel's clicks (default 3).
	ScrollDirection string `json:"scroll_direction,omitempty"`
	ScrollAmount    int    `json:"scroll_amount,omitempty"`
	// Duration is seconds: how long hold_key holds and wait waits, the
	// bound of wait_idle (default 5) and of launch's wait for a new
	// window (default 10). At most 60.
	Duration float64 `json:"duration,omitempty"`
	// Region is zoom's [x0, y0, x1, y1]: that part of the screen at the
	// screen's own resolution.
	Region []int `json:"region,omitempty"`
	// Target is what launch opens: a URL, a file in the box, or a command
	// line (an application: "mousepad notes.txt").
	Target string `json:"target,omitempty"`
}

// RunPost runs code in a box's code interpreter: a Jupyter kernel that
// keeps its state between calls (a context).
type RunPost struct {
	Code string `json:"code"`
	// Lang picks the kernel: python (the default), or the language of
	// another Jupyter kernel installed in the box's image (node and bash
	// need one: ijavascript, bash_kernel).
	Lang string `json:"lang,omitempty"`
	// Context names the context to run in (default: the language's own,
	// started on first use).
	Context string `json:"context,omitempty"`
	// Timeout interrupts the code after this long (seconds, or a
	// duration such as "90s"; default 60 s, at most 1 h): the kernel
	// gets an interrupt (Ctrl-C), keeps its state and answers on.
	Timeout string `json:"timeout,omitempty"`
}

// RunError is an error the code raised.
type RunError struct {
	Name      string   `json:"name"`
	Value     string   `json:"value"`
	Traceback []string `json:"traceback"`
}

// RunResult is what a run of code gave.
type RunResult struct {
	Context string `json:"context"`
	Lang    string `json:"lang"`
	Stdout  string `json:"stdout"`
	Stderr  string `json:"stderr"`
	// Result is the value of the code's last expression, in each form the
	// kernel gave: "text/plain" always, "text/html" (a data frame),
	// "image/png" (base64), "application/json" ...
	Result map[string]any `json:"result,omitempty"`
	// Display holds what the code displayed as it ran (a matplotlib
	// figure: "image/png", base64), in order, each in its forms.
	Display []map[string]any `json:"display,omitempty"`
	// Error is the exception the code raised, with its traceback.
	Error *RunError `json:"error,omitempty"`
	// ExecutionCount counts the runs of the context.
	ExecutionCount int `json:"execution_count"`
	// TimedOut says the code ran past its timeout and was interrupted.
	TimedOut bool `json:"timed_out,omitempty"`
	// Started says the context's kernel was started for this run: what
	// earlier runs set is not there.
	Started bool `json:"started,omitempty"`
}

// CodeContext is a kernel of a box's code interpreter, with its state.
type CodeContext struct {
	Name string `json:"name"`
	Lang string `json:"lang"`
	// Kernel is the Jupyter kernel's name (python3).
	Kernel  string    `json:"kernel"`
	Started time.Time `json:"started"`
	// State is running, or dead (the box was stopped, or the kernel
	// died): restart it.
	State string `json:"state"`
}

// ContextPost makes a context.
type ContextPost struct {
	// Name is 1-32 lowercase letters, digits and '-' (default: made up).
	Name string `json:"name,omitempty"`
	Lang string `json:"lang,omitempty"`
}

// WatchEvent is an event of a file watch (GET /v1/boxes/NAME/watch).
type WatchEvent struct {
	// Type is created, modified, removed or renamed; or ready (the
	// watches are set), dropped (Count events did not fit in the server's
	// queue: the client read too slowly), overflow (the kernel's own
	// queue overflowed in the box: events were lost) or error.
	Type string `json:"type"`
	Path string `json:"path,omitempty"`
	// From is a renamed path's old name.
	From string `json:"from,omitempty"`
	// Kind is file, dir, link or other, and Size its size in bytes, when
	// it was still there to look at.
	Kind    string    `json:"kind,omitempty"`
	Size    *int64    `json:"size,omitempty"`
	Count   int64     `json:"count,omitempty"`
	Watches int       `json:"watches,omitempty"`
	Time    time.Time `json:"time,omitzero"`
	Message string    `json:"message,omitempty"`
	// Errno is the system's word for an error (EACCES, ENOENT...).
	Errno string `json:"errno,omitempty"`
}

// DesktopActionNames are the actions a DesktopAction may name: the
// computer-use tool's, then Paddock's own.
var DesktopActionNames = []string{"key", "type", "mouse_move", "left_click", "right_click", "middle_click", "double_click",
	"triple_click", "left_click_drag", "left_mouse_down", "left_mouse_up", "scroll", "hold_key", "wait", "cursor_position",
	"screenshot", "zoom", "windows", "launch", "wait_idle"}

// DesktopActionsPost is a step of an agent on a box's desktop: its
// actions, run in order, and what to answer with.
type DesktopActionsPost struct {
	Actions []DesktopAction `json:"actions"`
	// Screenshot asks for a screenshot once the actions are done.
	Screenshot bool `json:"screenshot,omitempty"`
	// Scale (0 < scale <= 1, default 1) shrinks screenshots; coordinates
	// in the actions and in the answer are in the shrunk pixels.
	Scale float64 `json:"scale,omitempty"`
}

// DesktopWindow is an open window of a desktop: its title and where it
// is (its contents, without the frame the window manager adds).
type DesktopWindow struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	X      int    `json:"x"`
	Y      int    `json:"y"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Active bool   `json:"active,omitempty"`
}

// DesktopActionResult is what one action gave.
type DesktopActionResult struct {
	Action string `json:"action"`
	// Coordinate is where the mouse is (cursor_position).
	Coordinate []int `json:"coordinate,omitempty"`
	// Image is a PNG, base64 (screenshot, zoom).
	Image string `json:"image,omitempty"`
	// Windows are the open windows (windows), or the one launch saw open.
	Windows []DesktopWindow `json:"windows,omitempty"`
	// Idle says whether wait_idle saw the screen stop changing within
	// its bound.
	Idle *bool `json:"idle,omitempty"`
}

// DesktopActionsResult answers a DesktopActionsPost.
type DesktopActionsResult struct {
	Results []DesktopActionResult `json:"results"`
	// Screenshot is the PNG asked for, base64.
	Screenshot string `json:"screenshot,omitempty"`
	// Width and Height are the screenshots' size (the screen's, scaled).
	Width  int `json:"width"`
	Height int `json:"height"`
}

// TokenCreated carries a new token's value, shown this once.
type TokenCreated struct {
	Name  string `json:"name"`
	Token string `json:"token"`
}

// TokenInfo describes a token without its value.
type TokenInfo struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

// TokenPost asks for a token.
type TokenPost struct {
	Name string `json:"name"`
}

// User is a person who may use the server.
type User struct {
	Name    string    `json:"name"`
	Role    string    `json:"role"`
	Created time.Time `json:"created"`
	// SSO is the single sign-on provider the user signs in with (its
	// id), and Email the address it gave at their last sign-in.
	SSO   string `json:"sso,omitempty"`
	Email string `json:"email,omitempty"`
}

// InvitePost asks for an invitation link.
type InvitePost struct {
	// Role is "member" (the default), "admin" or "owner" (an owner's to give).
	Role string `json:"role,omitempty"`
}

// InviteCreated carries an invitation's one-time token and its link.
type InviteCreated struct {
	Token   string    `json:"token"`
	URL     string    `json:"url,omitempty"`
	Role    string    `json:"role"`
	Expires time.Time `json:"expires"`
}

// Session is a browser session: the cookie's value and the value its
// pages send back against cross-site requests.
type Session struct {
	Token   string    `json:"-"`
	CSRF    string    `json:"-"`
	Expires time.Time `json:"expires"`
}

// DevicePost starts a device login.
type DevicePost struct {
	// Name is the name of the token the login makes (default "cli").
	Name string `json:"name,omitempty"`
}

// DeviceCode answers a device login's start.
type DeviceCode struct {
	DeviceCode string `json:"device_code"`
	UserCode   string `json:"user_code"`
	// VerificationURI is the page to type the code on; the Complete form
	// carries the code.
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int    `json:"expires_in"`
	Interval                int    `json:"interval"`
}

// DeviceTokenPost is the CLI's poll.
type DeviceTokenPost struct {
	DeviceCode string `json:"device_code"`
}

// DeviceToken is the token a device login made.
type DeviceToken struct {
	Token string `json:"token"`
}

// NodeJoin is a one-time join token for a server (POST /v1/nodes/joins,
// the owner's): Command is what to run on the new server.
type NodeJoin struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	// CASHA256 is the cluster authority's fingerprint: the joining server
	// trusts that authority and no other.
	CASHA256 string `json:"ca_sha256"`
	Command  string `json:"command"`
}

// NodeJoinRequest is what a server sends to join (POST /v1/nodes/join,
// authenticated by its token alone).
type NodeJoinRequest struct {
	Token string `json:"token"`
	// Name is the name the server asks for (its host name); the answer
	// says the one it got.
	Name string `json:"name"`
	// Addr is where its agent answers (host:port, a private address the
	// control plane reaches).
	Addr string `json:"addr"`
	// PublicKey is its agent's public key (PEM, PKIX): the private half
	// never leaves it.
	PublicKey string `json:"public_key"`
}

// NodeJoined is what a server that joined needs to serve as a node.
type NodeJoined struct {
	Name string `json:"name"`
	// Cert is its agent's certificate, CA the cluster authority's (PEM).
	Cert string `json:"cert"`
	CA   string `json:"ca"`
	// Subnet is its box network; Instance names its engine objects and
	// its nftables table.
	Subnet   string `json:"subnet"`
	Instance string `json:"instance"`
	// Caller is the name in the certificate of the control plane, the one
	// caller its agent answers.
	Caller string `json:"caller"`
	// Swarm is what its engine joins the cluster's swarm with: sent only
	// to a server that showed a valid join token, over the TLS its join
	// command pinned.
	Swarm SwarmJoin `json:"swarm"`
}

// SwarmJoin is how an engine joins the cluster's swarm: the swarm's ID,
// its manager's address (IP:2377) and a worker token, which the next
// 'paddock node add' replaces.
type SwarmJoin struct {
	ClusterID string   `json:"cluster_id"`
	Managers  []string `json:"managers"`
	Token     string   `json:"token"`
}

// Node is a server of this Paddock (GET /v1/nodes, the owner's).
type Node struct {
	Name string `json:"name"`
	// ControlPlane marks the server paddockd runs on.
	ControlPlane bool              `json:"control_plane,omitempty"`
	Addr         string            `json:"addr,omitempty"`
	Subnet       string            `json:"subnet"`
	Labels       map[string]string `json:"labels"`
	// State is "up", or "down" with Error saying why: Swarm's word on the
	// server (its heartbeats), or its agent not answering.
	State string `json:"state"`
	// Swarm is the swarm's node ID and its word on the server (ready,
	// down, unknown); empty before the server is in the swarm.
	SwarmID string `json:"swarm_id,omitempty"`
	// Drained: no new box goes there ('paddock node drain').
	Drained    bool   `json:"drained,omitempty"`
	SwarmState string `json:"swarm_state,omitempty"`
	Error      string `json:"error,omitempty"`
	// Routes are the server's routes, come since paddockd started,
	// that take addresses of its box network away from its bridge
	// ("ADDR goes by ROUTE"): its boxes there cannot be reached until
	// they are removed.
	Routes []string `json:"routes,omitempty"`
	Boxes  int      `json:"boxes"`
	Pool   int      `json:"pool"`
	// OwnPool is the server's own warm pool: pool boxes of each type
	// kept on it ('paddock node pool'), beside warm_pool's.
	OwnPool     map[string]int `json:"own_pool,omitempty"`
	Drives      int            `json:"drives"`
	CPUs        int            `json:"cpus,omitempty"`
	MemoryBytes int64          `json:"memory_bytes,omitempty"`
	MemoryFree  int64          `json:"memory_free,omitempty"`
	DiskBytes   int64          `json:"disk_bytes,omitempty"`
	DiskFree    int64          `json:"disk_free,omitempty"`
	Joined      time.Time      `json:"joined,omitempty"`
}

// StateText is how a server's state reads in a list: up or down, drained,
// why it is down, and the box addresses its routes take elsewhere.
func (n Node) StateText() string {
	s := n.State
	if n.Drained {
		s += ", drained"
	}
	if n.Error != "" {
		s += ": " + n.Error
	}
	if len(n.Routes) > 0 {
		s += "; box addresses routed elsewhere, unreachable: " + strings.Join(n.Routes, "; ")
	}
	return s
}

// NodePool replaces a server's own warm pool (PUT /v1/nodes/NAME/pool):
// how many ready boxes of each type are kept on it (0: none).
type NodePool struct {
	Pool map[string]int `json:"pool"`
}

// NodeLabels replaces a server's labels (PUT /v1/nodes/NAME/labels).
type NodeLabels struct {
	Labels map[string]string `json:"labels"`
}

// AuditCheck is what checking the audit log's chain found.
type AuditCheck struct {
	OK      bool        `json:"ok"`
	Entries int64       `json:"entries"`          // entries that chain, from First on
	First   int64       `json:"first"`            // the first entry kept (those before were pruned)
	Last    int64       `json:"last"`             // the last entry that chains
	Broken  *AuditBreak `json:"broken,omitempty"` // where it breaks, or what a witness says is missing
	// Head is the log's last entry: what a client keeps, as a witness
	// outside the server, and sends with its next check (seen).
	Head *AuditMark `json:"head,omitempty"`
	// Witnesses are what the log was held against: "client" (seen), and
	// "export" (the last entry of audit_file).
	Witnesses []string `json:"witnesses,omitempty"`
}

// AuditMark names one entry of the audit log: its number and hash.
type AuditMark struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// String is the mark as the verify route's seen parameter takes it.
func (m AuditMark) String() string { return fmt.Sprintf("%d:%s", m.Seq, m.Hash) }

// ParseAuditMark reads SEQ:HASH.
func ParseAuditMark(s string) (AuditMark, error) {
	seq, hash, ok := strings.Cut(s, ":")
	n, err := strconv.ParseInt(seq, 10, 64)
	if !ok || err != nil || n < 1 || len(hash) != 64 || strings.Trim(hash, "0123456789abcdef") != "" {
		return AuditMark{}, &Error{Code: CodeInvalid, Field: "seen", Message: "seen is SEQ:HASH, an entry's number and hash as the last check's head gave them"}
	}
	return AuditMark{Seq: n, Hash: hash}, nil
}

// AuditEntry is one entry of the audit log (see package audit).
type AuditEntry struct {
	Seq    int64           `json:"seq"`
	At     time.Time       `json:"at"`
	User   string          `json:"user,omitempty"` // empty: nobody signed in (a failed sign-in names whom it tried in Detail)
	Via    string          `json:"via,omitempty"`  // "token NAME", "session", "ssh key NAME", "link"
	Addr   string          `json:"addr,omitempty"`
	Agent  string          `json:"agent,omitempty"`
	Action string          `json:"action"`
	Box    string          `json:"box,omitempty"`
	Owner  string          `json:"box_owner,omitempty"` // the box's owner then: a member sees entries about their boxes
	Object string          `json:"object,omitempty"`    // another object, as KIND/NAME: "drives/cache"
	Detail json.RawMessage `json:"detail,omitempty"`
	Result string          `json:"result"` // "ok", or what went wrong
	Prev   string          `json:"prev"`
	Hash   string          `json:"hash"`
}

// AuditBreak is where the audit log stops chaining.
type AuditBreak struct {
	Seq    int64  `json:"seq"`
	Reason string `json:"reason"`
}

func (b *AuditBreak) Error() string { return fmt.Sprintf("entry %d: %s", b.Seq, b.Reason) }

// QuotaLimits bound what a member may have at once; 0, and an empty
// Types, are no bound.
type QuotaLimits struct {
	Boxes    int      `json:"boxes"`
	Running  int      `json:"running"` // boxes meant to run
	Drives   int      `json:"drives"`
	DriveGiB float64  `json:"drive_gib"` // what their drives hold together
	Jobs     int      `json:"jobs"`      // running jobs and prompts
	Types    []string `json:"types"`     // the box types they may make
}

// QuotaUse is what a user has now, against their quota.
type QuotaUse struct {
	Boxes   int `json:"boxes"`
	Running int `json:"running"`
	Drives  int `json:"drives"`
	Jobs    int `json:"jobs"`
}

// UserQuota is one user's quota: what holds (the server's defaults, but
// the fields in Own, which were set for this user), and their use.
// Owners have no bounds.
type UserQuota struct {
	User   string      `json:"user"`
	Role   string      `json:"role"`
	Limits QuotaLimits `json:"limits"`
	Own    []string    `json:"own"`
	// Groups names, for each field a group's quota gives (and none set
	// for the user), the group.
	Groups map[string]string `json:"groups,omitempty"`
	Use    QuotaUse          `json:"use"`
}

// Group is a group of users (GET /v1/groups): set by the owner or an
// admin, or by a sign-in provider (its groups claim, at each sign-in).
type Group struct {
	Name    string        `json:"name"`
	Members []GroupMember `json:"members"`
	// Quota is what the group's quota sets (nil fields: nothing), for
	// its members who are not given the field themselves.
	Quota QuotaPut `json:"quota"`
}

// GroupMember is a user in a group, and what put them there: "owner" (by
// hand) or "sso:ID" (a sign-in provider).
type GroupMember struct {
	User   string `json:"user"`
	Source string `json:"source"`
}

// QuotaFields are the fields of a quota, as QuotaPut and Own name them.
var QuotaFields = []string{"boxes", "running", "drives", "drive_gib", "jobs", "types"}

// QuotaPut changes a user's quota (the owner's): each field given is set
// for them (0: no bound); those named in Default go back to the server's
// default.
type QuotaPut struct {
	Boxes    *int      `json:"boxes,omitempty"`
	Running  *int      `json:"running,omitempty"`
	Drives   *int      `json:"drives,omitempty"`
	DriveGiB *float64  `json:"drive_gib,omitempty"`
	Jobs     *int      `json:"jobs,omitempty"`
	Types    *[]string `json:"types,omitempty"`
	Default  []string  `json:"default,omitempty"`
}

// Image is a user's own box image, built from a Dockerfile in a builder
// box. Boxes are made from it by Ref (or, by its builder, by NAME:TAG).
type Image struct {
	// Name is NAME:TAG; Ref is OWNER/NAME:TAG, the server's name for it.
	Name  string `json:"name"`
	Ref   string `json:"ref"`
	Owner string `json:"owner"`
	// ID is the engine's id of the image.
	ID   string `json:"id"`
	Size int64  `json:"size"`
	// Dockerfile is its path in the build context; ContextDigest is the
	// digest of the context as the build saw it (names, modes, contents).
	Dockerfile    string `json:"dockerfile"`
	ContextDigest string `json:"context_digest"`
	// Bases are the images it was built on.
	Bases   []string  `json:"bases"`
	Project string    `json:"project,omitempty"`
	Built   time.Time `json:"built"`
	// BuildSeconds is how long its build took.
	BuildSeconds float64 `json:"build_seconds"`
	// Cached: this build's inputs were the last build's, and its image
	// was kept (only in a build's answer).
	Cached bool `json:"cached,omitempty"`
	// SharedWith says who else may make boxes from it: "user:NAME",
	// "group:NAME" or "everyone".
	SharedWith []string `json:"shared_with"`
	// Mine: the caller's own (else shared with them, or seen as an admin).
	Mine bool `json:"mine"`
}

// ImageShares is who else may make boxes from an image (all its tags),
// replacing what was: named users, groups, or everyone.
type ImageShares struct {
	Users    []string `json:"users"`
	Groups   []string `json:"groups"`
	Everyone bool     `json:"everyone"`
}

// BuildEvent is one event of a build's stream: "log" (Text, a line of the
// build's output), "image" (the image made) or "error" (Message).
type BuildEvent struct {
	Type    string `json:"type"`
	Text    string `json:"text,omitempty"`
	Image   *Image `json:"image,omitempty"`
	Message string `json:"message,omitempty"`
	Code    string `json:"code,omitempty"`
}
