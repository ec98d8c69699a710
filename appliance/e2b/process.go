package e2b

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/route"
)

// envd's process service over Paddock's jobs: a process is a job (its
// output kept in the job's log as well, its input, its signals; a pty is
// a job in a terminal, its size changed by Update), and
// its pid is the job's id read as a number (a job's id is "j" and eight
// hex digits), so that a pid names one job of one box for as long as
// the job's record lasts.

// pidOf is a job's pid.
func pidOf(job string) uint32 {
	n, _ := strconv.ParseUint(strings.TrimPrefix(job, "j"), 16, 32)
	return uint32(n)
}

// jobOf is the job a pid names.
func jobOf(pid uint32) string { return fmt.Sprintf("j%08x", pid) }

// sandboxOf is the sandbox an envd request is for: the E2b-Sandbox-Id
// header the SDKs send with every request.
func sandboxOf(r *http.Request) string { return r.Header.Get("E2b-Sandbox-Id") }

// envdBox checks the caller's access to an envd request's sandbox, and
// that its port is envd's.
func (e *E2B) envdBox(r *http.Request, need string) (string, error) {
	if p := r.Header.Get("E2b-Sandbox-Port"); p != "" && p != "49983" {
		return "", unsupported("port %s of a sandbox: Paddock serves envd's port (49983) here; a box's own ports are its previews ('paddock preview')", p)
	}
	id := sandboxOf(r)
	audit.From(r.Context()).About(id, "")
	return id, e.box(r.Context(), id, need)
}

// userOf is who an envd request acts as in the box: the SDKs name the
// user in a Basic authorization ("user:" or "root:"). E2B's user is the
// box's user.
func userOf(r *http.Request) (string, error) {
	a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Basic ")
	if !ok {
		return "", nil
	}
	b, err := base64.StdEncoding.DecodeString(a)
	if err != nil {
		return "", api.Invalid("request", "the Authorization header is not Basic base64")
	}
	u, _, _ := strings.Cut(string(b), ":")
	switch u {
	case "", "user", "paddock":
		return "", nil
	case "root":
		return "root", nil
	}
	return "", api.Invalid("request", "user %q: a sandbox has the user \"user\" (the box's user) and \"root\"", u)
}

type processConfig struct {
	Cmd  string            `json:"cmd"`
	Args []string          `json:"args,omitempty"`
	Envs map[string]string `json:"envs,omitempty"`
	Cwd  *string           `json:"cwd,omitempty"`
}

type selector struct {
	Process struct {
		PID *uint32 `json:"pid"`
		Tag *string `json:"tag"`
	} `json:"process"`
}

// job is the job a selector names, running: one that has ended is not
// found, as envd answers for a process that exited.
func (e *E2B) job(box string, s selector) (string, error) {
	if s.Process.Tag != nil {
		return "", unsupported("processes by tag are not supported by Paddock: select them by pid")
	}
	if s.Process.PID == nil {
		return "", api.Invalid("request", "no process: give its pid")
	}
	id := jobOf(*s.Process.PID)
	j, err := e.jobs.Get(box, id)
	if err != nil {
		return "", notFound("process %d not found", *s.Process.PID)
	}
	if j.State != "running" {
		return "", notFound("process %d not found: it has ended (%s)", *s.Process.PID, how(j))
	}
	return id, nil
}

func how(j api.Job) string {
	if j.ExitCode != nil {
		return fmt.Sprintf("%s with code %d", j.State, *j.ExitCode)
	}
	return j.State
}

type empty struct{}

func (e *E2B) processMethods() map[string]route.Handler {
	return map[string]route.Handler{
		"Start":   serverStream(e.start),
		"Connect": serverStream(e.connect),
		"List":    unary(e.list),
		"SendInput": unary(func(r *http.Request, in *struct {
			selector
			Input struct {
				Stdin []byte `json:"stdin"`
				Pty   []byte `json:"pty"`
			} `json:"input"`
		}) (*empty, error) {
			// A terminal's keys go to its input as a command's do.
			return e.input(r, in.selector, append(in.Input.Stdin, in.Input.Pty...), false)
		}),
		"CloseStdin": unary(func(r *http.Request, in *selector) (*empty, error) {
			return e.input(r, *in, nil, true)
		}),
		"SendSignal": unary(e.signal),
		"Update":     unary(e.update),
		"StreamInput": unary(func(r *http.Request, in *json.RawMessage) (*empty, error) {
			return nil, unsupported("streamed input is not supported by Paddock: send input with SendInput")
		}),
	}
}

type startRequest struct {
	Process processConfig `json:"process"`
	Pty     *pty          `json:"pty"`
	Tag     *string       `json:"tag"`
	Stdin   *bool         `json:"stdin"`
}

// pty is envd's terminal: its size.
type pty struct {
	Size struct {
		Cols uint32 `json:"cols"`
		Rows uint32 `json:"rows"`
	} `json:"size"`
}

// size is a terminal's rows and columns, checked.
func (p *pty) size() (rows, cols uint16, err error) {
	r, c := p.Size.Rows, p.Size.Cols
	if r == 0 || c == 0 || r > 1000 || c > 1000 {
		return 0, 0, api.Invalid("pty", "a terminal of %d rows and %d columns: give 1 to 1000 of each", r, c)
	}
	return uint16(r), uint16(c), nil
}

func (e *E2B) start(r *http.Request, in *startRequest, s *stream) error {
	box, err := e.envdBox(r, caller.AccessMember)
	if err != nil {
		return err
	}
	user, err := userOf(r)
	if err != nil {
		return err
	}
	if in.Tag != nil {
		return unsupported("tagged processes are not supported by Paddock: select processes by pid")
	}
	if in.Process.Cmd == "" {
		return api.Invalid("request", "no command: give process.cmd")
	}
	p := api.ExecPost{Cmd: append([]string{in.Process.Cmd}, in.Process.Args...), Env: in.Process.Envs, Stdin: in.Stdin != nil && *in.Stdin}
	if in.Pty != nil {
		if p.Rows, p.Cols, err = in.Pty.size(); err != nil {
			return err
		}
	}
	p.WorkDir = homes[user] // envd's processes start in their user's home
	if in.Process.Cwd != nil && *in.Process.Cwd != "" {
		p.WorkDir = abs(*in.Process.Cwd, user)
	}
	// A shell's pwd says the folder as given (/home/user), not where a
	// link there leads.
	if _, ok := p.Env["PWD"]; !ok {
		p.Env = maps.Clone(p.Env)
		if p.Env == nil {
			p.Env = map[string]string{}
		}
		p.Env["PWD"] = p.WorkDir
	}
	audit.From(r.Context()).Note("argv", p.Cmd)
	j, tap, err := e.jobs.StartTapped(box, p, user, in.Pty != nil)
	if err != nil {
		return err
	}
	audit.From(r.Context()).Note("job", j.ID)
	return e.follow(r, s, box, j.ID, tap, in.Pty != nil)
}

func (e *E2B) connect(r *http.Request, in *selector, s *stream) error {
	box, err := e.envdBox(r, caller.AccessViewer)
	if err != nil {
		return err
	}
	id, err := e.job(box, *in)
	if err != nil {
		return err
	}
	tap, err := e.jobs.Tap(box, id)
	if err != nil {
		return notFound("process %d not found: %v", pidOf(id), err)
	}
	return e.follow(r, s, box, id, tap, e.jobs.Terminal(box, id))
}

// keepaliveEvery is how often a quiet process's stream says it is
// alive, unless the client asks for less (Keepalive-Ping-Interval, in
// seconds).
const keepaliveEvery = 50 * time.Second

// follow streams a job's tap: its start, its output (a terminal's as
// pty), keepalives while it is quiet, and its end. A client that goes
// away leaves the job running, as envd leaves a process.
func (e *E2B) follow(r *http.Request, s *stream, box, id string, tap Tap, tty bool) error {
	defer tap.Close()
	ctx := r.Context()
	every := keepaliveEvery
	if n, err := strconv.Atoi(r.Header.Get("Keepalive-Ping-Interval")); err == nil && n > 0 && time.Duration(n)*time.Second < every {
		every = time.Duration(n) * time.Second
	}
	send := func(ev any) error { return s.send(map[string]any{"event": ev}) }
	if err := send(map[string]any{"start": map[string]uint32{"pid": pidOf(id)}}); err != nil {
		return err
	}
	for {
		wait, cancel := context.WithTimeout(ctx, every)
		data, stderr, err := tap.Next(wait)
		cancel()
		switch {
		case err == nil:
			out := "stdout"
			switch {
			case tty:
				out = "pty"
			case stderr:
				out = "stderr"
			}
			if err := send(map[string]any{"data": map[string][]byte{out: data}}); err != nil {
				return err
			}
			continue
		case errors.Is(err, io.EOF):
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			if err := send(map[string]any{"keepalive": empty{}}); err != nil {
				return err
			}
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			return &api.Error{Code: api.CodeTooMany, Message: err.Error()}
		}
		j, err := e.jobs.Get(box, id)
		if err != nil {
			return err
		}
		end := map[string]any{"exited": j.ExitCode != nil, "status": j.State}
		if j.ExitCode != nil {
			end["exitCode"] = *j.ExitCode
			end["status"] = fmt.Sprintf("exit status %d", *j.ExitCode)
		} else {
			end["exitCode"] = -1
			end["error"] = "the process " + how(j) + ": see 'paddock job log " + box + " " + id + "'"
		}
		return send(map[string]any{"end": end})
	}
}

func (e *E2B) update(r *http.Request, in *struct {
	selector
	Pty *pty `json:"pty"`
}) (*empty, error) {
	box, err := e.envdBox(r, caller.AccessMember)
	if err != nil {
		return nil, err
	}
	if in.Pty == nil {
		return &empty{}, nil
	}
	rows, cols, err := in.Pty.size()
	if err != nil {
		return nil, err
	}
	id, err := e.job(box, in.selector)
	if err != nil {
		return nil, err
	}
	if err := e.jobs.Resize(box, id, rows, cols); err != nil {
		return nil, err
	}
	return &empty{}, nil
}

func (e *E2B) list(r *http.Request, _ *empty) (*map[string]any, error) {
	box, err := e.envdBox(r, caller.AccessViewer)
	if err != nil {
		return nil, err
	}
	js, err := e.jobs.Running(box)
	if err != nil {
		return nil, err
	}
	ps := []map[string]any{}
	for _, j := range js {
		cfg := processConfig{Envs: map[string]string{}}
		if len(j.Cmd) > 0 {
			cfg.Cmd, cfg.Args = j.Cmd[0], j.Cmd[1:]
		}
		ps = append(ps, map[string]any{"config": cfg, "pid": pidOf(j.ID)})
	}
	return &map[string]any{"processes": ps}, nil
}

func (e *E2B) input(r *http.Request, sel selector, data []byte, eof bool) (*empty, error) {
	box, err := e.envdBox(r, caller.AccessMember)
	if err != nil {
		return nil, err
	}
	id, err := e.job(box, sel)
	if err != nil {
		return nil, err
	}
	if _, err := e.jobs.Input(r.Context(), box, id, bytes.NewReader(data), eof); err != nil {
		return nil, err
	}
	return &empty{}, nil
}

// signals are envd's signals by their names and numbers.
var signals = map[string]string{"SIGNAL_SIGTERM": "TERM", "SIGNAL_SIGKILL": "KILL", "15": "TERM", "9": "KILL"}

func (e *E2B) signal(r *http.Request, in *struct {
	selector
	Signal json.RawMessage `json:"signal"`
}) (*empty, error) {
	box, err := e.envdBox(r, caller.AccessMember)
	if err != nil {
		return nil, err
	}
	sig := signals[strings.Trim(string(in.Signal), `"`)]
	if sig == "" {
		return nil, api.Invalid("request", "signal %s: give SIGNAL_SIGTERM or SIGNAL_SIGKILL", in.Signal)
	}
	id, err := e.job(box, in.selector)
	if err != nil {
		return nil, err
	}
	audit.From(r.Context()).Note("signal", sig)
	if _, err := e.jobs.Signal(r.Context(), box, id, sig); err != nil {
		return nil, err
	}
	return &empty{}, nil
}
