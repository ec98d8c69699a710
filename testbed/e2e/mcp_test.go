package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/paddock-dev/paddock/appliance/api"
)

// mcpSession runs the real 'paddock mcp' as the holder of token, in the
// folder root (the one its push and pull may use), and connects the MCP
// SDK's own client to it.
func mcpSession(t *testing.T, ctx context.Context, listen, token, root string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bins.Paddock, "mcp")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PADDOCK_HOST=http://"+listen, "PADDOCK_TOKEN="+token, "PADDOCK_CONFIG_DIR="+t.TempDir())
	cmd.Stderr = os.Stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool and returns its text (or the image's bytes) and
// whether it is an error result.
func callTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (string, []byte, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: a protocol error: %v", name, err)
	}
	var text strings.Builder
	var img []byte
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			text.WriteString(c.Text)
		case *mcp.ImageContent:
			img = c.Data
		}
	}
	return text.String(), img, res.IsError
}

// mcp TOOL JSON: call TOOL of 'paddock mcp', run in the script's current
// folder as the script's user, with the MCP SDK's own client; print the
// tool's text. "! mcp" expects a tool error.
func cmdMCP(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: mcp TOOL JSON")
	}
	var targs map[string]any
	if err := json.Unmarshal([]byte(args[1]), &targs); err != nil {
		ts.Fatalf("mcp: the arguments: %v", err)
	}
	cmd := exec.Command(bins.Paddock, "mcp")
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = os.Environ()
	for _, v := range []string{"HOME", "PADDOCK_HOST", "PADDOCK_TOKEN", "PADDOCK_CONFIG_DIR"} {
		cmd.Env = append(cmd.Env, v+"="+ts.Getenv(v))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	ts.Check(err)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: args[0], Arguments: targs})
	if err != nil {
		ts.Fatalf("mcp %s: a protocol error: %v", args[0], err)
	}
	for _, c := range res.Content {
		if c, ok := c.(*mcp.TextContent); ok {
			fmt.Fprintln(ts.Stdout(), c.Text)
		}
	}
	if res.IsError != neg {
		ts.Fatalf("mcp %s: tool error %v", args[0], res.IsError)
	}
}

// The MCP server, called by the SDK's own client against a real paddockd:
// every tool does what its CLI command does; another user's box is a tool
// error that says "not found", not a crash.
func TestMCP(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	local := t.TempDir()
	cs := mcpSession(t, ctx, d.Listen, d.Token, local)

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		// What each tool may do, as the agent's client reads it.
		a := tl.Annotations
		readOnly := a != nil && a.ReadOnlyHint
		destructive := a != nil && (a.DestructiveHint == nil || *a.DestructiveHint)
		want := map[string]string{"list_boxes": "reads", "read_file": "reads", "screenshot": "reads", "job_log": "reads", "box_metrics": "reads",
			"create_box": "adds", "start_box": "adds"}[tl.Name]
		if want == "" {
			want = "changes"
		}
		got := map[bool]string{true: "reads", false: map[bool]string{true: "changes", false: "adds"}[destructive]}[readOnly]
		if got != want {
			t.Errorf("tool %s says it %s, want %s", tl.Name, got, want)
		}
	}
	sort.Strings(names)
	want := "box_metrics create_box desktop_actions exec job_log list_boxes prompt pull push read_file remove_box run_code screenshot send_job_input set_ttl signal_job start_box start_job stop_box write_file"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("tools %q, want %q", got, want)
	}
	ok := func(name string, args map[string]any) string {
		t.Helper()
		text, _, isErr := callTool(t, ctx, cs, name, args)
		if isErr {
			t.Fatalf("%s %v: %s", name, args, text)
		}
		return text
	}

	var box struct{ Name, Status string }
	json.Unmarshal([]byte(ok("create_box", map[string]any{"name": "agentbox", "desktop": true})), &box)
	if box.Name != "agentbox" || box.Status != "running" {
		t.Fatalf("create_box: %+v", box)
	}
	if !strings.Contains(ok("list_boxes", map[string]any{}), `"name": "agentbox"`) {
		t.Fatal("list_boxes lacks the box")
	}
	ok("write_file", map[string]any{"box": "agentbox", "path": "/config/w/hello.txt", "content": "hi from mcp\n"})
	var out struct {
		ExitCode       int `json:"exit_code"`
		Stdout, Stderr string
	}
	json.Unmarshal([]byte(ok("exec", map[string]any{"box": "agentbox", "command": "cat /config/w/hello.txt; echo oops >&2; exit 3"})), &out)
	if out.ExitCode != 3 || out.Stdout != "hi from mcp\n" || out.Stderr != "oops\n" {
		t.Fatalf("exec: %+v", out)
	}
	// The timeout is kept by the server: the command and its children end.
	if text, _, isErr := callTool(t, ctx, cs, "exec", map[string]any{"box": "agentbox", "command": "echo begun; sleep 400 & sleep 401", "timeout_seconds": 1}); !isErr || !strings.Contains(text, "ran longer than 1s and was stopped") || !strings.Contains(text, "begun") {
		t.Fatalf("exec past its timeout: error %v, %q", isErr, text)
	}
	json.Unmarshal([]byte(ok("exec", map[string]any{"box": "agentbox", "command": "pgrep -fc '^sleep 40[01]$' || true"})), &out)
	if strings.TrimSpace(out.Stdout) != "0" {
		t.Fatalf("sleeps left running after the timeout: %+v", out)
	}
	if got := ok("read_file", map[string]any{"box": "agentbox", "path": "/config/w/hello.txt"}); got != "hi from mcp\n" {
		t.Fatalf("read_file: %q", got)
	}

	os.MkdirAll(filepath.Join(local, "proj", "src"), 0o755)
	os.WriteFile(filepath.Join(local, "proj", "src", "main.txt"), []byte("pushed"), 0o644)
	ok("push", map[string]any{"box": "agentbox", "local": "proj", "to": "/config/in"})
	json.Unmarshal([]byte(ok("exec", map[string]any{"box": "agentbox", "command": "cat /config/in/src/main.txt"})), &out)
	if out.Stdout != "pushed" {
		t.Fatalf("after push: %+v", out)
	}
	ok("pull", map[string]any{"box": "agentbox", "path": "/config/w", "local": filepath.Join(local, "back")})
	if b, err := os.ReadFile(filepath.Join(local, "back", "w", "hello.txt")); err != nil || string(b) != "hi from mcp\n" {
		t.Fatalf("after pull: %q %v", b, err)
	}
	_, png, isErr := callTool(t, ctx, cs, "screenshot", map[string]any{"box": "agentbox"})
	if isErr || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot: error %v, %d bytes", isErr, len(png))
	}

	// The desktop's mouse and keyboard: the answer as text, its
	// screenshot as an image.
	text, png, isErr := callTool(t, ctx, cs, "desktop_actions", map[string]any{"box": "agentbox", "screenshot": true, "scale": 0.5,
		"actions": []any{map[string]any{"action": "mouse_move", "coordinate": []int{30, 40}}, map[string]any{"action": "cursor_position"}}})
	var acts api.DesktopActionsResult
	if isErr || json.Unmarshal([]byte(text), &acts) != nil || len(acts.Results) != 2 || fmt.Sprint(acts.Results[1].Coordinate) != "[30 40]" ||
		acts.Screenshot != "(image 1 below)" || acts.Width != 640 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("desktop_actions: error %v, %s, %d bytes of image", isErr, text, len(png))
	}

	// The code interpreter: state kept; a figure comes as an image; an
	// error is a tool error with its traceback.
	ok("run_code", map[string]any{"box": "agentbox", "code": "n = 6"})
	var rr api.RunResult
	json.Unmarshal([]byte(ok("run_code", map[string]any{"box": "agentbox", "code": "print(n * 7)"})), &rr)
	if rr.Stdout != "42\n" {
		t.Fatalf("run_code: %+v", rr)
	}
	text, png, isErr = callTool(t, ctx, cs, "run_code", map[string]any{"box": "agentbox", "code": "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()"})
	if isErr || !strings.Contains(text, "(image 1 below)") || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("run_code with a figure: error %v, %s, %d bytes", isErr, text, len(png))
	}
	if text, _, isErr = callTool(t, ctx, cs, "run_code", map[string]any{"box": "agentbox", "code": "1/0"}); !isErr || !strings.Contains(text, "ZeroDivisionError") {
		t.Fatalf("run_code of an error: error %v, %s", isErr, text)
	}

	// Jobs: one that reads its input, one killed.
	var sj api.Job
	json.Unmarshal([]byte(ok("start_job", map[string]any{"box": "agentbox", "command": "read l; echo got:$l", "stdin": true})), &sj)
	ok("send_job_input", map[string]any{"box": "agentbox", "job": sj.ID, "text": "hello\n", "eof": true})
	var jl struct {
		Job api.Job
		Log string
	}
	for deadline := time.Now().Add(30 * time.Second); jl.Job.State != "exited"; time.Sleep(200 * time.Millisecond) {
		json.Unmarshal([]byte(ok("job_log", map[string]any{"box": "agentbox", "job": sj.ID})), &jl)
		if time.Now().After(deadline) {
			t.Fatalf("the job reading its input did not end: %+v", jl)
		}
	}
	if jl.Log != "got:hello\n" {
		t.Fatalf("the job's log: %q", jl.Log)
	}
	json.Unmarshal([]byte(ok("start_job", map[string]any{"box": "agentbox", "command": "sleep 402"})), &sj)
	ok("signal_job", map[string]any{"box": "agentbox", "job": sj.ID, "signal": "KILL"})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		json.Unmarshal([]byte(ok("job_log", map[string]any{"box": "agentbox", "job": sj.ID})), &jl)
		if jl.Job.State == "exited" && jl.Job.ExitCode != nil && *jl.Job.ExitCode == 137 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed job: %+v", jl.Job)
		}
	}

	// What the box uses: its newest sample (every 5 s), then its samples
	// since.
	var use struct {
		Box         string
		MemoryLimit int64 `json:"memory_limit_bytes"`
		Processes   int
	}
	for deadline := time.Now().Add(30 * time.Second); use.Processes == 0; time.Sleep(300 * time.Millisecond) {
		json.Unmarshal([]byte(ok("box_metrics", map[string]any{"box": "agentbox"})), &use)
		if time.Now().After(deadline) {
			t.Fatal("box_metrics never had a sample of the running box")
		}
	}
	if use.Box != "agentbox" || use.MemoryLimit != 2048<<20 {
		t.Fatalf("box_metrics of a small box: %+v", use)
	}
	var hist struct{ Samples []json.RawMessage }
	json.Unmarshal([]byte(ok("box_metrics", map[string]any{"box": "agentbox", "since": "1h"})), &hist)
	if len(hist.Samples) == 0 {
		t.Fatal("box_metrics since 1h: no samples")
	}

	var job struct{ ID string }
	json.Unmarshal([]byte(ok("prompt", map[string]any{"box": "agentbox", "agent": "say", "task": "hello agent"})), &job)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		if strings.Contains(ok("job_log", map[string]any{"box": "agentbox", "job": job.ID}), "said=hello agent") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the prompt's output never came")
		}
	}

	// A member's agent: the owner's box is not found, as a tool error.
	member := mcpSession(t, ctx, d.Listen, memberToken(t, d, "agentmember"), t.TempDir())
	text, _, isErr = callTool(t, ctx, member, "stop_box", map[string]any{"box": "agentbox"})
	if !isErr || !strings.Contains(text, `no box named "agentbox"`) {
		t.Fatalf("a member stopping the owner's box: error %v, %q", isErr, text)
	}
	if strings.Contains(ok2(t, ctx, member, "list_boxes"), "agentbox") {
		t.Fatal("a member's list_boxes shows the owner's box")
	}

	json.Unmarshal([]byte(ok("stop_box", map[string]any{"box": "agentbox"})), &box)
	if box.Status != "stopped" {
		t.Fatalf("stop_box: %+v", box)
	}
	json.Unmarshal([]byte(ok("start_box", map[string]any{"box": "agentbox"})), &box)
	if box.Status != "running" {
		t.Fatalf("start_box: %+v", box)
	}
	var ttl struct {
		TTLSeconds int64 `json:"ttl_seconds"`
	}
	json.Unmarshal([]byte(ok("set_ttl", map[string]any{"box": "agentbox", "ttl": "2h"})), &ttl)
	if b, err := d.Client().Box(ctx, "agentbox"); err != nil || ttl.TTLSeconds != 7200 || b.TTLSeconds != 7200 || b.ExpiresAt == nil {
		t.Fatalf("set_ttl 2h: answered %d s; the box %+v %v", ttl.TTLSeconds, b, err)
	}
	ok("remove_box", map[string]any{"box": "agentbox"})
	if _, err := d.Client().Box(ctx, "agentbox"); err == nil {
		t.Fatal("remove_box left the box")
	}
	// Bad input is a tool error too.
	if _, _, isErr := callTool(t, ctx, cs, "read_file", map[string]any{"box": "nosuch", "path": "/x"}); !isErr {
		t.Fatal("read_file of a missing box succeeded")
	}
}

func ok2(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string) string {
	t.Helper()
	text, _, isErr := callTool(t, ctx, cs, name, map[string]any{})
	if isErr {
		t.Fatalf("%s: %s", name, text)
	}
	return text
}
