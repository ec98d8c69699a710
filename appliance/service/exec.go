package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
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
	return s.execAs(ctx, s.engineName(name), spec, streams)
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

func (s *Service) jobsDir() string { return filepath.Join(s.Cfg.StateDir, "jobs") }

func (s *Service) jobLog(id string) string { return filepath.Join(s.jobsDir(), id+".log") }

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

// output runs a short command in a running box and returns what it
// printed on stdout and on stderr, and its exit code.
func (s *Service) output(ctx context.Context, box string, cmd []string) (stdout, stderr string, code int, err error) {
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

// addJob records a started job, refusing it when its box's owner is a
// member with as many running as their quota allows (naming it): the
// count and the record are one step, so that jobs started at once
// cannot pass the quota together.
func (s *Service) addJob(j store.Job) error {
	b, err := s.Store.GetBox(j.Box)
	if err != nil {
		return err
	}
	q, err := s.quotaOf(s.Store, b.Owner)
	if err != nil {
		return err
	}
	max := 0
	if q.member {
		max = q.Jobs
	}
	n, err := s.Store.AddJobUnder(j, b.Owner, max)
	if errors.Is(err, store.ErrOverLimit) {
		return q.over("jobs", n, q.Jobs, "jobs running")
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

// ForgetJobLogs removes the logs of jobs that went with a removed box.
func (s *Service) ForgetJobLogs(ids []string) {
	for _, id := range ids {
		os.Remove(s.jobLog(id) + ".1")
		if err := os.Remove(s.jobLog(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.Log.Warn("removing a job log", "job", id, "err", err)
		}
	}
}

// RecoverJobs marks jobs that were running when the daemon last stopped as
// lost: their output stream is gone with the old process.
func (s *Service) RecoverJobs() error {
	jobs, err := s.Store.ListJobs("", "running")
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if err := s.Store.EndJob(j.ID, "lost", nil, s.now()); err != nil {
			return err
		}
	}
	return nil
}

// StartJob runs a command detached; its output is kept in a log on the
// server.
func (s *Service) StartJob(name string, p api.ExecPost) (api.Job, error) {
	return s.startJob(name, p, nil, "")
}

// startJob starts a job; secrets go into its environment only (never into
// the box's declared state, the job record or a snapshot).
func (s *Service) startJob(name string, p api.ExecPost, secrets map[string]string, label string) (job api.Job, err error) {
	p.TTY = false
	// A job is a use of its box until it ends (a sleeping box wakes).
	used, _, err := s.Use(context.Background(), name)
	if err != nil {
		return api.Job{}, err
	}
	defer func() {
		if err != nil {
			used()
		}
	}()
	spec, err := s.CheckExec(name, p)
	if err != nil {
		return api.Job{}, err
	}
	if p.Desktop {
		if _, err := s.DesktopBox(name); err != nil {
			return api.Job{}, err
		}
		spec.Env = append(spec.Env, "DISPLAY="+Display)
	}
	for k, v := range secrets {
		spec.Env = append(spec.Env, k+"="+v)
	}
	if err := os.MkdirAll(s.jobsDir(), 0o700); err != nil {
		return api.Job{}, err
	}
	j := store.Job{ID: "j" + randHex(4), Box: name, Cmd: p.Cmd, State: "running", Started: s.now()}
	if label != "" {
		j.Cmd = append([]string{"(" + label + ")"}, p.Cmd...)
	}
	f, err := newJobLogWriter(s.jobLog(j.ID), s.Cfg.JobLogMaxMiB<<20)
	if err != nil {
		return api.Job{}, err
	}
	if err := s.addJob(j); err != nil {
		f.Close()
		os.Remove(s.jobLog(j.ID))
		return api.Job{}, err
	}
	rj := newRunningJob(p.Stdin)
	done := rj.done
	spec.Signals = rj.signals
	if rj.input != nil {
		spec.Stdin = rj.inputEnd
	}
	s.jobsMu.Lock()
	if s.jobs == nil {
		s.jobs = map[string]*runningJob{}
	}
	s.jobs[j.ID] = rj
	s.jobsMu.Unlock()

	go func() {
		defer close(done)
		defer used()
		w := f
		spec.Stdout, spec.Stderr = w, w
		code, err := s.Driver.Exec(s.Life, s.engineName(name), spec)
		rj.end()
		state, cp := jobEnd(code, err, s.boxStopped(name))
		switch state {
		case "killed":
			fmt.Fprintf(w, "\npaddock: job killed: its box stopped while it ran\n")
		case "lost":
			fmt.Fprintf(w, "\npaddock: job failed: %v\n", err)
		}
		f.Close()
		if err := s.Store.EndJob(j.ID, state, cp, s.now()); err != nil {
			s.Log.Error("recording job end", "job", j.ID, "err", err)
		}
		s.jobsMu.Lock()
		delete(s.jobs, j.ID)
		s.jobsMu.Unlock()
		if b, err := s.Store.GetBox(name); err == nil {
			s.pruneJobLogs(b.Owner)
		}
	}()
	return toAPIJob(j), nil
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
func (s *Service) boxStopped(name string) bool {
	b, err := s.Store.GetBox(name)
	return errors.Is(err, store.ErrNotFound) || (err == nil && b.Desired != "running")
}

func toAPIJob(j store.Job) api.Job {
	return api.Job{ID: j.ID, Box: j.Box, Cmd: j.Cmd, State: j.State, ExitCode: j.ExitCode, Started: j.Started, Ended: j.Ended}
}

// Jobs lists a box's jobs.
func (s *Service) Jobs(name string) ([]api.Job, error) {
	if _, err := s.GetBox(name); err != nil {
		return nil, err
	}
	js, err := s.Store.ListJobs(name, "")
	if err != nil {
		return nil, err
	}
	out := []api.Job{}
	for _, j := range js {
		out = append(out, toAPIJob(j))
	}
	return out, nil
}

// Job returns one job of a box.
func (s *Service) Job(name, id string) (api.Job, error) {
	j, err := s.Store.GetJob(id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && j.Box != name) {
		return api.Job{}, api.NotFound("job", id)
	}
	return toAPIJob(j), err
}

// JobLog copies a job's output to w; with follow, it keeps copying until the
// job ends or ctx is done. flush is called after each chunk.
func (s *Service) JobLog(ctx context.Context, name, id string, follow bool, w io.Writer, flush func()) error {
	if _, err := s.Job(name, id); err != nil {
		return err
	}
	f, err := openJobLog(s.jobLog(id))
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
		s.jobsMu.Lock()
		rj, running := s.jobs[id]
		s.jobsMu.Unlock()
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

// Push extracts a tar stream into dir in a box (created if missing). The
// archive streams, checked entry by entry as it passes, into a staging
// folder on the target's filesystem (dir/.paddock-push-ID, or in dir's
// nearest existing parent while dir does not exist); only once all of it
// arrived and passed is it merged into dir (hard links, no copy) and the
// staging folder removed. An entry with
// "..", an absolute name or a link out of the target refuses the whole
// archive, and dir is as it was. Files belong to the box user.
//
// Where the box's user may write the folder the staging folder goes in,
// paddockd does all of it itself, on the box's files with the box user's
// rights (pushAsUser): no copy through the engine and no process in the
// box, and the staged entries move into place by renames. Elsewhere (a
// target under root's /opt, say) the engine copies the archive in and one
// command in the box merges it as root.
func (s *Service) Push(ctx context.Context, name, dir string, body io.Reader) error {
	used, _, err := s.Use(ctx, name)
	if err != nil {
		return err
	}
	defer used()
	b, err := s.RunningBox(name)
	if err != nil {
		return err
	}
	key := b.Key()
	if !path.IsAbs(dir) {
		return api.Invalid("path", "target %q must be an absolute path in the box", dir)
	}
	dir = path.Clean(dir)
	if uf, ok := s.Driver.(driver.UserFiles); ok {
		if done, err := s.pushAsUser(ctx, uf, name, key, dir, body); done {
			return err
		}
	}
	// The steps in the box run to their end even if the client goes: a
	// step cut off could not be undone.
	stay := context.WithoutCancel(ctx)
	// The staging folder goes in the target or, while the target does not
	// exist, in its nearest folder that does: the same filesystem, and
	// nothing of the target is made before the archive passed. It is the
	// archive's first entry (owned by the box user), so that making it
	// costs no exec; the folder it goes in is found by asking the engine.
	// (A crash's leftovers are listed in the store and go after the next
	// start.)
	t0 := time.Now()
	parent, err := s.pushParent(ctx, name, key, dir)
	if err != nil {
		return err
	}
	t1 := time.Now()
	stageName := pushStagePrefix + randHex(6)
	stage := path.Join(parent, stageName)
	left := store.Leftover{Kind: "box", Target: name, Path: stage}
	if err = s.addLeftover(left); err == nil {
		err = s.checked(body, stageName, func(tar io.Reader) error { return s.Driver.CopyTo(ctx, key, parent, tar) })
	}
	if err == nil {
		t2 := time.Now()
		if err = s.engineMerge(stay, key, stage, dir); err == nil {
			s.doneLeftover(left)
			s.Log.Debug("push", "box", name, "dir", dir, "find_folder", t1.Sub(t0), "stream", t2.Sub(t1), "merge", time.Since(t2))
			return nil
		}
	}
	if rerr := s.rootRun(stay, key, "rm", "-rf", "--", stage); rerr != nil {
		s.Log.Warn("removing a push's staging folder", "box", name, "dir", stage, "err", rerr)
	} else {
		s.doneLeftover(left)
	}
	return err
}

// pushAsUser is Push done by paddockd itself (or, for a box on another
// server, by that server's agent) on the box's files, with the box user's
// rights (driver.UserFiles): the archive is checked entry by entry as it
// is written into the staging folder, which then moves into place by
// renames. Nothing runs in the box and the engine copies nothing. Where
// the box's user may not write the folder the staging folder would go
// in, it is not done (done false, the body unread): the push is the
// engine's, as root. Where it may not write a folder of the target that
// the archive merges into, the staged files are merged as root
// (engineMerge).
func (s *Service) pushAsUser(ctx context.Context, uf driver.UserFiles, name, key, dir string, body io.Reader) (done bool, err error) {
	uid := s.Cfg.BoxUID
	t0 := time.Now()
	parent, notFolder, writable, err := uf.PushFolder(ctx, key, uid, dir)
	switch {
	case notFolder != "":
		return true, api.Invalid("path", "cannot push into %s in box %q: %s is not a folder", dir, name, notFolder)
	case errors.Is(err, errors.ErrUnsupported):
		return false, nil // a driver without it
	case err != nil:
		s.Log.Warn("push by the engine: the box's files could not be opened as its user", "box", name, "dir", dir, "err", err)
		return false, nil
	case !writable:
		s.Log.Debug("push by the engine: the box user may not write there", "box", name, "dir", dir)
		return false, nil
	}
	t1 := time.Now()
	stage := path.Join(parent, pushStagePrefix+randHex(6))
	left := store.Leftover{Kind: "box", Target: name, Path: stage}
	if err := s.addLeftover(left); err != nil {
		return true, err
	}
	// The steps in the box run to their end even if the client goes: a
	// step cut off could not be undone.
	stay := context.WithoutCancel(ctx)
	blocked, staged, err := uf.UnpackAsUser(stay, key, uid, stage, dir, s.Cfg.ArchiveMaxMiB<<20, body)
	t2 := time.Now()
	if err == nil && blocked != "" {
		// A folder of the target is not the box user's to write in: the
		// staged files are merged as root, as the engine's path does.
		s.Log.Debug("push merged by the engine", "box", name, "dir", dir, "blocked", blocked)
		err = s.engineMerge(stay, key, stage, dir)
		staged = err != nil
	}
	if !staged {
		s.doneLeftover(left) // else listed: the next start removes it
	}
	switch {
	case refusedArchive(err):
		return true, api.Invalid("archive", "%v; nothing was written", err)
	case err != nil:
		return true, fmt.Errorf("pushing into %s: %w", dir, err)
	}
	s.Log.Debug("push", "box", name, "dir", dir, "find_folder", t1.Sub(t0), "stream", t2.Sub(t1), "merge", time.Since(t2))
	return true, nil
}

// engineMerge merges a staging folder into dir as root, in one exec: the
// target's missing folders, given to the box user; then GNU cp merges the
// staged entries into it by hard links (folders that exist are merged
// into, files replaced; the target's own owner and mode stay); then the
// staging folder goes.
func (s *Service) engineMerge(ctx context.Context, key, stage, dir string) error {
	const merge = `set -e
stage=$1 dir=$2 uid=$3
if [ ! -e "$dir" ]; then
  top=$dir p=$(dirname -- "$dir")
  while [ ! -e "$p" ]; do top=$p p=$(dirname -- "$p"); done
  mkdir -p -- "$dir"
  chown -R "$uid:$uid" -- "$top"
fi
find "$stage" -mindepth 1 -maxdepth 1 -exec cp -a -l --remove-destination -t "$dir/" -- {} +
rm -rf -- "$stage"`
	if err := s.rootRun(ctx, key, "sh", "-c", merge, "merge", stage, dir, fmt.Sprint(s.Cfg.BoxUID)); err != nil {
		return fmt.Errorf("moving the pushed files into %s: %w", dir, err)
	}
	return nil
}

// rootRun runs cmd in the box as root; a non-zero exit is an error that
// says what the command wrote to stderr.
func (s *Service) rootRun(ctx context.Context, key string, cmd ...string) error {
	var stderr bytes.Buffer
	code, err := s.Driver.Exec(ctx, key, driver.ExecSpec{Cmd: cmd, User: "root", Stderr: &stderr})
	if err == nil && code != 0 {
		err = errors.New(strings.TrimSpace(stderr.String()))
	}
	return err
}

// pushParent is the folder a push into dir stages in: dir, or its
// nearest existing parent, which must be a folder.
func (s *Service) pushParent(ctx context.Context, box, key, dir string) (string, error) {
	st, ok := s.Driver.(driver.PathStater)
	if !ok {
		return "", errors.New("this engine driver cannot tell what a box's files are")
	}
	for p := dir; ; p = path.Dir(p) {
		isDir, err := st.StatPath(ctx, key, p)
		// Not there, or under a file (engines answer that one as a
		// server error): look at the parent, which says which.
		if err != nil && p != "/" {
			continue
		}
		if err != nil {
			return "", err
		}
		if !isDir {
			return "", api.Invalid("path", "cannot push into %s in box %q: %s is not a folder", dir, box, p)
		}
		return p, nil
	}
}

// pushStagePrefix names a push's staging folder in its target.
const pushStagePrefix = ".paddock-push-"

// Pull returns a tar stream of path in a box; the first component of every
// name is path's base name. Where the box's user may read all of it,
// paddockd packs it itself, on the box's files with the box user's rights
// (pullAsUser); elsewhere the engine copies it out, as root.
func (s *Service) Pull(ctx context.Context, name, p string) (rc io.ReadCloser, err error) {
	used, _, err := s.Use(ctx, name)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			used()
		} else {
			rc = &usedReader{ReadCloser: rc, done: used}
		}
	}()
	b, err := s.RunningBox(name)
	if err != nil {
		return nil, err
	}
	if !path.IsAbs(p) {
		return nil, api.Invalid("path", "path %q must be absolute", p)
	}
	if uf, ok := s.Driver.(driver.UserFiles); ok {
		if rc, done, err := s.pullAsUser(ctx, uf, name, b.Key(), path.Clean(p)); done {
			return rc, err
		}
	}
	rc, err = s.Driver.CopyFrom(ctx, b.Key(), path.Clean(p))
	if errors.Is(err, driver.ErrNotFound) {
		return nil, noSuchPath(name, p)
	}
	return rc, err
}

// pullAsUser is Pull packed by paddockd (or the agent of the box's
// server) on the box's files as the box's user (driver.UserFiles). It is
// not done (done false) when the user may not read all of p: those pulls
// are the engine's, as root.
func (s *Service) pullAsUser(ctx context.Context, uf driver.UserFiles, name, key, p string) (rc io.ReadCloser, done bool, err error) {
	uid := s.Cfg.BoxUID
	unreadable, err := uf.Unreadable(ctx, key, uid, p)
	switch {
	case errors.Is(err, driver.ErrNotFound):
		return nil, true, noSuchPath(name, p)
	case errors.Is(err, errors.ErrUnsupported):
		return nil, false, nil // a driver without it
	case err != nil:
		s.Log.Warn("pull by the engine: the box's files could not be opened as its user", "box", name, "path", p, "err", err)
		return nil, false, nil
	case unreadable != "":
		s.Log.Debug("pull by the engine: the box user may not read all of it", "box", name, "path", p, "unreadable", unreadable)
		return nil, false, nil
	}
	rc, err = uf.PackAsUser(ctx, key, uid, p)
	return rc, true, err
}

// noSuchPath is Pull's answer for a path that is not in the box.
func noSuchPath(box, p string) error {
	return &api.Error{Code: api.CodeNotFound, Field: "path", Message: fmt.Sprintf("no such file or directory in box %q: %s", box, p)}
}
