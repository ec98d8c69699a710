package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
)

// chromium finds the browser, installing Debian's package when missing;
// outside CI, a machine without it skips.
func chromium(t *testing.T) string {
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	out, err := exec.Command("sh", "-c", "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium").CombinedOutput()
	if p, lerr := exec.LookPath("chromium"); lerr == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("cannot install chromium: %v\n%s", err, out)
	}
	t.Skipf("SKIP: no chromium and it cannot be installed: %v", err)
	return ""
}

// The desktop page loads in a real browser through paddockd, connects
// through the websocket bridge and draws the box's desktop; the ticket
// works once.
func TestDesktopInBrowser(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	c := d.Client()
	ctx := context.Background()
	desk := true
	if _, err := c.CreateBox(ctx, api.BoxPost{Name: "view", Desktop: &desk}); err != nil {
		t.Fatal(err)
	}
	// Wait for the desktop to come up (a screenshot waits for it).
	if _, err := c.Screenshot(ctx, "view"); err != nil {
		t.Fatal(err)
	}
	ticket, err := c.DesktopTicket(ctx, "view")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + d.Listen + ticket.Path

	// A bound for the whole browser session, not a measurement: it runs
	// to 50 s when the machine is loaded twice over.
	b := newBrowser(t, "http://"+d.Listen, 120*time.Second)
	// The first load of one of noVNC's modules fails: the page loads itself
	// again and still connects with its ticket.
	flaky := b.failOnce("/novnc/core/util/events.js")
	pageState := func() string {
		// about:blank first: the same URL again would only change the fragment.
		b.do(chromedp.Navigate("about:blank"), chromedp.Navigate(url))
		return poll[string](b, "the page's end state", `["connected", "disconnected", "failed"].includes(document.body.dataset.state) && document.body.dataset.state`, 30*time.Second)
	}
	if state := pageState(); state != "connected" {
		t.Fatalf("page state %q", state)
	}
	if !served(flaky) {
		t.Fatal("the page connected without loading noVNC's events.js")
	}
	// Wait for the first frames: count the colours on the canvas.
	colours := poll[int](b, "the canvas to draw", `(() => {
		const c = document.querySelector("#screen canvas");
		const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		const seen = new Set();
		for (let i = 0; i < d.length; i += 4 * 97) seen.add((d[i] << 16) | (d[i+1] << 8) | d[i+2]);
		return seen.size >= 4 ? seen.size : 0;
	})()`, 20*time.Second)
	t.Logf("%d colours sampled on the canvas", colours)

	// The ticket was used: a second page with it does not connect.
	if again := pageState(); again != "disconnected" {
		t.Fatalf("a used ticket: page state %q", again)
	}
}

// The account pages in a real browser: an invitation creates a member,
// whose browser session then approves a CLI's device login; the token it
// gives is the member's.
func TestAccountPagesInBrowser(t *testing.T) {
	browser := chromium(t)
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	ctx := context.Background()
	owner := d.Client()
	if _, err := owner.CreateBox(ctx, api.BoxPost{Name: "owners"}); err != nil {
		t.Fatal(err)
	}
	inv, err := owner.Invite(ctx, "member")
	if err != nil || inv.URL == "" {
		t.Fatalf("invite: %+v %v", inv, err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()))
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 60*time.Second)
	defer cancel()

	if err := chromedp.Do(bctx,
		chromedp.Navigate(inv.URL),
		chromedp.SendKeys(chromedp.CSS("#name"), "mia"),
		chromedp.SendKeys(chromedp.CSS("#password"), "a long password"),
		chromedp.SendKeys(chromedp.CSS("#password2"), "a long password"),
		chromedp.Click(chromedp.CSS("#create")),
	); err != nil {
		t.Fatal(err)
	}
	welcome, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#welcome")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(welcome, "mia") || !strings.Contains(welcome, "member") {
		t.Fatalf("welcome: %q", welcome)
	}

	anon, err := client.New("http://"+d.Listen, "")
	if err != nil {
		t.Fatal(err)
	}
	dc, err := anon.DeviceStart(ctx, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(dc.VerificationURIComplete), chromedp.SendKeys(chromedp.CSS("#code"), dc.UserCode),
		chromedp.Click(chromedp.CSS("#review")), chromedp.WaitVisible(chromedp.CSS("#request")), chromedp.Click(chromedp.CSS("#approve"))); err != nil {
		t.Fatal(err)
	}
	done, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#done")))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate("http://"+d.Listen+"/")); err != nil {
		t.Fatal(err)
	}
	home, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#boxes")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(done, "Approved") || strings.Contains(home, "owners") {
		t.Fatalf("approval %q; the member's home lists %q", done, home)
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	tok, err := anon.DeviceWait(wctx, dc)
	if err != nil {
		t.Fatal(err)
	}
	mc, _ := client.New("http://"+d.Listen, tok)
	who, err := mc.Whoami(ctx)
	if err != nil || who.User != "mia" || who.Role != "member" || who.Token != "laptop" {
		t.Fatalf("whoami with the device token: %+v %v", who, err)
	}
	if bs, err := mc.Boxes(ctx); err != nil || len(bs) != 0 {
		t.Fatalf("the member lists %v (%v)", bs, err)
	}
}
