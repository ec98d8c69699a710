package api

import (
	"time"
)

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
	State    string     `json:"state"` // running, exited, killed (its box stopped while it ran), lost (paddockd restarted or the engine failed while it ran)
	ExitCode *int       `json:"exit_code,omitempty"`
	Started  time.Time  `json:"started"`
	Ended    *time.Time `json:"ended,omitempty"`
}

// Header names of the exec upgrade.
const (
	UpgradeExec = "paddock-exec/1"
)
