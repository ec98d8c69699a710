package service

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// RunningBox returns a box that is declared and running, or a clear error.
func (s *Service) RunningBox(name string) (store.Box, error) {
	b, err := s.Store.GetBox(name)
	if errors.Is(err, store.ErrNotFound) {
		return b, api.NotFound("box", name)
	}
	if err != nil {
		return b, err
	}
	return b, s.running(b)
}

// running refuses box b when it does not run, saying what to do: start
// it, or, on a server that is down, where starting cannot help, wait.
func (s *Service) running(b store.Box) error {
	if b.Desired == "running" && b.Observed == "running" {
		return nil
	}
	if b.Observed == "node down" {
		since := ""
		if s.Cluster != nil {
			if seen, ok := s.Cluster.LastSeen(b.Node); ok && !seen.DownSince.IsZero() {
				since = " since " + seen.DownSince.UTC().Format(time.RFC3339) + " (" + s.now().Sub(seen.DownSince).Round(time.Second).String() + " ago)"
			}
		}
		return api.Conflict("box %q is on server %s, which is down%s: starting cannot help, its container and files are there. Wait for the server ('paddock nodes' says when it is back; its boxes declared running start again then); a box moves to another server ('paddock move') only while its own answers", b.Name, s.NodeDisplay(b.Node), since)
	}
	return api.Conflict("box %q is not running (status %s); start it with 'paddock start %s'", b.Name, b.Observed, b.Name)
}

// execEnv merges the box's declared environment with the request's.
func execEnv(box map[string]string, req map[string]string) ([]string, error) {
	m := map[string]string{}
	for k, v := range box {
		m[k] = v
	}
	for k, v := range req {
		if err := api.ValidEnvName(k); err != nil {
			return nil, err
		}
		m[k] = v
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+m[k])
	}
	return out, nil
}

// ExecIO is where an attached command's streams go.
type ExecIO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Resize <-chan [2]uint16
}

// CheckExec validates an exec request against a box before anything is
// attached, so that the caller can still answer with a plain error.
func (s *Service) CheckExec(name string, p api.ExecPost) (driver.ExecSpec, error) {
	b, err := s.RunningBox(name)
	if err != nil {
		return driver.ExecSpec{}, err
	}
	return s.CheckExecIn(b, p)
}

// CheckExecIn is CheckExec of box b, as the caller has just read it.
func (s *Service) CheckExecIn(b store.Box, p api.ExecPost) (driver.ExecSpec, error) {
	if err := s.running(b); err != nil {
		return driver.ExecSpec{}, err
	}
	if len(p.Cmd) == 0 {
		return driver.ExecSpec{}, api.Invalid("cmd", "no command given")
	}
	env, err := execEnv(b.Env, p.Env)
	if err != nil {
		return driver.ExecSpec{}, err
	}
	if env, err = s.brokerEnv(b, env); err != nil {
		return driver.ExecSpec{}, err
	}
	if p.WorkDir != "" && !path.IsAbs(p.WorkDir) {
		return driver.ExecSpec{}, api.Invalid("workdir", "workdir %q must be an absolute path", p.WorkDir)
	}
	var timeout time.Duration
	if p.Timeout != "" {
		d, err := api.ParseTTL(p.Timeout)
		if err != nil || d <= 0 {
			return driver.ExecSpec{}, api.Invalid("timeout", "timeout %q must be seconds or a duration such as 90s", p.Timeout)
		}
		timeout = d
	}
	return driver.ExecSpec{Cmd: p.Cmd, Env: env, WorkDir: p.WorkDir, TTY: p.TTY, Rows: p.Rows, Cols: p.Cols, Timeout: timeout}, nil
}

// Exec runs a checked command attached to the given streams.
func (s *Service) Exec(ctx context.Context, name string, spec driver.ExecSpec, streams ExecIO) (int, error) {
	return s.execAs(ctx, s.EngineName(name), spec, streams)
}

// ExecIn is Exec in box b, as the caller has just read it (its engine
// name is b's).
func (s *Service) ExecIn(ctx context.Context, b store.Box, spec driver.ExecSpec, streams ExecIO) (int, error) {
	return s.execAs(ctx, b.Key(), spec, streams)
}

// RunIn runs a command in box b, as the caller has just read it, with the
// streams spec names (the capabilities' way to run something in a box).
func (s *Service) RunIn(ctx context.Context, b store.Box, spec driver.ExecSpec) (int, error) {
	return s.Driver.Exec(ctx, b.Key(), spec)
}

func (s *Service) execAs(ctx context.Context, engine string, spec driver.ExecSpec, streams ExecIO) (int, error) {
	spec.Stdin, spec.Stdout, spec.Stderr, spec.Resize = streams.Stdin, streams.Stdout, streams.Stderr, streams.Resize
	return s.Driver.Exec(ctx, engine, spec)
}

// BoxDocker says how the box's own Docker engine is (see api.Box.Docker);
// "" when the box does not run or cannot be asked.
func (s *Service) BoxDocker(ctx context.Context, b api.Box) string {
	if b.Status != "running" {
		return ""
	}
	// paddock-init writes /run/paddock-docker once the engine waits for
	// its first use, answered or gave up; PADDOCK_DOCKER says whether it
	// was to start one at all.
	return s.probe(ctx, b.Name, `cat /run/paddock-docker 2>/dev/null || { [ "${PADDOCK_DOCKER:-}" = 1 ] && echo starting || echo off; }`)
}

// BoxDesktop says how the desktop of a running box with one is (see
// api.Box.DesktopState); "" when it has none, does not run or cannot be
// asked. It reads what paddock-init wrote of the desktop's start, checked
// against the X server itself.
func (s *Service) BoxDesktop(ctx context.Context, b api.Box) string {
	if b.Status != "running" || !b.Desktop {
		return ""
	}
	// The X server answering is what "up" means: it can answer a moment
	// before paddock-init has written so.
	return s.probe(ctx, b.Name, `s=$(cat /run/paddock-desktop 2>/dev/null || echo starting)
if DISPLAY=`+Display+` xdpyinfo >/dev/null 2>&1; then
  case "$s" in starting) s=up ;; esac
elif [ "$s" = up ]; then s=down; fi
echo "$s"`)
}

// Output runs a short command in a running box and returns what it
// printed on stdout and on stderr, and its exit code.
func (s *Service) Output(ctx context.Context, box string, cmd []string) (stdout, stderr string, code int, err error) {
	spec, err := s.CheckExec(box, api.ExecPost{Cmd: cmd})
	if err != nil {
		return "", "", 0, err
	}
	var out, errb bytes.Buffer
	code, err = s.Exec(ctx, box, spec, ExecIO{Stdout: &out, Stderr: &errb})
	return out.String(), errb.String(), code, err
}

// probe runs a short shell script in a box for what it prints; "" when it
// cannot run, fails, or takes more than a few seconds.
func (s *Service) probe(ctx context.Context, box, script string) string {
	spec, err := s.CheckExec(box, api.ExecPost{Cmd: []string{"sh", "-c", script}})
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var out bytes.Buffer
	code, err := s.Exec(ctx, box, spec, ExecIO{Stdout: &out, Stderr: io.Discard})
	if err != nil || code != 0 {
		return ""
	}
	return strings.TrimSpace(out.String())
}

// AddJob records a started job, refusing it when its box's owner is a
// member with as many running as their quota allows (naming it): the
// count and the record are one step, so that jobs started at once
// cannot pass the quota together.
func (s *Service) AddJob(j store.Job) error {
	b, err := s.Store.GetBox(j.Box)
	if err != nil {
		return err
	}
	q, err := s.quotaOf(s.Store, b.Owner)
	if err != nil {
		return err
	}
	max := 0
	if q.Member {
		max = q.Jobs
	}
	n, err := s.Store.AddJobUnder(j, b.Owner, max)
	if errors.Is(err, store.ErrOverLimit) {
		return q.Over("jobs", n, q.Jobs, "jobs running")
	}
	return err
}

// runningJobs counts the jobs running in the boxes of user id.
func (s *Service) runningJobs(id int64) (int, error) {
	running, err := s.Store.ListJobs("", "running")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, j := range running {
		if jb, err := s.Store.GetBox(j.Box); err == nil && jb.Owner == id {
			n++
		}
	}
	return n, nil
}
