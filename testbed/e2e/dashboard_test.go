package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/coder/websocket"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// browserSession is one headless Chromium with its own profile.
type browserSession struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu      sync.Mutex
	console []string
}

func newBrowser(t *testing.T, base string, timeout time.Duration, more ...chromedp.ExecAllocatorOption) *browserSession {
	t.Helper()
	exe := chromium(t)
	opts := append(append(chromedp.DefaultExecAllocatorOptions[:], more...),
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 800))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	bctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancel)
	// A bound for the whole browser session, not a measurement.
	bctx, cancel = context.WithTimeout(bctx, timeout)
	t.Cleanup(cancel)
	b := &browserSession{t: t, ctx: bctx, base: base}
	chromedp.Listen(bctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			for _, a := range e.Args {
				b.console = append(b.console, string(e.Type)+": "+string(a.Value)+" "+a.Description)
			}
		case *network.EventLoadingFailed:
			b.console = append(b.console, "load failed: "+e.ErrorText)
		case *runtime.EventExceptionThrown:
			b.console = append(b.console, "exception: "+e.ExceptionDetails.Text+" "+fmt.Sprint(e.ExceptionDetails.Exception.Description))
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			b.mu.Lock()
			t.Logf("browser console:\n%s", strings.Join(b.console, "\n"))
			b.mu.Unlock()
			if png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)); err == nil {
				p := filepath.Join(os.TempDir(), "paddock-dashboard-failure.png")
				os.WriteFile(p, png, 0o644)
				t.Logf("the page at the failure: %s", p)
			}
		}
	})
	return b
}

// failOnce makes the browser's first request for a path ending in suffix
// fail, as a browser fails the requests in flight when its network changes
// (boxes starting on the machine change it); later requests go through.
// The channel closes when the failure has been served.
func (b *browserSession) failOnce(suffix string) <-chan struct{} {
	b.t.Helper()
	paused := make(chan fetch.RequestID, 16)
	chromedp.Listen(b.ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- e.RequestID
		}
	})
	b.do() // the browser runs before its target is told what to intercept
	if _, err := chromedp.Call(b.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*" + suffix}}}); err != nil {
		b.t.Fatal(err)
	}
	failed := make(chan struct{})
	go func() {
		for first := true; ; first = false {
			select {
			case <-b.ctx.Done():
				return
			case id := <-paused:
				if first {
					chromedp.Call(b.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: id, ErrorReason: network.ErrorReasonConnectionReset})
					close(failed)
				} else {
					chromedp.Call(b.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
				}
			}
		}
	}()
	return failed
}

// served says whether failOnce's failure happened.
func served(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (b *browserSession) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatal(err)
	}
}

// poll waits until a JavaScript expression is truthy and returns it.
func poll[T any](b *browserSession, what, js string, timeout time.Duration) T {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, err := chromedp.Run(b.ctx, chromedp.Poll[T](js, chromedp.WithPollingTimeout(time.Until(deadline)), chromedp.WithPollingInterval(100*time.Millisecond)))
		// A navigation under way destroys the page's context: poll the next page.
		if err != nil && time.Now().Before(deadline) && (strings.Contains(err.Error(), "context with specified id") || strings.Contains(err.Error(), "context was destroyed") || strings.Contains(err.Error(), "navigated or closed")) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err != nil {
			b.t.Fatalf("waiting for %s: %v", what, err)
		}
		return v
	}
}

func eval[T any](b *browserSession, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js, chromedp.EvalAsValue, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// typeKeys types into the focused element as a keyboard does, the way
// Puppeteer's keyboard does: one keyDown with the key's text (which makes
// the browser's keydown, keypress and input events) and one keyUp per key.
// (chromedp's SendKeys adds a separate char event, which a terminal reads
// as a second key press.)
func (b *browserSession) typeKeys(text string) {
	b.t.Helper()
	for _, r := range text {
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: string(r), Text: string(r), UnmodifiedText: string(r)}
		if k, ok := kb.Keys[r]; ok {
			down.Code, down.WindowsVirtualKeyCode, down.NativeVirtualKeyCode = k.Code, k.Windows, k.Native
			down.Key = k.Key
		}
		up := down
		up.Type, up.Text, up.UnmodifiedText = input.DispatchKeyEventTypeKeyUp, "", ""
		for _, ev := range []input.DispatchKeyEventParams{down, up} {
			if _, err := chromedp.Call(b.ctx, input.DispatchKeyEvent, ev); err != nil {
				b.t.Fatal(err)
			}
		}
	}
}

// shots saves the page at the two sizes the dashboard is made for.
func (b *browserSession) shots(dir, name string) {
	b.t.Helper()
	for _, sz := range [][2]int64{{1280, 800}, {390, 844}} {
		b.do(chromedp.EmulateViewport(sz[0], sz[1]), chromedp.Sleep(300*time.Millisecond))
		png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			b.t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%dx%d.png", name, sz[0], sz[1])), png, 0o644)
	}
	b.do(chromedp.EmulateViewport(1280, 800))
}

// openMenu opens a box's row menu in the list with its More button, as
// often as it takes (an event that redraws the list may come between).
func (b *browserSession) openMenu(box string) {
	b.t.Helper()
	row := `document.querySelector('#boxes tr[data-box="` + box + `"]')`
	poll[bool](b, "the row menu of "+box, `(() => {
		const r = `+row+`;
		if (!r) return false;
		if (r.querySelector(".row-menu").matches(":popover-open")) return true;
		r.querySelector('button[data-action="more"]').click();
		return false;
	})()`, 10*time.Second)
}

// signInURL runs the real CLI's 'paddock dashboard' with a token.
func signInURL(t *testing.T, d *harness.Daemon, token string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bins.Paddock, append([]string{"dashboard", "--no-open"}, args...)...)
	cmd.Env = append(os.Environ(), "PADDOCK_HOST=http://"+d.Listen, "PADDOCK_TOKEN="+token, "PADDOCK_CONFIG_DIR="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("paddock dashboard: %v\n%s", err, stderr.String())
	}
	u := strings.TrimSpace(string(out))
	if !strings.HasPrefix(u, "http://"+d.Listen+"/signin/") {
		t.Fatalf("paddock dashboard printed %q", u)
	}
	return u
}

// The dashboard in a real browser against a real paddockd and real boxes:
// every step clicks and types as a person does.
func TestDashboard(t *testing.T) {
	d := newDaemon(t, t.TempDir())
	// Large boxes with 256 MiB: one is killed for its memory below.
	d.Env = append(d.Env, "PADDOCK_TYPES__LARGE__MEMORY_MIB=256", "PADDOCK_TYPES__LARGE__CPUS=1")
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Cleanup)
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(d.LogPath())
			t.Logf("paddockd log:\n%s", b)
		}
	})
	base := "http://" + d.Listen
	ctx := context.Background()
	shotDir, err := os.MkdirTemp("", "paddock-dashboard-shots-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("page screenshots: %s", shotDir)
	b := newBrowser(t, base, 15*time.Minute)

	b.do(chromedp.Navigate(base + "/login"))
	b.shots(shotDir, "login")
	// The icon browsers ask for, whatever the pages say.
	if resp, err := http.Get(base + "/favicon.ico"); err != nil {
		t.Fatal(err)
	} else {
		icon, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" || !bytes.HasPrefix(icon, []byte("<svg")) {
			t.Fatalf("/favicon.ico: %d %s %.40q", resp.StatusCode, resp.Header.Get("Content-Type"), icon)
		}
	}

	// Sign in with the link 'paddock dashboard' prints; it works once.
	link := signInURL(t, d, d.Token)
	b.do(chromedp.Navigate(link))
	// The link's page names the account; only its button signs in.
	if who := eval[string](b, `document.querySelector("#account")?.textContent || ""`); !strings.Contains(who, "Sign in to this Paddock server as ") {
		t.Fatalf("the sign-in link's page: %q", who)
	}
	b.shots(shotDir, "signin")
	b.do(chromedp.Click(chromedp.CSS("#signin")))
	poll[bool](b, "the boxes page", `document.body.dataset.page === "boxes" && location.pathname === "/"`, 10*time.Second)
	b.do(chromedp.Navigate(link))
	if msg := eval[string](b, `document.querySelector("#error")?.textContent || ""`); !strings.Contains(msg, "used or has expired") {
		t.Fatalf("a used sign-in link: %q", msg)
	}
	b.do(chromedp.Navigate(base + "/"))
	poll[bool](b, "the empty list", `!!document.querySelector("#boxes tr.empty") && !document.querySelector("#boxes tr.empty").textContent.includes("Loading")`, 10*time.Second)
	b.shots(shotDir, "boxes-empty")

	// The CLI's 'paddock new' in the same run, for the figure.
	t0 := time.Now()
	cli := exec.Command(bins.Paddock, "new", "--name", "fromcli")
	cli.Env = append(os.Environ(), d.CLIEnv()...)
	cli.Env = append(cli.Env, "PADDOCK_CONFIG_DIR="+t.TempDir())
	if out, err := cli.CombinedOutput(); err != nil {
		t.Fatalf("paddock new: %v\n%s", err, out)
	}
	cliNew := time.Since(t0)
	poll[bool](b, "the CLI's box in the list, without a reload", `!!document.querySelector('#boxes tr[data-box="fromcli"]')`, 10*time.Second)

	// A box stopped for its disk says why in the list (its note), not only
	// in 'paddock show'.
	if _, err := d.Client().CreateBox(ctx, api.BoxPost{Name: "full", Type: "medium"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client().Exec(ctx, "full", api.ExecPost{Cmd: []string{"sudo", "-n", "sh", "-c", "head -c 80000000 /dev/urandom > /var/lib/docker/fill"}}, clientIO()); err != nil {
		t.Fatal(err)
	}
	poll[bool](b, "the disk note in the list", `(document.querySelector('#boxes tr[data-box="full"] .status')?.textContent || "").includes("past types.medium.disk_gib = 0.05")`, 60*time.Second)

	// A box its idle stop put to sleep says so in the list, without a
	// reload.
	if _, err := d.Client().CreateBox(ctx, api.BoxPost{Name: "nap", IdleStop: "2s"}); err != nil {
		t.Fatal(err)
	}
	// (once: its note's times in the browser's time, not the server's UTC)
	poll[bool](b, "the sleeping box in the list", `(() => {
		const s = document.querySelector('#boxes tr[data-box="nap"] .status')?.textContent || "";
		return s.includes("asleep: its next use starts it") && s.includes("unused for 2s") && !s.includes("starts it again") && !/\dT\d\d:\d\d:\d\dZ/.test(s);
	})()`, 60*time.Second)
	b.shots(shotDir, "boxes-asleep")

	// A box whose process the kernel killed for its memory bound says so
	// in the list, without a reload; a running box's Use cell has its
	// newest sample (every metrics_interval, 5 s).
	if _, err := d.Client().CreateBox(ctx, api.BoxPost{Name: "tight", Type: "large"}); err != nil {
		t.Fatal(err)
	}
	if code, err := d.Client().Exec(ctx, "tight", api.ExecPost{Cmd: []string{"python3", "-c", `b = b"x" * (400 << 20)`}}, clientIO()); err != nil || code != 137 {
		t.Fatalf("400 MiB written in a box of 256: code %d, %v", code, err)
	}
	poll[bool](b, "the OOM kill in the list", `(document.querySelector('#boxes tr[data-box="tight"] .status .oom')?.textContent || "").startsWith("killed: out of memory at ")`, 30*time.Second)
	poll[bool](b, "the box's use in the list", `/^\d+% CPU · [\d.]+ (KB|MB)$/.test(document.querySelector('#boxes td[data-use="tight"]')?.textContent || "")`, 30*time.Second)
	b.shots(shotDir, "boxes-oom")
	// What it sent through the credential broker, on its page.
	if err := d.Client().SetSecret(ctx, "MODEL_KEY", []byte("sk-dashboard"), false, &api.SecretBroker{Hosts: []string{"api.model.test"}, Header: "x-api-key"}); err != nil {
		t.Fatal(err)
	}
	if code, err := d.Client().Exec(ctx, "tight", api.ExecPost{Cmd: []string{"sh", "-c", `curl -sSf -d hi -H "x-api-key: $MODEL_KEY" "$PADDOCK_BROKER/api.model.test/v1/messages"`}}, clientIO()); err != nil || code != 0 {
		t.Fatalf("a request through the broker: code %d, %v", code, err)
	}
	b.do(chromedp.Navigate(base + "/boxes/tight"))
	poll[bool](b, "the OOM kill on the box's page", `/^out of memory at .* \(1 process past its 256 MiB\)$/.test(document.querySelector("#oom")?.textContent || "")`, 10*time.Second)
	poll[bool](b, "the broker's counts on the box's page", `/^MODEL_KEY: 1 request \(2xx 1\), 2 B up, \d+ B down$/.test(document.querySelector("#broker-use")?.textContent || "")`, 30*time.Second)
	b.shots(shotDir, "box-broker")
	b.do(chromedp.Navigate(base + "/"))
	poll[bool](b, "the list again", `!!document.querySelector('#boxes tr[data-box="tight"]')`, 10*time.Second)

	// Create a box with the form and watch it turn running without a reload.
	b.do(chromedp.Click(chromedp.CSS("#new-open")),
		chromedp.SendKeys(chromedp.CSS("#n-name"), "dash"),
		chromedp.Click(chromedp.CSS("#n-desktop")))
	b.shots(shotDir, "boxes-new-form")
	t0 = time.Now()
	b.do(chromedp.Click(chromedp.CSS("#new-create")))
	poll[bool](b, "the new box running", `document.querySelector('#boxes tr[data-box="dash"] .state')?.textContent === "running"`, 60*time.Second)
	formNew := time.Since(t0)
	t.Logf("figure: Create in the form to running in the list %v; 'paddock new' in the same run %v", formNew.Round(time.Millisecond), cliNew.Round(time.Millisecond))
	b.shots(shotDir, "boxes")
	// A box with every column filled, long: a project, a policy, two
	// drives, a TTL, a long name (and "full" above has a long note).
	long := api.ProjectSpec{Project: "customer-portal-rewrite-2026",
		Drives:   []api.DriveSpec{{Name: "customer-portal-node-modules"}, {Name: "customer-portal-build-cache"}},
		Policies: []api.PolicySpec{{Name: "only-the-package-registries", AllowDomains: []string{"pkgs.portal.test"}}},
		Boxes: []api.BoxSpec{{Name: "customer-portal-frontend-dev", Policy: "only-the-package-registries", TTL: "3h",
			Mounts: []api.Mount{{Drive: "customer-portal-node-modules", Path: "/mnt/modules"}, {Drive: "customer-portal-build-cache", Path: "/mnt/cache"}}}}}
	if p, err := d.Client().Plan(ctx, api.PlanRequest{Spec: long}); err != nil {
		t.Fatal(err)
	} else if _, err := d.Client().Apply(ctx, api.ApplyRequest{PlanRequest: api.PlanRequest{Spec: long}, Serial: p.Serial}); err != nil {
		t.Fatal(err)
	}
	poll[bool](b, "the long box in the list", `(document.querySelector('#boxes tr[data-box="customer-portal-frontend-dev"]')?.textContent || "").includes("customer-portal-build-cache")`, 60*time.Second)
	// At both sizes the list keeps each box's state and every action in
	// view, in every row; a row's menu opens inside the window.
	for _, sz := range [][2]int64{{390, 844}, {1280, 800}} {
		b.do(chromedp.EmulateViewport(sz[0], sz[1]))
		poll[string](b, fmt.Sprintf("the state and actions in view at %d px", sz[0]), `(() => {
			const out = (e) => { const r = e.getBoundingClientRect(); return r.width === 0 || r.left < 0 || r.right > innerWidth; };
			const rows = [...document.querySelectorAll('#boxes tr[data-box]')];
			const bad = rows.filter((r) => out(r.querySelector(".state")) || [...r.querySelectorAll(".acts > button")].length !== 2 || [...r.querySelectorAll(".acts > button")].some(out));
			return rows.length >= 5 && bad.length === 0 ? "ok" : "";
		})()`, 10*time.Second)
		b.openMenu("customer-portal-frontend-dev")
		poll[string](b, fmt.Sprintf("the row's menu in view at %d px", sz[0]), `(() => {
			const m = document.querySelector('#boxes tr[data-box="customer-portal-frontend-dev"] .row-menu');
			const items = [...m.querySelectorAll("button")].map((b) => b.getBoundingClientRect());
			return m.matches(":popover-open") && items.length === 4 && items.every((r) => r.width > 0 && r.left >= 0 && r.right <= innerWidth && r.top >= 0 && r.bottom <= innerHeight) ? "ok" : "";
		})()`, 10*time.Second)
		if png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot()); err == nil {
			os.WriteFile(filepath.Join(shotDir, fmt.Sprintf("boxes-menu-%dx%d.png", sz[0], sz[1])), png, 0o644)
		}
		b.do(chromedp.KeyEvent(kb.Escape))
	}

	// The box's page: a shell in the terminal tab. One of its modules fails
	// to load the first time: the page loads itself again and works.
	flaky := b.failOnce("/ui/tar.js")
	b.do(chromedp.Click(chromedp.CSS(`#boxes tr[data-box="dash"] a`)))
	poll[bool](b, "the box's page", `document.body.dataset.box === "dash" && document.body.dataset.ready === "1"`, 10*time.Second)
	if !served(flaky) {
		t.Fatal("the box's page was ready without loading /ui/tar.js")
	}
	// Its use: the last hour's graphs and the newest figures, growing
	// with each sample.
	poll[bool](b, "the box's use on its overview", `(() => {
		const pts = document.querySelector("#graph-cpu polyline")?.getAttribute("points") || "";
		return pts.split(" ").length >= 2 && /% of one CPU$/.test(document.querySelector("#use-cpu").textContent) &&
			/ of 2\.0 GB$/.test(document.querySelector("#use-mem").textContent) && /^\d+$/.test(document.querySelector("#use-procs").textContent) &&
			document.querySelector("#graph-net").querySelectorAll("polyline").length === 2;
	})()`, 30*time.Second)
	b.shots(shotDir, "box-overview")
	assets := eval[string](b, `(() => { let n = 0, bytes = 0; for (const e of performance.getEntriesByType("resource")) if (e.name.includes("/ui/")) { n++; bytes += e.decodedBodySize; } return n + " files, " + bytes + " bytes"; })()`)
	t.Logf("figure: the box page's assets: %s", assets)
	// The address's fragment opens the tab it names, after the page loaded
	// too (a link to #files, back and forward).
	eval[string](b, `location.hash = "#files"`)
	poll[bool](b, "the files tab from the fragment", `document.querySelector("#tab-files").getAttribute("aria-selected") === "true" && !document.querySelector("#panel-files").hidden`, 10*time.Second)
	b.do(chromedp.NavigateBack())
	poll[bool](b, "the overview tab again, back", `document.querySelector("#tab-overview").getAttribute("aria-selected") === "true"`, 10*time.Second)
	b.do(chromedp.Click(chromedp.CSS("#tab-terminal")))
	poll[bool](b, "the shell", `document.body.dataset.term === "open"`, 20*time.Second)
	// The shell's prompt first, then type as a person does.
	poll[bool](b, "the prompt", `(() => { const buf = window.paddockTerm.buffer.active; for (let i = 0; i < buf.length; i++) if (/[$#] *$/.test(buf.getLine(i).translateToString(true))) return true; return false; })()`, 20*time.Second)
	b.typeKeys("echo dash-$((6*7))\r")
	poll[bool](b, "dash-42 in the terminal's buffer", `(() => { const buf = window.paddockTerm.buffer.active; for (let i = 0; i < buf.length; i++) if (buf.getLine(i).translateToString(true).trim() === "dash-42") return true; return false; })()`, 20*time.Second)
	b.shots(shotDir, "box-terminal")
	// The terminal's websocket refuses another origin: a page elsewhere
	// cannot use the browser's cookie to open a shell.
	res, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base}})
	if err != nil || len(res.Cookies) == 0 {
		t.Fatalf("the session cookie: %v %v", res, err)
	}
	cookies := res.Cookies
	hdr := http.Header{"Cookie": {cookies[0].Name + "=" + cookies[0].Value}, "Origin": {"http://evil.example"}}
	if c, resp, err := websocket.Dial(ctx, "ws://"+d.Listen+"/v1/boxes/dash/terminal", &websocket.DialOptions{HTTPHeader: hdr}); err == nil {
		c.CloseNow()
		t.Fatal("a terminal websocket from another origin was accepted")
	} else if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a terminal websocket from another origin: %v %v", resp, err)
	}
	hdr.Set("Origin", base)
	c, _, err := websocket.Dial(ctx, "ws://"+d.Listen+"/v1/boxes/dash/terminal", &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatalf("the same origin's terminal websocket (positive control): %v", err)
	}
	c.CloseNow()

	// Previews in local mode: what listens in the box is on its overview,
	// each port a link; the link opens http://8080-dash.localhost:PORT
	// through this browser's session (a ticket, then the preview host's
	// own cookie). A server on the box's loopback alone is named, with
	// why no preview reaches it. The CLI lists the same, and prints the
	// URL, which answers a token too.
	for _, cmd := range []string{
		"mkdir -p /config/www && echo preview-of-dash > /config/www/index.html && cd /config/www && exec python3 -m http.server 8080",
		"exec python3 -m http.server 5173 --bind 127.0.0.1 --directory /tmp",
	} {
		if _, err := d.Client().StartJob(ctx, "dash", api.ExecPost{Cmd: []string{"sh", "-c", cmd}}); err != nil {
			t.Fatal(err)
		}
	}
	b.do(chromedp.Click(chromedp.CSS("#tab-overview")))
	previewURL := poll[string](b, "the box's open ports on its overview", `(() => {
		const a = document.querySelector('#previews a[data-port="8080"]');
		if (!a || !document.querySelector("#previews").textContent.includes("5173 (127.0.0.1): listens on the box's loopback only")) { document.querySelector("#ports-again")?.click(); return ""; }
		return a.href;
	})()`, 30*time.Second)
	b.shots(shotDir, "box-previews")
	_, port, _ := net.SplitHostPort(d.Listen)
	want := "http://8080-dash.localhost:" + port + "/"
	if !strings.HasSuffix(previewURL, "/preview?to="+url.QueryEscape(want)) {
		t.Fatalf("the preview link: %s (want one to %s)", previewURL, want)
	}
	b.do(chromedp.Navigate(previewURL))
	poll[bool](b, "the preview in the browser", `location.href === `+strconv.Quote(want)+` && document.body.innerText.includes("preview-of-dash")`, 20*time.Second)
	cliRun := func(args ...string) (string, error) {
		cmd := exec.Command(bins.Paddock, args...)
		cmd.Env = append(os.Environ(), d.CLIEnv()...)
		cmd.Env = append(cmd.Env, "PADDOCK_CONFIG_DIR="+t.TempDir(), "DISPLAY=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	listed := map[string]string{}
	out, err := cliRun("preview", "dash")
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 3 {
			listed[f[0]] = f[1] + " " + strings.Join(f[2:], " ")
		}
	}
	if err != nil || listed["8080"] != "0.0.0.0 "+want || !strings.HasPrefix(listed["5173"], "127.0.0.1 listens on the box's loopback only") {
		t.Fatalf("paddock preview dash: %v\n%s", err, out)
	}
	// With no browser here it prints, after the URL, a one-time link that
	// signs a browser in to it (whose page names the account).
	out, err = cliRun("preview", "dash", "8080")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || lines[0] != want || !strings.Contains(out, "No browser here. This link signs one in to this server and opens the preview, once, within ") ||
		!strings.HasPrefix(lines[len(lines)-1], base+"/signin/") {
		t.Fatalf("paddock preview dash 8080: %v\n%s", err, out)
	}
	if resp, err := http.Get(lines[len(lines)-1]); err != nil {
		t.Fatal(err)
	} else {
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(page), "Sign in to this Paddock server as ") {
			t.Fatalf("the preview's sign-in link: %d\n%s", resp.StatusCode, page)
		}
	}
	for args, msg := range map[string]string{"dash 5173": "listens on the box's loopback only", "dash 9999 --wait 0": "nothing listens on port 9999 in box dash (ports open: ", "dash 0": "give a number from 1 to 65535"} {
		if out, err := cliRun(append([]string{"preview"}, strings.Fields(args)...)...); err == nil || !strings.Contains(out, msg) {
			t.Fatalf("paddock preview %s: %v\n%s", args, err, out)
		}
	}
	// A server that starts a moment after its preview is asked for (a
	// dev server still building) is waited for (here up to a minute, so
	// that a busy machine's slow start is no failure).
	if _, err := d.Client().StartJob(ctx, "dash", api.ExecPost{Cmd: []string{"sh", "-c", "sleep 1 && exec python3 -m http.server 7070 --directory /config/www"}}); err != nil {
		t.Fatal(err)
	}
	late := strings.Replace(want, "8080-dash", "7070-dash", 1)
	if out, err := cliRun("preview", "dash", "7070", "--no-open", "--wait", "1m"); err != nil || !strings.Contains(out, "Waiting up to 1m0s for something to listen on port 7070 in box dash") || !strings.Contains(out, "\n"+late+"\n") {
		t.Fatalf("paddock preview dash 7070, its server a second late: %v\n%s", err, out)
	}
	req, _ := http.NewRequest("GET", "http://"+d.Listen+"/", nil)
	req.Host = "8080-dash.localhost:" + port
	req.Header.Set("Authorization", "Bearer "+d.Token)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "preview-of-dash" {
			t.Fatalf("the preview with a token: %d %q", resp.StatusCode, body)
		}
	}
	req.Header.Del("Authorization")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the preview with no token nor cookie: %v %v", resp, err)
	}
	b.do(chromedp.Navigate(base + "/boxes/dash#overview"))
	poll[bool](b, "the box's page again", `document.body.dataset.box === "dash" && document.body.dataset.ready === "1"`, 10*time.Second)

	// Desktop: the noVNC view draws, and a screenshot lands in the gallery.
	b.do(chromedp.Click(chromedp.CSS("#tab-desktop")), chromedp.Click(chromedp.CSS("#shot-take")))
	poll[bool](b, "a screenshot in the gallery", `(() => { const i = document.querySelector("#shots img"); return !!i && i.complete && i.naturalWidth > 100; })()`, 90*time.Second)
	// The server keeps it: a reload shows it again, and it is a PNG.
	b.do(chromedp.Reload())
	poll[bool](b, "the screenshot after a reload", `(() => { const i = document.querySelector("#shots img"); return !!i && i.complete && i.naturalWidth > 100; })()`, 20*time.Second)
	if magic := eval[string](b, `fetch(document.querySelector("#shots a[download]").href).then(r => r.arrayBuffer()).then(b => String.fromCharCode(...new Uint8Array(b).slice(1, 4)))`); magic != "PNG" {
		t.Fatalf("the gallery's download: %q", magic)
	}
	b.do(chromedp.Click(chromedp.CSS("#desk-open")))
	colours := poll[int](b, "the desktop's canvas to draw", `(() => {
		const c = document.querySelector("#desk-frame")?.contentDocument?.querySelector("#screen canvas");
		if (!c || !c.width) return 0;
		const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		const seen = new Set();
		for (let i = 0; i < d.length; i += 4 * 97) seen.add((d[i] << 16) | (d[i+1] << 8) | d[i+2]);
		return seen.size >= 4 ? seen.size : 0;
	})()`, 40*time.Second)
	t.Logf("%d colours sampled on the desktop's canvas", colours)
	b.shots(shotDir, "box-desktop")

	// Prompt: a test agent prints its task, live.
	b.do(chromedp.Click(chromedp.CSS("#tab-prompt")))
	poll[bool](b, "the agent list", `[...document.querySelectorAll("#prompt-agent option")].some(o => o.value === "say")`, 20*time.Second)
	// An agent that would be refused says why and what to do, before a
	// prompt: claude has no credentials in this box.
	if note := eval[string](b, `(() => { const s = document.querySelector("#prompt-agent"); s.value = "claude"; s.dispatchEvent(new Event("change"));
		return s.selectedOptions[0].textContent + " | " + document.querySelector("#agent-note").textContent; })()`); !strings.Contains(note, "claude · not ready | This agent has no credentials in box \"dash\": set its secret ('paddock secret set ANTHROPIC_API_KEY'") {
		t.Fatalf("the prompt tab on claude without credentials: %q", note)
	}
	b.do(chromedp.SetValue(chromedp.CSS("#prompt-agent"), "say"),
		chromedp.SendKeys(chromedp.CSS("#prompt-task"), "hello from the dashboard"),
		chromedp.Click(chromedp.CSS("#prompt-start")))
	poll[bool](b, "the agent's output", `document.querySelector("#prompt-log").textContent.includes("said=hello from the dashboard")`, 30*time.Second)
	b.shots(shotDir, "box-prompt")

	// Jobs: a command in the background; its log follows.
	b.do(chromedp.Click(chromedp.CSS("#tab-jobs")),
		chromedp.SendKeys(chromedp.CSS("#job-cmd"), "echo job-$((2+3)); sleep 1; echo done"),
		chromedp.Click(chromedp.CSS("#job-start")))
	poll[bool](b, "the job's log", `document.querySelector("#job-log").textContent.includes("job-5\ndone")`, 30*time.Second)
	poll[bool](b, "the job exited in the list", `[...document.querySelectorAll("#jobs tbody tr")].some(r => r.textContent.includes("job-$((2+3))") && r.textContent.includes("exited"))`, 20*time.Second)
	// A running job is stopped from its row: TERM, exit 143.
	eval[string](b, `document.getElementById("job-cmd").value = ""`)
	b.do(chromedp.SendKeys(chromedp.CSS("#job-cmd"), "sleep 3600"),
		chromedp.Click(chromedp.CSS("#job-start")))
	poll[bool](b, "the sleeping job's Stop button", `!!document.querySelector('#jobs tbody tr button[data-signal="TERM"]')`, 20*time.Second)
	b.shots(shotDir, "box-jobs")
	b.do(chromedp.Click(chromedp.CSS(`#jobs tbody tr button[data-signal="TERM"]`)))
	poll[bool](b, "the stopped job exited 143 in the list", `[...document.querySelectorAll("#jobs tbody tr")].some(r => r.textContent.includes("sleep 3600") && r.textContent.includes("exited") && r.textContent.includes("143") && !r.querySelector("button[data-signal]"))`, 30*time.Second)

	// Files: upload a file into a folder and download it back.
	payload := make([]byte, 300<<10)
	rand.Read(payload)
	up := filepath.Join(t.TempDir(), "up.bin")
	if err := os.WriteFile(up, payload, 0o644); err != nil {
		t.Fatal(err)
	}
	dl := t.TempDir()
	if _, err := chromedp.CallBrowser(b.ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dl}); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Click(chromedp.CSS("#tab-files")))
	poll[bool](b, "the folder listing", `document.querySelector("#dir-path").value === "/config" && document.querySelectorAll("#files tbody tr").length > 0`, 20*time.Second)
	b.do(chromedp.SetUploadFiles(chromedp.CSS("#upload-input"), []string{up}), chromedp.Click(chromedp.CSS("#upload-go")))
	poll[bool](b, "the uploaded file listed", `!!document.querySelector('#files tr[data-name="up.bin"] a')`, 20*time.Second)
	b.do(chromedp.Click(chromedp.CSS(`#files tr[data-name="up.bin"] a`)))
	var got []byte
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got, err = os.ReadFile(filepath.Join(dl, "up.bin")); err == nil && len(got) == len(payload) {
			break
		}
	}
	if !bytes.Equal(got, payload) {
		t.Fatalf("the downloaded file differs: %d bytes, want %d", len(got), len(payload))
	}
	b.shots(shotDir, "box-files")

	// Snapshots and network tabs, for the screenshots.
	b.do(chromedp.Click(chromedp.CSS("#tab-snapshots")), chromedp.Click(chromedp.CSS("#snap-take")))
	// Its size is what the commit added: the 300 KB uploaded above, at least.
	snapSize := poll[string](b, "a snapshot listed with its size", `(() => { const c = document.querySelector("#snapshots tr[data-snapshot] td.size"); return c && /[KMG]B$/.test(c.textContent) ? c.textContent : ""; })()`, 60*time.Second)
	t.Logf("snapshot size shown: %s", snapSize)
	b.shots(shotDir, "box-snapshots")
	b.do(chromedp.Click(chromedp.CSS("#tab-network")))
	poll[bool](b, "the network report", `document.querySelector("#dns tbody").children.length > 0`, 10*time.Second)
	b.shots(shotDir, "box-network")

	// Stop and start from the box's header.
	b.do(chromedp.Click(chromedp.CSS("#tab-overview")), chromedp.Click(chromedp.CSS("#act-stop")))
	poll[bool](b, "the box stopped", `document.querySelector("#box-state").textContent === "stopped"`, 60*time.Second)
	b.do(chromedp.Click(chromedp.CSS("#act-start")))
	poll[bool](b, "the box running again", `document.querySelector("#box-state").textContent === "running"`, 60*time.Second)

	// A write without the session's CSRF value is refused, and changes nothing.
	status := eval[float64](b, `fetch("/v1/boxes", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({name: "forged"})}).then(r => r.status)`)
	if status != 401 {
		t.Fatalf("a POST without the CSRF header: %v", status)
	}
	formStatus := eval[float64](b, `fetch("/logout", {method: "POST", body: new URLSearchParams({csrf: "wrong"})}).then(r => fetch("/v1/whoami")).then(r => r.status)`)
	if formStatus != 200 {
		t.Fatalf("a logout form with a wrong CSRF value ended the session: whoami %v", formStatus)
	}
	if _, err := d.Client().Box(ctx, "forged"); err == nil {
		t.Fatal("the forged request made a box")
	}

	// A Boxfile project applied with the CLI shows on the projects page
	// with who applied it and no drift; a policy changed outside the
	// Boxfile shows as drift, without a reload.
	proj := t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, "Boxfile.hcl"), []byte("project = \"shop\"\nbox \"shopweb\" {\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	apply := exec.Command(bins.Paddock, "apply", "--auto-approve")
	apply.Dir = proj
	apply.Env = append(append(os.Environ(), d.CLIEnv()...), "PADDOCK_CONFIG_DIR="+t.TempDir())
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("paddock apply: %v\n%s", err, out)
	}
	b.do(chromedp.Navigate(base + "/projects"))
	poll[bool](b, "the project without drift", `(document.querySelector('[data-project="shop"]')?.textContent || "").includes("No drift") && document.querySelector('[data-project="shop"]').textContent.includes("by local")`, 20*time.Second)
	if _, err := d.Client().SetPolicy(ctx, "shopweb", "deny-all"); err != nil {
		t.Fatal(err)
	}
	poll[bool](b, "the drift shown", `(document.querySelector('[data-project="shop"] .drift')?.textContent || "").includes("box.shopweb")`, 20*time.Second)

	// Drives, policies and access: forms do what the CLI does, and an
	// error shows next to the field it is about, in the CLI's words.
	b.do(chromedp.Navigate(base+"/drives"), chromedp.WaitVisible(chromedp.CSS("body[data-ready] #d-name")),
		chromedp.SendKeys(chromedp.CSS("#d-name"), "dashdrive"), chromedp.Click(chromedp.CSS("#d-create")))
	poll[bool](b, "the new drive listed", `!!document.querySelector('#drives tr[data-drive="dashdrive"] a[download]')`, 20*time.Second)
	b.do(chromedp.Navigate(base+"/policies"), chromedp.WaitVisible(chromedp.CSS("body[data-ready] #p-name")),
		chromedp.SendKeys(chromedp.CSS("#p-name"), "dashpol"), chromedp.SendKeys(chromedp.CSS("#p-cidrs"), "10.0.0.0/33"),
		chromedp.Click(chromedp.CSS("#p-save")))
	cidrErr := poll[string](b, "the CIDR error", `(() => { const e = document.querySelector('[data-field="allow_cidrs"]'); return e && !e.hidden ? e.textContent : (document.querySelector('#policy-error:not([hidden])')?.textContent || ""); })()`, 10*time.Second)
	if !strings.Contains(cidrErr, "10.0.0.0/33") {
		t.Fatalf("a bad CIDR's error: %q", cidrErr)
	}
	b.do(chromedp.SetValue(chromedp.CSS("#p-cidrs"), "10.1.0.0/16"), chromedp.Click(chromedp.CSS("#p-save")))
	poll[bool](b, "the new policy listed", `!!document.querySelector('#policies tr[data-policy="dashpol"]')`, 10*time.Second)
	b.do(chromedp.Navigate(base+"/access"), chromedp.WaitVisible(chromedp.CSS("body[data-ready] #t-name")),
		chromedp.SendKeys(chromedp.CSS("#t-name"), "dashtoken"), chromedp.Click(chromedp.CSS("#t-create")))
	tok := poll[string](b, "the new token shown once", `document.querySelector("#token-once:not([hidden]) #token-value")?.textContent || ""`, 10*time.Second)
	if tc, _ := client.New(base, tok); tc == nil {
		t.Fatal("no client")
	} else if who, err := tc.Whoami(ctx); err != nil || who.Token != "dashtoken" {
		t.Fatalf("the token the page showed: %+v %v", who, err)
	}
	// An E2B key: the lines that point E2B's SDKs at this server.
	b.do(chromedp.SendKeys(chromedp.CSS("#t-name"), "dashe2b"), chromedp.Click(chromedp.CSS("#t-e2b")), chromedp.Click(chromedp.CSS("#t-create")))
	e2bEnv := poll[string](b, "the E2B settings shown once", `document.querySelector("#e2b-once:not([hidden]) #e2b-env")?.textContent || ""`, 10*time.Second)
	e2bKey := regexp.MustCompile(`^export E2B_API_URL=` + regexp.QuoteMeta(base) + `/e2b\nexport E2B_SANDBOX_URL=` + regexp.QuoteMeta(base) + `/e2b/envd\nexport E2B_API_KEY=(e2b_[0-9a-f]{64})$`).FindStringSubmatch(e2bEnv)
	if e2bKey == nil || eval[bool](b, `!document.querySelector("#token-once").hidden`) {
		t.Fatalf("the E2B settings the page showed: %q", e2bEnv)
	}
	if tc, _ := client.New(base, e2bKey[1]); tc == nil {
		t.Fatal("no client")
	} else if who, err := tc.Whoami(ctx); err != nil || who.Token != "dashe2b" {
		t.Fatalf("the E2B key the page showed: %+v %v", who, err)
	}
	// An invitation made on the page is listed as pending, and its Revoke
	// takes it back (the API's list says so too).
	b.do(chromedp.Click(chromedp.CSS("#i-go")))
	inviteID := poll[string](b, "the pending invitation", `document.querySelector("#invite-once:not([hidden])") && document.querySelector("#invites tbody tr[data-invite]")?.dataset.invite || ""`, 10*time.Second)
	if is, err := d.Client().Invites(ctx); err != nil || len(is) != 1 || is[0].ID != inviteID || is[0].Role != "member" {
		t.Fatalf("the invitations after the page made one: %+v %v", is, err)
	}
	b.do(chromedp.Click(chromedp.CSS(`#invites tr[data-invite="` + inviteID + `"] button[data-action="revoke"]`)))
	poll[bool](b, "the invitation revoked", `(document.querySelector("#invites tbody")?.textContent || "") === "No invitation is pending."`, 10*time.Second)
	if is, err := d.Client().Invites(ctx); err != nil || len(is) != 0 {
		t.Fatalf("the invitations after the page revoked one: %+v %v", is, err)
	}

	// Images: on this server (runc boxes) builds cannot run; the page
	// says why in place of its build form, and the API refuses one the
	// same way.
	b.do(chromedp.Navigate(base + "/images"))
	noBuild := poll[string](b, "why this server does not build", `document.body.dataset.ready && document.querySelector("#no-build")?.textContent || ""`, 10*time.Second)
	if !strings.Contains(noBuild, "Docker inside a box does not work") || eval[bool](b, `!!document.querySelector("#image-form")`) {
		t.Fatalf("the images page on a server that cannot build: %q", noBuild)
	}
	if _, err := d.Client().BuildImage(ctx, client.ImageBuild{Name: "dashimg", Tag: "1"}, strings.NewReader(""), nil); err == nil || !strings.Contains(err.Error(), "Docker inside a box does not work") {
		t.Fatalf("a build on a server that cannot build: %v", err)
	}

	// The audit log shows what the forms above did, filters to one
	// action, and the owner's check says the chain holds.
	b.do(chromedp.Navigate(base + "/audit"))
	poll[bool](b, "the token's creation in the audit log", `[...document.querySelectorAll('#audit tr[data-action="token.create"]')].some(r => r.textContent.includes("tokens/dashtoken"))`, 10*time.Second)
	// A long result (the build's refusal above) folds inside the table
	// rather than widen it past the window, at both sizes.
	for _, sz := range [][2]int64{{390, 844}, {1280, 800}} {
		b.do(chromedp.EmulateViewport(sz[0], sz[1]))
		poll[bool](b, fmt.Sprintf("the audit table within the window at %d px", sz[0]), `(() => {
			const t = document.querySelector("#audit"), long = [...t.querySelectorAll("td.result")].some((c) => c.textContent.length > 80);
			return long && t.scrollWidth <= t.parentElement.clientWidth && t.getBoundingClientRect().right <= innerWidth;
		})()`, 10*time.Second)
	}
	b.do(chromedp.SendKeys(chromedp.CSS("#a-action"), "drive"), chromedp.Click(chromedp.CSS("#a-apply")))
	poll[bool](b, "only drive entries", `(() => { const rows = [...document.querySelectorAll('#audit tbody tr[data-action]')]; return rows.length > 0 && rows.every(r => r.dataset.action.startsWith("drive.")) && rows.some(r => r.textContent.includes("drives/dashdrive")); })()`, 10*time.Second)
	b.do(chromedp.Click(chromedp.CSS("#a-verify")))
	if got := poll[string](b, "the chain's check", `document.querySelector("#a-check:not([hidden])")?.textContent || ""`, 10*time.Second); !strings.HasPrefix(got, "The chain holds") {
		t.Fatalf("the audit page's check: %q", got)
	}
	// The browser keeps the log's head as its witness, and the next
	// check holds the log against it.
	eval[string](b, `(() => { document.querySelector("#a-check").textContent = ""; return ""; })()`)
	b.do(chromedp.Click(chromedp.CSS("#a-verify")))
	if got := poll[string](b, "the chain's second check", `document.querySelector("#a-check:not([hidden])")?.textContent || ""`, 10*time.Second); !strings.Contains(got, "It still holds the entry this browser saw at its last check") {
		t.Fatalf("the audit page's second check: %q", got)
	}
	b.shots(shotDir, "audit-verified")

	// Every other page, for the screenshots; each renders without errors.
	for _, p := range []string{"drives", "images", "policies", "projects", "access", "audit", "server", "api"} {
		b.do(chromedp.Navigate(base + "/" + p))
		poll[bool](b, "the "+p+" page", `document.body.dataset.page === "`+p+`" && !document.querySelector("tbody tr.empty")?.textContent.includes("Loading")`, 10*time.Second)
		b.shots(shotDir, p)
	}
	// The Server page lists the servers: here, this one alone, up, as
	// the control plane.
	b.do(chromedp.Navigate(base + "/server"))
	poll[bool](b, "the servers' list", `!!document.querySelector("#nodes tbody tr")`, 10*time.Second)
	if rows := eval[string](b, `[...document.querySelectorAll("#nodes tbody tr")].map(r => r.textContent).join("|")`); strings.Count(rows, "|") != 0 || !strings.Contains(rows, "up") || !strings.Contains(rows, "control plane") {
		t.Fatalf("the Server page's servers: %q", rows)
	}

	// Remove, confirmed by typing the name.
	b.do(chromedp.Navigate(base + "/"))
	poll[bool](b, "the list", `!!document.querySelector('#boxes tr[data-box="dash"]')`, 10*time.Second)
	b.openMenu("dash")
	b.do(chromedp.Click(chromedp.CSS(`#boxes tr[data-box="dash"] button[data-action="remove"]`)))
	if !eval[bool](b, `document.querySelector("#rm-go").disabled`) {
		t.Fatal("Remove is enabled before the name is typed")
	}
	b.do(chromedp.SendKeys(chromedp.CSS("#rm-confirm"), "dash"))
	b.shots(shotDir, "boxes-remove")
	b.do(chromedp.Click(chromedp.CSS("#rm-go")))
	poll[bool](b, "the row gone", `!document.querySelector('#boxes tr[data-box="dash"]')`, 60*time.Second)
	if _, err := d.Client().Box(ctx, "dash"); err == nil {
		t.Fatal("the box is still there")
	}

	// A member signed in sees only their own boxes, and another's box's
	// page is "not found".
	mtok := memberToken(t, d, "mo")
	mc, _ := client.New(base, mtok)
	if _, err := mc.CreateBox(ctx, api.BoxPost{Name: "mine"}); err != nil {
		t.Fatal(err)
	}
	m := newBrowser(t, base, 2*time.Minute)
	m.do(chromedp.Navigate(signInURL(t, d, mtok)), chromedp.Click(chromedp.CSS("#signin")))
	poll[bool](m, "the member's list", `!!document.querySelector('#boxes tr[data-box="mine"]')`, 20*time.Second)
	if eval[bool](m, `!!document.querySelector('#boxes tr[data-box="fromcli"]')`) {
		t.Fatal("a member's list shows the owner's box")
	}
	m.do(chromedp.Navigate(base + "/boxes/fromcli"))
	if msg := eval[string](m, `document.querySelector("#notfound")?.textContent || ""`); msg != `No box named "fromcli".` {
		t.Fatalf("a member at another's box: %q", msg)
	}
	nf := eval[string](m, `fetch("/boxes/fromcli").then(r => r.status + " " + r.headers.get("Content-Type"))`)
	never := eval[string](m, `fetch("/boxes/neverwas").then(r => r.status + " " + r.headers.get("Content-Type"))`)
	if nf != never || !strings.HasPrefix(nf, "404") {
		t.Fatalf("another's box %q, a box that never was %q", nf, never)
	}
	events := eval[string](m, `new Promise(res => { const seen = []; const es = new EventSource("/v1/events");
		es.addEventListener("box", e => seen.push(JSON.parse(e.data).name));
		es.addEventListener("ready", () => { es.close(); res(seen.sort().join(",")); }); })`)
	if events != "mine" {
		t.Fatalf("the member's events stream shows boxes %q", events)
	}
	m.shots(shotDir, "member-boxes")
	// The system's dark setting gives the dark colours.
	if _, err := chromedp.Call(m.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	if bg := eval[string](m, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(21, 23, 26)" {
		t.Fatalf("dark mode background %q", bg)
	}
	m.do(chromedp.Navigate(base + "/boxes/mine"))
	poll[bool](m, "the member's box page", `document.body.dataset.ready === "1"`, 10*time.Second)
	m.shots(shotDir, "member-box-dark")

	// The owner sets the member's quota on the Access page: one box, which
	// they have; their next is refused, naming it.
	b.do(chromedp.Navigate(base + "/access"))
	poll[bool](b, "the member's quota", `(document.querySelector('#users tr[data-user="mo"] .quota')?.textContent || "").includes("boxes 1/")`, 10*time.Second)
	b.do(chromedp.Click(chromedp.CSS(`#users tr[data-user="mo"] button[data-action="quota"]`)), chromedp.WaitVisible(chromedp.CSS("#q-boxes")),
		chromedp.SendKeys(chromedp.CSS("#q-boxes"), "1"))
	b.shots(shotDir, "access-quota")
	b.do(chromedp.Click(chromedp.CSS("#q-save")))
	poll[bool](b, "the quota shown", `(document.querySelector('#users tr[data-user="mo"] .quota')?.textContent || "").includes("boxes 1/1*")`, 10*time.Second)
	if q, err := d.Client().Quota(ctx, "mo"); err != nil || q.Limits.Boxes != 1 || strings.Join(q.Own, ",") != "boxes" {
		t.Fatalf("the quota the page set: %+v %v", q, err)
	}
	if _, err := mc.CreateBox(ctx, api.BoxPost{Name: "mine2"}); err == nil || !strings.Contains(err.Error(), "the quota set for mo: boxes = 1") {
		t.Fatalf("a box past the quota set on the page: %v", err)
	}
	t.Logf("looked at: %s", strings.Join(listPNG(shotDir), " "))
}

func listPNG(dir string) []string {
	ms, _ := filepath.Glob(filepath.Join(dir, "*.png"))
	for i := range ms {
		ms[i] = filepath.Base(ms[i])
	}
	return ms
}
