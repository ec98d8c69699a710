package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image/png"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
)

// The code interpreter on the real box image: a Jupyter kernel keeps its
// state between runs, a matplotlib figure comes back as a PNG, a data
// frame as HTML, an error with its traceback; an endless loop is
// interrupted at its timeout and the kernel answers on with its state;
// contexts are separate, restarted (state gone), removed, and dead once
// their box stopped.
func TestCodeInterpreter(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := d.Client()
	if _, err := c.CreateBox(ctx, api.BoxPost{Name: "lab"}); err != nil {
		t.Fatal(err)
	}
	run := func(p api.RunPost) api.RunResult {
		t.Helper()
		r, err := c.RunCode(ctx, "lab", p)
		if err != nil {
			t.Fatalf("%q: %v", p.Code, err)
		}
		return r
	}
	text := func(r api.RunResult) string {
		s, _ := r.Result["text/plain"].(string)
		return s
	}
	r := run(api.RunPost{Code: "x = 41"})
	if !r.Started || r.Context != "python" || r.Lang != "python" || r.Error != nil || r.Result != nil {
		t.Fatalf("the first run: %+v", r)
	}
	if r = run(api.RunPost{Code: "x + 1"}); text(r) != "42" || r.Started || r.ExecutionCount != 2 {
		t.Fatalf("state across runs: %+v", r)
	}
	if r = run(api.RunPost{Code: "import sys\nprint('to out')\nprint('to err', file=sys.stderr)"}); r.Stdout != "to out\n" || r.Stderr != "to err\n" || r.Result != nil {
		t.Fatalf("output: %+v", r)
	}

	// A figure, decoded.
	r = run(api.RunPost{Code: "import matplotlib.pyplot as plt\nplt.plot([0, 1, 2], [0, 1, 4])\nplt.show()"})
	if len(r.Display) != 1 {
		t.Fatalf("a figure: %+v", r)
	}
	b64, _ := r.Display[0]["image/png"].(string)
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("the figure is not a PNG: %v", err)
	}
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w < 300 || h < 200 {
		t.Fatalf("the figure is %dx%d", w, h)
	}
	// A data frame: its HTML and its text.
	r = run(api.RunPost{Code: "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})"})
	if html, _ := r.Result["text/html"].(string); !strings.Contains(html, "<table") || !strings.Contains(html, "<th>b</th>") || !strings.Contains(text(r), "a  b") {
		t.Fatalf("a data frame: %+v", r.Result)
	}
	// An error, with its traceback.
	r = run(api.RunPost{Code: "def f():\n    return 1 / 0\nf()"})
	if r.Error == nil || r.Error.Name != "ZeroDivisionError" || !strings.Contains(strings.Join(r.Error.Traceback, "\n"), "return 1 / 0") || strings.Contains(strings.Join(r.Error.Traceback, ""), "\x1b[") {
		t.Fatalf("an error: %+v", r.Error)
	}
	// An endless loop, interrupted; the state stays.
	r = run(api.RunPost{Code: "y = 7\nwhile True:\n    pass", Timeout: "2s"})
	if !r.TimedOut || r.Error == nil || r.Error.Name != "TimeoutError" || !strings.Contains(r.Error.Value, "KeyboardInterrupt") {
		t.Fatalf("past its timeout: %+v", r)
	}
	if r = run(api.RunPost{Code: "x * 100 + y"}); text(r) != "4107" {
		t.Fatalf("after the interrupt: %+v", r)
	}

	// Contexts of their own.
	if cc, err := c.CreateContext(ctx, "lab", api.ContextPost{Name: "scratch"}); err != nil || cc.State != "running" || cc.Kernel != "python3" {
		t.Fatalf("a context: %+v %v", cc, err)
	}
	if r = run(api.RunPost{Code: "x", Context: "scratch"}); r.Error == nil || r.Error.Name != "NameError" {
		t.Fatalf("a new context sees another's x: %+v", r)
	}
	run(api.RunPost{Code: "z = 'kept'", Context: "scratch"})
	cs, err := c.Contexts(ctx, "lab")
	if err != nil || len(cs) != 2 || cs[0].Name != "python" || cs[1].Name != "scratch" || cs[1].State != "running" {
		t.Fatalf("contexts: %+v %v", cs, err)
	}
	if _, err := c.RestartContext(ctx, "lab", "python"); err != nil {
		t.Fatal(err)
	}
	if r = run(api.RunPost{Code: "x"}); r.Error == nil || r.Error.Name != "NameError" {
		t.Fatalf("x after a restart: %+v", r)
	}
	if r = run(api.RunPost{Code: "z", Context: "scratch"}); text(r) != "'kept'" {
		t.Fatalf("another context's restart touched scratch: %+v", r)
	}

	// A stopped box loses its kernels: the default context starts again
	// and says so; a named one waits for its restart.
	if _, err := c.StopBox(ctx, "lab"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartBox(ctx, "lab"); err != nil {
		t.Fatal(err)
	}
	if cs, err = c.Contexts(ctx, "lab"); err != nil || len(cs) != 2 || cs[0].State != "dead" || cs[1].State != "dead" {
		t.Fatalf("contexts after the box stopped: %+v %v", cs, err)
	}
	if r = run(api.RunPost{Code: "1 + 1"}); !r.Started || text(r) != "2" {
		t.Fatalf("the default context after the box stopped: %+v", r)
	}

	for _, bad := range []struct {
		post api.RunPost
		code string
		says string
	}{
		{api.RunPost{Code: "z", Context: "scratch"}, api.CodeConflict, "the kernel of context scratch is not running"},
		{api.RunPost{Code: "1", Context: "nosuch"}, api.CodeNotFound, `no context named "nosuch"`},
		{api.RunPost{Code: "1", Lang: "node"}, api.CodeInvalid, "no Jupyter kernel for node in this box (kernels for: python)"},
		{api.RunPost{Code: "1", Lang: "cobol"}, api.CodeInvalid, `language "cobol"`},
		{api.RunPost{Code: "1", Timeout: "2h"}, api.CodeInvalid, "give up to 1h0m0s"},
		{api.RunPost{Code: "1", Context: "Bad_Name"}, api.CodeInvalid, `context name "Bad_Name"`},
	} {
		_, err := c.RunCode(ctx, "lab", bad.post)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != bad.code || !strings.Contains(ae.Message, bad.says) {
			t.Errorf("%+v: %v, want %s saying %q", bad.post, err, bad.code, bad.says)
		}
	}
	// scratch's kernel: one process while it runs, none once removed.
	kernels := func() string {
		var out bytes.Buffer
		if code, err := c.Exec(ctx, "lab", api.ExecPost{Cmd: []string{"sh", "-c", "pgrep -fc 'paddock-kernel[s]/scratch/' || true"}}, client.ExecIO{Stdout: &out, Stderr: io.Discard}); err != nil || code != 0 {
			t.Fatalf("counting kernels: %d %v", code, err)
		}
		return strings.TrimSpace(out.String())
	}
	if _, err := c.RestartContext(ctx, "lab", "scratch"); err != nil {
		t.Fatal(err)
	}
	if n := kernels(); n != "1" {
		t.Fatalf("%s kernels of scratch after its restart", n)
	}
	if err := c.RemoveContext(ctx, "lab", "scratch"); err != nil {
		t.Fatal(err)
	}
	if cs, err = c.Contexts(ctx, "lab"); err != nil || len(cs) != 1 || cs[0].Name != "python" {
		t.Fatalf("contexts after a removal: %+v %v", cs, err)
	}
	if n := kernels(); n != "0" {
		t.Fatalf("the removed context's kernel still runs (%s)", n)
	}
}
