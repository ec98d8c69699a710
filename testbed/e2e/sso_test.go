package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/testbed/harness"
	"github.com/paddock-dev/paddock/testbed/idp"
)

// Single sign-on against a real OpenID provider on this machine (package
// idp), through the real browser: the login page offers it; a person of
// an allowed domain comes in as a member and is the same user next time;
// a wrong domain, an unverified address, a forged state, a replayed code,
// an expired ID token and one signed with a key the provider does not
// publish are refused with a page that says why; a group change at the
// provider changes the role at the next recheck; 'paddock login' on a
// laptop goes through the provider on the device page; a person removed
// at the provider loses their API token and session within the recheck's
// bound; with password sign-in off, members cannot use a password, and
// invitations are refused.
func TestSSO(t *testing.T) {
	d := newDaemon(t, t.TempDir())
	p, err := idp.Start("paddock", "s3cret", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	p.Add(idp.Person{Subject: "u-ana", Username: "ana", Email: "ana@corp.test", Verified: true, Groups: []string{"eng"}})
	p.Add(idp.Person{Subject: "u-eve", Username: "eve", Email: "eve@elsewhere.test", Verified: true, Groups: []string{"eng"}})
	p.Add(idp.Person{Subject: "u-max", Username: "max", Email: "max@corp.test", Verified: false})
	// Top-level settings first: the test configuration ends in tables.
	d.Config = "password_login = false\nsso_recheck = \"1s\"\n" + harness.TestConfig + fmt.Sprintf(`
[sso.corp]
name = "Corp"
issuer = %q
client_id = "paddock"
client_secret = "s3cret"
domains = ["corp.test"]
roles = { admins = "admin" }
`, p.URL)
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
	p.Redirect = base + "/sso/corp/callback"
	ctx := context.Background()
	owner := d.Client()
	b := newBrowser(t, base, 4*time.Minute)
	shotDir, err := os.MkdirTemp("", "paddock-sso-shots-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("page screenshots: %s", shotDir)

	// signIn goes through the provider as subject from the login page.
	signIn := func(subject string) {
		t.Helper()
		b.do(chromedp.Navigate(base + "/login"))
		b.do(chromedp.Click(chromedp.CSS("#sso-corp")))
		poll[bool](b, "the provider's page", `!!document.querySelector("#as-`+subject+`")`, 10*time.Second)
		b.do(chromedp.Click(chromedp.CSS("#as-" + subject)))
	}
	pageError := func(what, want string) {
		t.Helper()
		got := poll[string](b, what, `document.querySelector("#error")?.textContent || ""`, 10*time.Second)
		if !strings.Contains(got, want) {
			t.Fatalf("%s: %q, want %q in it", what, got, want)
		}
	}
	role := func(name string) string {
		us, err := owner.Users(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range us {
			if u.Name == name {
				return u.Role
			}
		}
		return ""
	}

	// The login page offers the provider; the password form is the
	// owner's way in, folded away.
	b.do(chromedp.Navigate(base + "/login"))
	if got := eval[string](b, `document.querySelector("#sso-corp")?.textContent + " | " + !!document.querySelector("#break-glass #password")`); got != "Sign in with Corp | true" {
		t.Fatalf("the login page: %q", got)
	}
	b.shots(shotDir, "login-sso")

	// First sign-in: a member, on the boxes page.
	signIn("u-ana")
	poll[bool](b, "ana on the boxes page", `document.body.dataset.page === "boxes" && document.body.dataset.user === "ana" && document.body.dataset.role === "member"`, 10*time.Second)
	if r := role("ana"); r != "member" {
		t.Fatalf("ana's role: %q", r)
	}
	if us, _ := owner.Users(ctx); !slices.ContainsFunc(us, func(u api.User) bool { return u.Name == "ana" && u.SSO == "corp" && u.Email == "ana@corp.test" }) {
		t.Fatalf("the users list does not say ana signs in with corp: %+v", us)
	}
	es, err := owner.Audit(ctx, clientAudit("login.sso"))
	if err != nil || len(es) != 1 || es[0].User != "ana" || es[0].Via != "sso:corp" || es[0].Result != "ok" {
		t.Fatalf("the sign-in's audit entry: %+v %v", es, err)
	}

	// Refusals, each with a page that says why.
	signIn("u-eve")
	pageError("a person of another domain", "its email domain is not corp.test")
	b.shots(shotDir, "sso-refused")
	signIn("u-max")
	pageError("an unverified address", "did not say your email address")
	b.do(chromedp.Navigate(base + "/sso/corp/callback?state=forged&code=x"))
	pageError("a forged state", "was not started here")
	p.SetNext(idp.Expired)
	signIn("u-ana")
	pageError("an expired ID token", "token is expired")
	p.SetNext(idp.ForeignKey)
	signIn("u-ana")
	pageError("an ID token signed with another key", "does not verify")
	t.Run("AttackIDTokenOfAnotherSignIn", func(t *testing.T) {
		defer func(parent *testing.T) { b.t = parent }(b.t)
		b.t = t // the browser's failures are this subtest's
		p.SetNext(idp.WrongNonce)
		signIn("u-ana")
		got := poll[string](b, "the refusal's page", `document.querySelector("#error")?.textContent || ""`, 10*time.Second)
		if !strings.Contains(got, "its nonce differs") {
			t.Fatalf("an ID token of another sign-in (its nonce): %q", got)
		}
	})
	if us, _ := owner.Users(ctx); len(us) != 2 {
		t.Fatalf("users after the refusals: %+v (the owner and ana only)", us)
	}
	es, _ = owner.Audit(ctx, clientAudit("login.sso"))
	if len(es) != 7 {
		t.Fatalf("sign-ins recorded: %d, want 7 (one in, six refused)", len(es))
	}

	// A replayed code: the same code with a new sign-in's state (a
	// program's client, as the browser does not show the code).
	code := replayedCode(t, base, p)
	if code == "" || p.RefusedReplays == 0 {
		t.Fatalf("a replayed code: the provider refused %d", p.RefusedReplays)
	}

	// A group change at the provider: admin at the next recheck.
	p.Add(idp.Person{Subject: "u-ana", Username: "ana", Email: "ana@corp.test", Verified: true, Groups: []string{"eng", "admins"}})
	signIn("u-ana") // the recheck needs a refresh token: this sign-in's
	poll[bool](b, "ana signed in again", `document.body.dataset.user === "ana"`, 10*time.Second)
	for deadline := time.Now().Add(20 * time.Second); role("ana") != "admin"; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ana's role 20 s after her group change: %q", role("ana"))
		}
	}

	// paddock login on a laptop: the device page, through the provider.
	b.do(chromedp.Navigate(base + "/login"))
	cliDir := t.TempDir()
	cliEnv := append(os.Environ(), "PADDOCK_CONFIG_DIR="+cliDir, "PADDOCK_HOST=", "PADDOCK_TOKEN=")
	login := exec.Command(bins.Paddock, "login", base, "--no-open")
	login.Env = cliEnv
	stdout, _ := login.StdoutPipe()
	login.Stderr = login.Stdout
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	var userCode string
	var printed []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		printed = append(printed, sc.Text())
		if m := regexp.MustCompile(`enter the code ([A-Z0-9]{4}-[A-Z0-9]{4})`).FindStringSubmatch(sc.Text()); m != nil {
			userCode = m[1]
			break
		}
	}
	if userCode == "" {
		t.Fatalf("paddock login printed no code:\n%s", strings.Join(printed, "\n"))
	}
	b.do(chromedp.Navigate(base + "/"))
	b.do(chromedp.Click(chromedp.CSS("#logout")))
	poll[bool](b, "signed out", `location.pathname === "/login"`, 10*time.Second)
	b.do(chromedp.Navigate(base + "/device"))
	poll[bool](b, "the login page on the way to the device page", `location.pathname === "/login" && !!document.querySelector("#sso-corp")`, 10*time.Second)
	b.do(chromedp.Click(chromedp.CSS("#sso-corp")))
	poll[bool](b, "the provider's page", `!!document.querySelector("#as-u-ana")`, 10*time.Second)
	b.do(chromedp.Click(chromedp.CSS("#as-u-ana")))
	poll[bool](b, "the device page after the provider", `location.pathname === "/device" && !!document.querySelector("#code")`, 10*time.Second)
	b.do(chromedp.SendKeys(chromedp.CSS("#code"), userCode), chromedp.Click(chromedp.CSS("#review")))
	poll[bool](b, "the confirmation", `!!document.querySelector("#approve")`, 10*time.Second)
	b.do(chromedp.Click(chromedp.CSS("#approve")))
	poll[bool](b, "approved", `(document.querySelector("#done")?.textContent || "").includes("logged in as ana")`, 10*time.Second)
	if err := login.Wait(); err != nil {
		t.Fatalf("paddock login: %v", err)
	}
	whoami := func() (string, error) {
		cmd := exec.Command(bins.Paddock, "whoami")
		cmd.Env = cliEnv
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := whoami(); err != nil || !strings.Contains(out, "ana") {
		t.Fatalf("whoami after the device login: %v %s", err, out)
	}

	// Removed at the provider: the token and the session stop working at
	// the next recheck, and a sign-in is refused there.
	p.Remove("u-ana")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if out, err := whoami(); err != nil && !strings.Contains(out, "connection refused") {
			break
		}
		if time.Now().After(deadline) {
			out, err := whoami()
			t.Fatalf("ana's CLI token 20 s after her removal at the provider: %v %s", err, out)
		}
	}
	b.do(chromedp.Navigate(base + "/"))
	poll[bool](b, "the login page for a revoked session", `location.pathname === "/login"`, 10*time.Second)
	signIn("u-max") // the provider's page no longer lists ana
	if n := eval[int](b, `document.querySelectorAll("#as-u-ana").length`); n != 0 {
		t.Fatalf("ana still at the provider")
	}
	es, _ = owner.Audit(ctx, clientAudit("user.sso.revoke"))
	if len(es) == 0 || es[len(es)-1].Object != "ana" {
		t.Fatalf("the revocation's audit entry: %+v", es)
	}

	// Password sign-in is off: no invitations for members.
	if _, err := owner.Invite(ctx, "member"); err == nil || !strings.Contains(err.Error(), "password sign-in is off") {
		t.Fatalf("an invitation with password sign-in off: %v", err)
	}
}

func clientAudit(action string) client.AuditQuery { return client.AuditQuery{Action: action} }

// replayedCode signs ana in with a program's HTTP client, then presents
// the same code again under a new sign-in's state: the provider refuses
// it, and so does paddockd. It returns the code.
func replayedCode(t *testing.T, base string, p *idp.Provider) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	follow := func(u string) *url.URL {
		t.Helper()
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			t.Fatalf("GET %s: %d, no redirect", u, resp.StatusCode)
		}
		return loc
	}
	approve := func(authURL *url.URL) *url.URL {
		t.Helper()
		form := authURL.Query()
		form.Set("subject", "u-ana")
		resp, err := hc.PostForm(p.URL+"/authorize", form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := resp.Location()
		return loc
	}
	first := approve(follow(base + "/sso/corp/start"))
	code := first.Query().Get("code")
	if resp, err := hc.Get(first.String()); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the first use of the code: %v %v", resp, err)
	}
	second := follow(base + "/sso/corp/start")
	replay := base + "/sso/corp/callback?" + url.Values{"state": {second.Query().Get("state")}, "code": {code}}.Encode()
	resp, err := hc.Get(replay)
	if err != nil {
		t.Fatal(err)
	}
	body := new(strings.Builder)
	bufio.NewReader(resp.Body).WriteTo(body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body.String(), "did not accept this sign-in") {
		t.Fatalf("a replayed code: %d %s", resp.StatusCode, body)
	}
	return code
}
