// Package jobs is the commands that run in a box detached from who
// started them: a job's start (with its input open or not), its record,
// its output kept in a log on the server (bounded per job, and per user
// across their jobs), following that log, signals to its process group,
// input sent to it, and how it ended (exited with its code, killed when
// its box stopped under it, lost when paddockd lost its stream), with
// their API routes (Routes), over the core's Core.
//
// A job is a use of its box until it ends (a sleeping box wakes; its
// idle stop waits). Its start is counted against its owner's quota of
// running jobs in one step with its record (Core.AddJob). Its log goes
// with its box (Core.KeepsOfBox).
package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Core is what the jobs need of paddockd's core (package service's
// Service has it): its clock; a use of a box; an exec request checked
// against a running box (its environment, stand-ins and bounds
// included); a box with a desktop; a box as the caller sees it; the
// engine's name of a box; a job recorded within its owner's quota; and
// the per-box state that goes with a removed box.
type Core interface {
	Time() time.Time
	Use(ctx context.Context, name string) (done func(), woke bool, err error)
	CheckExec(name string, p api.ExecPost) (driver.ExecSpec, error)
	DesktopBox(name string) (store.Box, error)
	GetBox(name string) (api.Box, error)
	EngineName(name string) string
	AddJob(j store.Job) error
	KeepsOfBox(what string, forget func(t store.Tombstone, jobs []string))
}

// List is the boxes' jobs on one server.
type Jobs struct {
	core  Core
	store *store.Store
	drv   driver.Driver
	cfg   *config.Config
	log   *slog.Logger
	life  context.Context // the jobs' execs end with it (paddockd's stop)

	mu      sync.Mutex
	running map[string]*runningJob // by job id, while they run
	pruneMu sync.Mutex             // one prune of job logs at a time
}

// New is the jobs over core, the store, the engine's driver and the
// configuration; their execs end when life does. Their logs go with
// their boxes.
func New(core Core, st *store.Store, drv driver.Driver, cfg *config.Config, log *slog.Logger, life context.Context) *Jobs {
	jb := &Jobs{core: core, store: st, drv: drv, cfg: cfg, log: log, life: life, running: map[string]*runningJob{}}
	core.KeepsOfBox("job logs", func(_ store.Tombstone, jobs []string) { jb.ForgetLogs(jobs) })
	return jb
}

// Start runs a command detached; its output is kept in a log on the
// server.
func (jb *Jobs) Start(name string, p api.ExecPost) (api.Job, error) {
	return jb.StartWith(name, p, nil, "")
}

// StartWith starts a job; secrets go into its environment only (never into
// the box's declared state, the job record or a snapshot).
func (jb *Jobs) StartWith(name string, p api.ExecPost, secrets map[string]string, label string) (job api.Job, err error) {
	job, _, err = jb.StartWithOptions(name, p, StartOptions{Secrets: secrets, Label: label})
	return job, err
}

// StartOptions are what a job's start may have beyond its request.
type StartOptions struct {
	// Secrets go into its environment only (never into the box's
	// declared state, the job record or a snapshot).
	Secrets map[string]string
	// Label goes before its command in its record, in brackets.
	Label string
	// User is who it runs as in the box: "" is the box's user; "root"
	// its root, whom the box's fence holds as it holds the box's user
	// (who may sudo).
	User string
	// Tap: a tap has its output, stdout and stderr apart, from the first
	// byte.
	Tap bool
	// TTY runs it in a terminal (of the request's Rows and Cols), its
	// input open: its output is the terminal's, all of it stdout; its
	// size may change (Resize).
	TTY bool
}

// StartWithOptions starts a job; with o.Tap, it returns a tap of its
// output.
func (jb *Jobs) StartWithOptions(name string, p api.ExecPost, o StartOptions) (job api.Job, tap *JobTap, err error) {
	secrets, label := o.Secrets, o.Label
	p.TTY = o.TTY
	if o.TTY {
		p.Stdin = true
	}
	// A job is a use of its box until it ends (a sleeping box wakes).
	used, _, err := jb.core.Use(context.Background(), name)
	if err != nil {
		return api.Job{}, nil, err
	}
	defer func() {
		if err != nil {
			used()
		}
	}()
	spec, err := jb.core.CheckExec(name, p)
	if err != nil {
		return api.Job{}, nil, err
	}
	if p.Desktop {
		if _, err := jb.core.DesktopBox(name); err != nil {
			return api.Job{}, nil, err
		}
		spec.Env = append(spec.Env, "DISPLAY="+driver.Display)
	}
	for k, v := range secrets {
		spec.Env = append(spec.Env, k+"="+v)
	}
	if o.User != "" && o.User != "root" {
		return api.Job{}, nil, api.Invalid("user", "user %q: a job runs as the box's user or as root", o.User)
	}
	spec.User = o.User
	if err := os.MkdirAll(jb.jobsDir(), 0o700); err != nil {
		return api.Job{}, nil, err
	}
	j := store.Job{ID: "j" + auth.RandomHex(4), Box: name, Cmd: p.Cmd, State: "running", Started: jb.core.Time()}
	if label != "" {
		j.Cmd = append([]string{"(" + label + ")"}, p.Cmd...)
	}
	f, err := newJobLogWriter(jb.jobLog(j.ID), jb.cfg.JobLogMaxMiB<<20)
	if err != nil {
		return api.Job{}, nil, err
	}
	if err := jb.core.AddJob(j); err != nil {
		f.Close()
		os.Remove(jb.jobLog(j.ID))
		return api.Job{}, nil, err
	}
	rj := newRunningJob(p.Stdin, o.TTY)
	if o.Tap {
		tap = newTap()
		rj.taps.add(tap)
	}
	done := rj.done
	spec.Signals = rj.signals
	spec.Resize, spec.Resized = rj.resize, rj.resized
	if rj.input != nil {
		spec.Stdin = rj.inputEnd
	}
	jb.mu.Lock()
	jb.running[j.ID] = rj
	jb.mu.Unlock()

	go func() {
		defer close(done)
		defer used()
		w := f
		spec.Stdout, spec.Stderr = tapWriter{log: w, taps: &rj.taps}, tapWriter{log: w, taps: &rj.taps, stderr: true}
		code, err := jb.drv.Exec(jb.life, jb.core.EngineName(name), spec)
		rj.end()
		state, cp := jobEnd(code, err, jb.boxStopped(name))
		switch state {
		case "killed":
			fmt.Fprintf(w, "\npaddock: job killed: its box stopped while it ran\n")
		case "lost":
			fmt.Fprintf(w, "\npaddock: job failed: %v\n", err)
		}
		f.Close()
		if err := jb.store.EndJob(j.ID, state, cp, jb.core.Time()); err != nil {
			jb.log.Error("recording job end", "job", j.ID, "err", err)
		}
		rj.taps.end()
		jb.mu.Lock()
		delete(jb.running, j.ID)
		jb.mu.Unlock()
		if b, err := jb.store.GetBox(name); err == nil {
			jb.pruneJobLogs(b.Owner)
		}
	}()
	return j.API(), tap, nil
}

// jobEnd is how a job ended, from what its exec returned and whether its
// box is stopped by now: killed when the box stopped under it (the exec's
// stream broke, or a signal ended it), exited with its code, or lost when
// the exec failed while the box runs on.
func jobEnd(code int, err error, boxStopped bool) (state string, exit *int) {
	switch {
	case boxStopped && err != nil:
		return "killed", nil
	case boxStopped && code > 128:
		return "killed", &code
	case err != nil:
		return "lost", nil
	}
	return "exited", &code
}

// boxStopped says whether a box is declared stopped (or gone).
func (jb *Jobs) boxStopped(name string) bool {
	b, err := jb.store.GetBox(name)
	return errors.Is(err, store.ErrNotFound) || (err == nil && b.Desired != "running")
}

// List lists a box's jobs.
func (jb *Jobs) List(name string) ([]api.Job, error) {
	if _, err := jb.core.GetBox(name); err != nil {
		return nil, err
	}
	js, err := jb.store.ListJobs(name, "")
	if err != nil {
		return nil, err
	}
	out := []api.Job{}
	for _, j := range js {
		out = append(out, j.API())
	}
	return out, nil
}

// Get returns one job of a box.
func (jb *Jobs) Get(name, id string) (api.Job, error) {
	j, err := jb.store.GetJob(id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && j.Box != name) {
		return api.Job{}, api.NotFound("job", id)
	}
	return j.API(), err
}

// Log copies a job's output to w; with follow, it keeps copying until the
// job ends or ctx is done. flush is called after each chunk.
func (jb *Jobs) Log(ctx context.Context, name, id string, follow bool, w io.Writer, flush func()) error {
	if _, err := jb.Get(name, id); err != nil {
		return err
	}
	f, err := openJobLog(jb.jobLog(id))
	if err != nil {
		return fmt.Errorf("job %s has no log: %w", id, err)
	}
	defer f.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if flush != nil {
				flush()
			}
			continue
		}
		if err != nil && err != io.EOF {
			return err
		}
		if !follow {
			return nil
		}
		jb.mu.Lock()
		rj, running := jb.running[id]
		jb.mu.Unlock()
		if !running {
			// Ended: drain what the last write added, then stop.
			if _, err := io.Copy(w, f); err != nil {
				return err
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-rj.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}
