// Package mcpserver serves Paddock to coding agents over the Model Context
// Protocol (the official Go SDK): tools to list, create, stop, start and
// remove boxes, run a command, read and write a file, push and pull a
// folder, take a screenshot and start a prompt. push and pull reach only
// the files under one folder of this computer (New's root: the folder
// 'paddock mcp' started in, or --root), through no symlink. Each tool
// says whether it only reads, only adds, or may change or delete (MCP's
// readOnlyHint and destructiveHint). Each tool does what the
// matching CLI command does, through the API as the CLI's logged-in user,
// so a member's agent meets the same "not found" for another user's box.
//
// A refused or failed action is a tool error (the result says why), never
// a protocol error: the agent reads the server's own words. A command that
// exits non-zero is not an error: its exit code is in the result.
package mcpserver

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/archive"
	"github.com/paddock-dev/paddock/appliance/client"
)

// MaxOutput bounds each of a command's stdout and stderr, and a file read,
// in a tool's result.
const MaxOutput = 1 << 20

// Server is an MCP server over one API client.
type Server struct {
	c    *client.Client
	s    *mcp.Server
	root string // the folder push and pull may read and write, symlinks resolved
}

// New makes the server and its tools. push and pull reach only files
// under root on this computer: a box's output reaches the calling agent,
// so a prompt injected through a box must not be able to have the agent
// copy a key out of the user's home, or write over their shell's startup
// file.
func New(c *client.Client, version, root string) (*Server, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("the MCP server's root: %w", err)
	}
	srv := &Server{c: c, s: mcp.NewServer(&mcp.Implementation{Name: "paddock", Version: version}, nil), root: abs}
	srv.tools()
	return srv, nil
}

// Local resolves p, a path on this computer (relative to the root, or
// absolute), to one under the root reached through no symlink: each part
// that exists is a folder or (the last) a file, never a link, and a path
// outside the root is refused. With make, the missing folders are made
// through an os.Root on the root, which cannot reach outside it.
//
// "~" is refused rather than read as a folder of that name: an agent that
// writes it means the user's home, which is outside the root.
func (s *Server) Local(p string, mk bool) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~"+string(filepath.Separator)) {
		return "", fmt.Errorf("%s: ~ is not expanded; give a path relative to %s, the folder this MCP server may read and write (paddock mcp --root DIR)", p, s.root)
	}
	full := p
	if !filepath.IsAbs(full) {
		full = filepath.Join(s.root, p)
	}
	full = filepath.Clean(full)
	rel, err := filepath.Rel(s.root, full)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside %s, the folder this MCP server may read and write (paddock mcp --root DIR)", p, s.root)
	}
	cur := s.root
	if rel != "." {
		for _, part := range strings.Split(rel, string(filepath.Separator)) {
			cur = filepath.Join(cur, part)
			fi, err := os.Lstat(cur)
			if errors.Is(err, fs.ErrNotExist) && mk {
				break
			}
			if err != nil {
				return "", err
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				return "", fmt.Errorf("%s: %s is a symlink, and links are not followed from %s", p, cur, s.root)
			}
		}
	}
	if mk {
		r, err := os.OpenRoot(s.root)
		if err != nil {
			return "", err
		}
		defer r.Close()
		if err := r.MkdirAll(rel, 0o755); err != nil {
			return "", err
		}
	}
	return full, nil
}

// Run serves on t (stdio for 'paddock mcp') until the client goes.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error { return s.s.Run(ctx, t) }

// BoxIn names a box (the tools about one box embed it).
type BoxIn struct {
	Box string `json:"box" jsonschema:"the box's name"`
}

// CreateIn creates a box.
type CreateIn struct {
	Name string `json:"name,omitempty" jsonschema:"the box's name (empty: a generated one)"`
	Type string `json:"type,omitempty" jsonschema:"small, medium or large (default small)"`
	TTL  string `json:"ttl,omitempty" jsonschema:"stop it (with a snapshot) after this long: 1h, 30m"`
	// IdleStop stops it once unused that long; its next use starts it.
	IdleStop string            `json:"idle_stop,omitempty" jsonschema:"stop it (with a snapshot) once unused this long (30m); its next use starts it again; off: never"`
	Policy   string            `json:"policy,omitempty" jsonschema:"egress policy: allow-all, deny-all or a policy's name"`
	Desktop  bool              `json:"desktop,omitempty" jsonschema:"give the box a desktop that can be screenshotted"`
	Labels   map[string]string `json:"labels,omitempty" jsonschema:"labels of the box, to find it by later (team=web): lower-case keys"`
}

// ListIn picks boxes by their labels.
type ListIn struct {
	Labels map[string]string `json:"labels,omitempty" jsonschema:"only the boxes with all these labels"`
}

// TTLIn sets a box's time to live.
type TTLIn struct {
	BoxIn
	TTL string `json:"ttl" jsonschema:"how long from now: seconds or a duration (3h, 90m); empty: no limit"`
}

// ExecIn runs a command.
type ExecIn struct {
	BoxIn
	Command        string `json:"command" jsonschema:"a bash command line, run with bash -lc as the box user"`
	Workdir        string `json:"workdir,omitempty" jsonschema:"absolute folder to run it in"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"give up after this long (default 600)"`
}

// ExecOut is a command's outcome.
type ExecOut struct {
	ExitCode  int    `json:"exit_code"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated,omitempty"`
}

// FileIn names a file in a box.
type FileIn struct {
	BoxIn
	Path string `json:"path" jsonschema:"an absolute path in the box"`
}

// WriteIn writes a file.
type WriteIn struct {
	BoxIn
	Path    string `json:"path" jsonschema:"an absolute path in the box; its folder is made if missing"`
	Content string `json:"content" jsonschema:"the file's text"`
}

// PushIn copies a local folder or file into a box.
type PushIn struct {
	BoxIn
	Local string `json:"local" jsonschema:"a file or folder on this computer, under the folder the MCP server was started in (relative to it, or absolute)"`
	To    string `json:"to" jsonschema:"the absolute folder in the box that the file, or the folder's contents, go into"`
}

// PullIn copies a folder or file out of a box.
type PullIn struct {
	BoxIn
	Path  string `json:"path" jsonschema:"an absolute path in the box"`
	Local string `json:"local" jsonschema:"the folder on this computer it goes into (made if missing), under the folder the MCP server was started in"`
}

// PromptIn hands an agent a task.
type PromptIn struct {
	BoxIn
	Task  string `json:"task" jsonschema:"what the agent is to do"`
	Agent string `json:"agent,omitempty" jsonschema:"which agent (default: the server's)"`
}

// MetricsIn asks for a box's use.
type MetricsIn struct {
	BoxIn
	Since string `json:"since,omitempty" jsonschema:"with history: its samples from this long ago (90m, 1h, 2d); without, the newest only"`
}

// JobIn names a job.
type JobIn struct {
	BoxIn
	Job string `json:"job" jsonschema:"the job's id"`
}

// DesktopIn is one step on a box's desktop.
type DesktopIn struct {
	Box        string              `json:"box" jsonschema:"the box's name (it needs a desktop)"`
	Actions    []api.DesktopAction `json:"actions" jsonschema:"run in order; the computer-use tool's actions (key, type, mouse_move, left_click, right_click, middle_click, double_click, triple_click, left_click_drag, left_mouse_down, left_mouse_up, scroll, hold_key, wait, cursor_position, screenshot, zoom) with its argument names, and windows, launch (target: an application, URL or file), wait_idle"`
	Screenshot bool                `json:"screenshot,omitempty" jsonschema:"answer with a screenshot once the actions are done"`
	Scale      float64             `json:"scale,omitempty" jsonschema:"shrink screenshots (0.5: half); coordinates are then in the shrunk pixels"`
}

// RunIn runs code in a box's interpreter.
type RunIn struct {
	BoxIn
	Code           string `json:"code" jsonschema:"the code to run"`
	Lang           string `json:"lang,omitempty" jsonschema:"python (default), node or bash"`
	Context        string `json:"context,omitempty" jsonschema:"the context (kernel) to run in; default: the language's own"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"interrupt it after this long (default 60); the kernel keeps its state"`
}

// StartJobIn starts a background job.
type StartJobIn struct {
	BoxIn
	Command string `json:"command" jsonschema:"a bash command line, run with bash -lc as the box user"`
	Workdir string `json:"workdir,omitempty" jsonschema:"absolute folder to run it in"`
	Stdin   bool   `json:"stdin,omitempty" jsonschema:"keep its input open for send_job_input"`
}

// SignalIn signals a job.
type SignalIn struct {
	JobIn
	Signal string `json:"signal,omitempty" jsonschema:"TERM (default), INT, KILL, HUP, QUIT, USR1 or USR2"`
}

// InputIn sends a job input.
type InputIn struct {
	JobIn
	Text string `json:"text" jsonschema:"what to send, as is (add a newline for a line)"`
	EOF  bool   `json:"eof,omitempty" jsonschema:"end the job's input after it"`
}

func asText(v any) *mcp.CallToolResult {
	b, _ := json.MarshalIndent(v, "", "  ")
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// effect is what a tool does to its world, for the agent's client (MCP's
// hints): reads only, adds only, or may change or delete what is there.
type effect int

const (
	readOnly effect = iota
	additive
	destructive
)

func (e effect) annotations() *mcp.ToolAnnotations {
	d := e == destructive
	return &mcp.ToolAnnotations{ReadOnlyHint: e == readOnly, DestructiveHint: &d}
}

func tool[In any](s *Server, name, desc string, e effect, fn func(context.Context, In) (*mcp.CallToolResult, error)) {
	t := &mcp.Tool{Name: name, Description: desc, Annotations: e.annotations()}
	mcp.AddTool(s.s, t, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		r, err := fn(ctx, in)
		return r, nil, err
	})
}

func (s *Server) tools() {
	c := s.c
	tool(s, "list_boxes", "List the boxes you can use: name, state, type, policy, TTL, labels; with labels, those that have them all.", readOnly, func(ctx context.Context, in ListIn) (*mcp.CallToolResult, error) {
		bs, err := c.BoxesLabelled(ctx, in.Labels)
		return asText(bs), err
	})
	tool(s, "create_box", "Create a box (a Linux computer of your own) and wait until it runs. Remember its name.", additive, func(ctx context.Context, in CreateIn) (*mcp.CallToolResult, error) {
		p := api.BoxPost{Name: in.Name, Type: in.Type, TTL: in.TTL, IdleStop: in.IdleStop, Policy: in.Policy, Labels: in.Labels}
		if in.Desktop {
			p.Desktop = &in.Desktop
		}
		b, err := c.CreateBox(ctx, p)
		return asText(b), err
	})
	// A shorter TTL can stop a box soon: as stop_box, it changes what is there.
	tool(s, "set_ttl", "Set how long a box runs before it stops with a snapshot, counted from now (3h, 90m); empty: no limit.", destructive, func(ctx context.Context, in TTLIn) (*mcp.CallToolResult, error) {
		b, err := c.SetTTL(ctx, in.Box, in.TTL)
		return asText(b), err
	})
	tool(s, "stop_box", "Snapshot a box's files, then stop it. Only when the user asked.", destructive, func(ctx context.Context, in BoxIn) (*mcp.CallToolResult, error) {
		b, err := c.StopBox(ctx, in.Box)
		return asText(b), err
	})
	tool(s, "start_box", "Start a stopped box.", additive, func(ctx context.Context, in BoxIn) (*mcp.CallToolResult, error) {
		b, err := c.StartBox(ctx, in.Box)
		return asText(b), err
	})
	tool(s, "remove_box", "Remove a box and its files for good (drives stay). Only when the user asked; pull results first.", destructive, func(ctx context.Context, in BoxIn) (*mcp.CallToolResult, error) {
		if err := c.RemoveBox(ctx, in.Box); err != nil {
			return nil, err
		}
		return asText(map[string]string{"removed": in.Box}), nil
	})
	tool(s, "exec", "Run a bash command line in a box and return its exit code, stdout and stderr (each cut at 1 MiB).", destructive, func(ctx context.Context, in ExecIn) (*mcp.CallToolResult, error) {
		timeout := 600 * time.Second
		if in.TimeoutSeconds > 0 {
			timeout = time.Duration(in.TimeoutSeconds) * time.Second
		}
		// The server ends the command (and what it started) at the
		// timeout; the client waits a little longer for its answer.
		ctx, cancel := context.WithTimeout(ctx, timeout+15*time.Second)
		defer cancel()
		stdout, stderr := &capped{max: MaxOutput}, &capped{max: MaxOutput}
		post := api.ExecPost{Cmd: []string{"bash", "-lc", in.Command}, WorkDir: in.Workdir, Timeout: fmt.Sprint(int64(timeout / time.Second))}
		code, err := c.Exec(ctx, in.Box, post, client.ExecIO{Stdout: stdout, Stderr: stderr})
		if err != nil {
			return nil, err
		}
		if code == 124 {
			return nil, fmt.Errorf("the command ran longer than %s and was stopped (output so far: %q)", timeout, stdout.b.String())
		}
		return asText(ExecOut{ExitCode: code, Stdout: stdout.b.String(), Stderr: stderr.b.String(), Truncated: stdout.over || stderr.over}), nil
	})
	tool(s, "read_file", "Read a file of a box (at most 1 MiB); text as is, anything else as base64.", readOnly, func(ctx context.Context, in FileIn) (*mcp.CallToolResult, error) {
		rc, err := c.Pull(ctx, in.Box, in.Path)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		tr := tar.NewReader(rc)
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", in.Path, err)
		}
		if h.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("%s is not a regular file", in.Path)
		}
		if h.Size > MaxOutput {
			return nil, fmt.Errorf("%s is %d bytes, more than the %d a read returns: pull it instead", in.Path, h.Size, MaxOutput)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		if utf8.Valid(b) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		}
		return asText(map[string]any{"base64": base64.StdEncoding.EncodeToString(b), "size": len(b)}), nil
	})
	tool(s, "write_file", "Write a text file in a box (replacing it); its folder is made if missing.", destructive, func(ctx context.Context, in WriteIn) (*mcp.CallToolResult, error) {
		if !path.IsAbs(in.Path) {
			return nil, fmt.Errorf("path %q must be absolute", in.Path)
		}
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		tw.WriteHeader(&tar.Header{Name: path.Base(in.Path), Mode: 0o644, Size: int64(len(in.Content)), Typeflag: tar.TypeReg, ModTime: time.Now()})
		tw.Write([]byte(in.Content))
		tw.Close()
		if err := c.Push(ctx, in.Box, path.Dir(in.Path), &buf); err != nil {
			return nil, err
		}
		return asText(map[string]any{"written": in.Path, "bytes": len(in.Content)}), nil
	})
	tool(s, "push", "Copy a file, or the contents of a folder, from this computer into a folder of a box (as paddock push does: what the folder's .paddockignore, or else its .gitignore files, say is left out).", destructive, func(ctx context.Context, in PushIn) (*mcp.CallToolResult, error) {
		local, err := s.Local(in.Local, false)
		if err != nil {
			return nil, err
		}
		push := archive.StartPush(local, true, nil)
		err = c.Push(ctx, in.Box, in.To, push)
		ig, st, _ := push.End(err)
		if err != nil {
			return nil, err
		}
		out := map[string]any{"pushed": in.Local, "to": in.To, "files": st.Files, "bytes": st.Bytes}
		if ig != nil && len(ig.Skipped) > 0 {
			out["left_out"], out["left_out_by"] = ig.Skipped, ig.Source
		}
		return asText(out), nil
	})
	tool(s, "pull", "Copy a file or folder of a box into a folder on this computer; checked whole before anything is written.", destructive, func(ctx context.Context, in PullIn) (*mcp.CallToolResult, error) {
		// Refused before anything is asked of the box.
		if _, err := s.Local(in.Local, false); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		rc, err := c.Pull(ctx, in.Box, in.Path)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		sp, err := archive.Spool(rc, "", 0, nil)
		if err != nil {
			return nil, fmt.Errorf("refusing what the box sent: %v; nothing was written", err)
		}
		defer sp.Close()
		local, err := s.Local(in.Local, true)
		if err != nil {
			return nil, err
		}
		if err := archive.Unpack(sp, local, 0); err != nil {
			return nil, err
		}
		return asText(map[string]string{"pulled": in.Path, "into": filepath.Join(local, path.Base(path.Clean(in.Path)))}), nil
	})
	tool(s, "screenshot", "A PNG of a box's desktop now (the box needs a desktop).", readOnly, func(ctx context.Context, in BoxIn) (*mcp.CallToolResult, error) {
		png, err := c.Screenshot(ctx, in.Box)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: png, MIMEType: "image/png"}}}, nil
	})
	tool(s, "prompt", "Hand a coding agent in a box a task; it runs in the background as a job (read it with job_log).", destructive, func(ctx context.Context, in PromptIn) (*mcp.CallToolResult, error) {
		j, err := c.Prompt(ctx, in.Box, api.PromptPost{Agent: in.Agent, Task: in.Task})
		return asText(j), err
	})
	tool(s, "box_metrics", "What a running box uses now: CPU (percent of one CPU), memory and its bound, disk and its bound, network bytes and rates, processes; with since, its samples over that time. Use it to find why a build is slow or was killed (out of memory: list_boxes shows oom_kills).", readOnly, func(ctx context.Context, in MetricsIn) (*mcp.CallToolResult, error) {
		since := in.Since
		if since == "" {
			since = "1m"
		}
		m, err := c.BoxMetrics(ctx, in.Box, since)
		if err != nil {
			return nil, err
		}
		if in.Since == "" {
			if len(m.Samples) == 0 {
				return asText(map[string]string{"box": in.Box, "note": "no sample in the last minute: the box is not running"}), nil
			}
			return asText(m.Samples[len(m.Samples)-1]), nil
		}
		return asText(m), nil
	})
	tool(s, "desktop_actions", "Use a box's desktop: mouse and keyboard actions, run in order, answered with each one's result and the screenshot asked for. Coordinates are the screenshot's pixels.", destructive, func(ctx context.Context, in DesktopIn) (*mcp.CallToolResult, error) {
		r, err := c.DesktopActions(ctx, in.Box, api.DesktopActionsPost{Actions: in.Actions, Screenshot: in.Screenshot, Scale: in.Scale})
		if err != nil {
			return nil, err
		}
		// The images go as images; the rest as text.
		var imgs images
		for i := range r.Results {
			if err := imgs.take(&r.Results[i].Image); err != nil {
				return nil, err
			}
		}
		if err := imgs.take(&r.Screenshot); err != nil {
			return nil, err
		}
		res := asText(r)
		res.Content = append(res.Content, imgs...)
		return res, nil
	})
	tool(s, "run_code", "Run code in a box's code interpreter: a Jupyter kernel that keeps its state between calls (variables, imports). Returns stdout, stderr, the last expression's value, what it displayed and its error with the traceback; figures come as images.", destructive, func(ctx context.Context, in RunIn) (*mcp.CallToolResult, error) {
		p := api.RunPost{Code: in.Code, Lang: in.Lang, Context: in.Context}
		if in.TimeoutSeconds > 0 {
			p.Timeout = fmt.Sprint(in.TimeoutSeconds)
		}
		r, err := c.RunCode(ctx, in.Box, p)
		if err != nil {
			return nil, err
		}
		var imgs images
		for _, d := range append(append([]map[string]any{}, r.Display...), r.Result) {
			if png, ok := d["image/png"].(string); ok {
				if err := imgs.take(&png); err != nil {
					return nil, err
				}
				d["image/png"] = png
			}
		}
		res := asText(r)
		res.Content = append(res.Content, imgs...)
		res.IsError = r.Error != nil
		return res, nil
	})
	tool(s, "start_job", "Start a bash command line in a box as a background job (a server, a long build) and return its id at once; read it with job_log, stop it with signal_job.", destructive, func(ctx context.Context, in StartJobIn) (*mcp.CallToolResult, error) {
		j, err := c.StartJob(ctx, in.Box, api.ExecPost{Cmd: []string{"bash", "-lc", in.Command}, WorkDir: in.Workdir, Stdin: in.Stdin})
		if err != nil {
			return nil, err
		}
		return asText(j), nil
	})
	tool(s, "signal_job", "Send a signal to a running job's process group: TERM (the default) asks it to end, INT is Ctrl-C, KILL ends one that ignores them.", destructive, func(ctx context.Context, in SignalIn) (*mcp.CallToolResult, error) {
		j, err := c.SignalJob(ctx, in.Box, in.Job, in.Signal)
		if err != nil {
			return nil, err
		}
		return asText(j), nil
	})
	tool(s, "send_job_input", "Send text to the input of a running job started with stdin (an interactive program, a REPL); with eof, its input ends after it.", destructive, func(ctx context.Context, in InputIn) (*mcp.CallToolResult, error) {
		r, err := c.JobInput(ctx, in.Box, in.Job, strings.NewReader(in.Text), in.EOF)
		if err != nil {
			return nil, err
		}
		return asText(r), nil
	})
	tool(s, "job_log", "A background job's state and output so far (the last 1 MiB).", readOnly, func(ctx context.Context, in JobIn) (*mcp.CallToolResult, error) {
		j, err := c.Job(ctx, in.Box, in.Job)
		if err != nil {
			return nil, err
		}
		out := &tail{max: MaxOutput}
		if err := c.JobLog(ctx, in.Box, in.Job, false, out); err != nil {
			return nil, err
		}
		return asText(map[string]any{"job": j, "log": string(out.b)}), nil
	})
}

// images are a tool's PNGs, taken out of its text answer (where each
// becomes "(image N below)") to follow it as images.
type images []mcp.Content

// take moves the base64 PNG in *b64 (if any) into the images.
func (m *images) take(b64 *string) error {
	if *b64 == "" {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(*b64)
	if err != nil {
		return err
	}
	*m = append(*m, &mcp.ImageContent{Data: b, MIMEType: "image/png"})
	*b64 = fmt.Sprintf("(image %d below)", len(*m))
	return nil
}

// capped keeps the first max bytes written.
type capped struct {
	b    bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.b.Len(); room < len(p) {
		c.over = true
		if room > 0 {
			c.b.Write(p[:room])
		}
		return len(p), nil
	}
	return c.b.Write(p)
}

// tail keeps the last max bytes written.
type tail struct {
	b   []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}
