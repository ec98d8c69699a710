package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// e2bSDKs is node and testbed/e2b, with E2B's SDKs installed there from
// its lock file.
func e2bSDKs(t *testing.T) (node, dir string) {
	t.Helper()
	npm := harness.Tool(t, "npm")
	node = harness.Tool(t, "node")
	dir, _ = filepath.Abs("../e2b")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "e2b")); err != nil {
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}
	return node, dir
}

// E2B's official SDKs from npm (pinned in testbed/e2b's lock file),
// unchanged, against a real paddockd on the real engine: pointed at it
// by what 'paddock e2b env' prints, they make, use, pause, resume, fork
// and kill sandboxes (Paddock boxes) and run code in them, with another
// member's key and a viewer's refused what Paddock refuses them; the
// OpenAI Agents SDK's E2B client runs a task in one; the audit log
// holds what they did under their user.
func TestE2BSDK(t *testing.T) {
	node, dir := e2bSDKs(t)
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// The settings, as a user gets them.
	envCmd := exec.Command(bins.Paddock, "e2b", "env")
	envCmd.Env = cliLoginEnv(t, d)
	var stderr bytes.Buffer
	envCmd.Stderr = &stderr
	out, err := envCmd.Output()
	if err != nil {
		t.Fatalf("paddock e2b env: %v\n%s", err, stderr.String())
	}
	settings := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^export (E2B_[A-Z_]+)=(\S+)$`).FindAllStringSubmatch(string(out), -1) {
		settings[m[1]] = m[2]
	}
	if !regexp.MustCompile(`^e2b_[0-9a-f]{64}$`).MatchString(settings["E2B_API_KEY"]) || settings["E2B_API_URL"] != "http://"+d.Listen+"/e2b" ||
		settings["E2B_SANDBOX_URL"] != "http://"+d.Listen+"/e2b/envd" {
		t.Fatalf("paddock e2b env printed:\n%s", out)
	}
	// E2B_DOMAIN is for a server behind the front door: in local mode it
	// is refused, and no key is made.
	domCmd := exec.Command(bins.Paddock, "e2b", "env", "--domain", "--name", "e2b-domain")
	domCmd.Env = cliLoginEnv(t, d)
	if out, err := domCmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "not a server behind the front door") {
		t.Fatalf("paddock e2b env --domain in local mode: %v\n%s", err, out)
	}
	listCmd := exec.Command(bins.Paddock, "token", "ls")
	listCmd.Env = cliLoginEnv(t, d)
	if out, err := listCmd.CombinedOutput(); err != nil || strings.Contains(string(out), "e2b-domain") {
		t.Fatalf("a refused --domain made a key: %v\n%s", err, out)
	}
	key := func(tok, name string) string {
		c, err := client.New("http://"+d.Listen, tok)
		if err != nil {
			t.Fatal(err)
		}
		k, err := c.CreateE2BKey(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return k.Token
	}
	env := append(os.Environ(), "E2B_API_URL="+settings["E2B_API_URL"], "E2B_SANDBOX_URL="+settings["E2B_SANDBOX_URL"],
		"E2B_API_KEY="+settings["E2B_API_KEY"], "E2B_DOMAIN=", "E2B_DEBUG=",
		"MIA_KEY="+key(memberToken(t, d, "mia"), "e2b"), "VIC_KEY="+key(userToken(t, d, "vic", "viewer"), "e2b"),
		"PADDOCK_URL=http://"+d.Listen, "PADDOCK_TOKEN="+d.Token)
	cmd := exec.CommandContext(ctx, node, "--test", "--test-concurrency=1", "--test-reporter=spec", "sdk.test.mjs", "interp.test.mjs", "agents.test.mjs", "desktop.test.mjs")
	cmd.Dir, cmd.Env = dir, env
	res, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", res)
	if err != nil {
		b, _ := os.ReadFile(d.LogPath())
		t.Fatalf("E2B's SDK against paddockd: %v\npaddockd log (tail):\n%s", err, tail(string(b), 4000))
	}

	// What the SDK did is in the audit log, under the key's user, with
	// the actions of Paddock's own routes.
	es, err := d.Client().Audit(ctx, client.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	seen, user := map[string]bool{}, loginUser(t, d)
	for _, e := range es {
		if e.User == user && e.Result == "ok" {
			seen[e.Action] = true
		}
	}
	for _, a := range []string{"box.create", "job.start", "push", "download", "box.stop", "box.start", "box.remove", "job.signal", "job.input"} {
		if !seen[a] {
			t.Errorf("no audit entry %s of the SDK's user", a)
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}
