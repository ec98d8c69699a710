package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/policies"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// The Docker engine restarts under a running paddockd, as an engine
// upgrade or a crash and its restart would do. The engine stops every
// container on the way down and starts none again; within one reconcile
// paddockd brings the boxes back to what is declared: the running ones
// run again (their files kept) behind their own rules, found anew on
// their new ports, and the stopped one stays stopped. `paddock ls` says
// so.
//
// The engine restarted is one of the test's own (harness.OwnEngine, with
// the small box image), never the machine's: nothing else that uses the
// machine's engine is disturbed.
func TestEngineRestart(t *testing.T) {
	mini := imageTag(t, "mini")
	dir, err := os.MkdirTemp("", "pdk-eng-")
	if err != nil {
		t.Fatal(err)
	}
	eng, err := harness.StartOwnEngine(dir, mini)
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs last: after the daemon's cleanup.
	t.Cleanup(func() { eng.Stop() })
	d, cli, must := daemonReconcilingEvery(t, "3s", func(d *harness.Daemon) {
		d.Image = mini
		d.Engine = eng.Host
	})
	n, err := policies.NetworkFor(d.Instance, d.Subnet)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Forward(n.Bridge); err != nil {
		t.Fatal(err)
	}
	must("policy", "new", "only", "--allow-domain", "allowed.test")
	must("new", "--name", "up", "--policy", "only")
	must("new", "--name", "open")
	must("new", "--name", "down")
	must("stop", "down")
	must("exec", "up", "--", "sh", "-c", "echo kept > /config/kept")

	// fenced checks each running box's rules by what it can reach.
	fenced := func(when string) {
		t.Helper()
		reach := func(box, url string, want bool) {
			t.Helper()
			out, err := cli("exec", box, "--", "busybox", "wget", "-q", "-T", "3", "-O", "-", url)
			if (err == nil) != want {
				t.Errorf("%s: box %s reaching %s: err %v, want reached=%v\n%s", when, box, url, err, want, out)
			}
		}
		reach("up", "http://allowed.test/", true)
		reach("up", "http://198.18.2.2/", false)
		reach("open", "http://198.18.2.2/", true)
		reach("open", "http://169.254.169.254/", false)
	}
	fenced("before the restart")

	before := time.Now()
	if err := eng.Restart(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	t.Logf("the engine stopped and answered again in %s", back.Sub(before).Round(time.Millisecond))

	type row struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	}
	want := map[string]string{"up": "running", "open": "running", "down": "stopped"}
	// lsRight says whether paddock ls shows the declared states and the
	// engine agrees with it.
	lsRight := func() bool {
		out, err := cli("ls", "--json")
		if err != nil {
			return false
		}
		var rows []row
		if json.Unmarshal([]byte(out), &rows) != nil {
			return false
		}
		got := map[string]string{}
		for _, r := range rows {
			got[r.Name] = r.Status
		}
		for name, st := range want {
			if got[name] != st {
				return false
			}
			if status, _ := containerState(d, name); (status == "running") != (st == "running") {
				return false
			}
		}
		return len(got) == len(want)
	}
	waitFor(t, 60*time.Second, "paddock ls and the engine to show the declared states", lsRight)
	t.Logf("paddock ls and the engine were right %s after the engine answered", time.Since(back).Round(time.Millisecond))

	// The restart did stop them (else the test tested nothing), and
	// paddockd started them again.
	for _, box := range []string{"up", "open"} {
		status, at := containerState(d, box)
		if status != "running" || at.Before(before) {
			t.Errorf("box %s's container: %s, started %s; want running, started after the restart at %s", box, status, at, before)
		}
	}
	if status, _ := containerState(d, "down"); status == "running" {
		t.Errorf("box down was started by the restart: %s", status)
	}
	if out := must("exec", "up", "--", "cat", "/config/kept"); strings.TrimSpace(out) != "kept" {
		t.Errorf("box up's file after the restart: %q", out)
	}
	fenced("after the restart")
	// A command's timeout still ends it, and what it started, in a box
	// whose container the engine restarted.
	out, err := cli("exec", "--timeout", "2s", "up", "--", "sh", "-c", "sleep 3600 & sleep 3601; echo not-reached")
	if err == nil || strings.Contains(out, "not-reached") || !strings.Contains(out, "ran out of time") {
		t.Errorf("a timeout after the restart: %v\n%s", err, out)
	}
	if left := must("exec", "up", "--", "sh", "-c", `for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null; echo; done | grep -E "^sleep 360[01] $" || echo no-sleep-left`); strings.TrimSpace(left) != "no-sleep-left" {
		t.Errorf("after the timeout, in the box: %q", left)
	}
}

// A box changed under paddockd (its container killed, or removed, by
// another hand) is put back at once, not at the next reconcile: paddockd
// follows the engine's events. The reconcile interval here is an hour,
// so only the events can do it.
func TestEngineEventsRepairAtOnce(t *testing.T) {
	d, _, must := daemonReconcilingEvery(t, "1h")
	must("new", "--name", "killed")
	must("new", "--name", "removed")
	before := time.Now()
	if out, err := exec.Command("docker", "kill", d.Instance+"-killed").CombinedOutput(); err != nil {
		t.Fatalf("docker kill: %v\n%s", err, out)
	}
	if out, err := exec.Command("docker", "rm", "-f", d.Instance+"-removed").CombinedOutput(); err != nil {
		t.Fatalf("docker rm: %v\n%s", err, out)
	}
	for _, box := range []string{"killed", "removed"} {
		waitFor(t, 60*time.Second, "box "+box+" to run again", func() bool {
			status, at := containerState(d, box)
			return status == "running" && at.After(before)
		})
	}
	t.Logf("both boxes ran again %s after the kill and the removal", time.Since(before).Round(time.Millisecond))
}

// daemonReconcilingEvery starts a daemon whose reconciler runs every
// interval, and gives the CLI against it: cli returns its output and
// error, must fails the test on an error.
func daemonReconcilingEvery(t *testing.T, interval string, opts ...func(*harness.Daemon)) (*harness.Daemon, func(...string) (string, error), func(...string) string) {
	t.Helper()
	d := newDaemon(t, t.TempDir())
	d.Config = fmt.Sprintf("reconcile_interval = %q\n", interval) + harness.TestConfig
	for _, o := range opts {
		o(d)
	}
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
	cliEnv := append(os.Environ(), d.CLIEnv()...)
	cliEnv = append(cliEnv, "PADDOCK_CONFIG_DIR="+filepath.Join(t.TempDir(), "cli"))
	cli := func(args ...string) (string, error) {
		cmd := exec.Command(bins.Paddock, args...)
		cmd.Env = cliEnv
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	return d, cli, mustOf(t, cli)
}

// mustOf is cli that ends test t when the command fails.
func mustOf(t *testing.T, cli func(...string) (string, error)) func(...string) string {
	return func(args ...string) string {
		t.Helper()
		out, err := cli(args...)
		if err != nil {
			t.Fatalf("paddock %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
}

// containerState is what the engine says of a box's container: its
// status ("absent" when there is none) and when it last started.
func containerState(d *harness.Daemon, box string) (string, time.Time) {
	args := []string{"inspect", "-f", "{{.State.Status}} {{.State.StartedAt}}", d.Instance + "-" + box}
	if d.Engine != "" {
		args = append([]string{"-H", d.Engine}, args...)
	}
	out, err := exec.Command("docker", args...).Output()
	if err != nil {
		return "absent", time.Time{}
	}
	status, at, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	started, _ := time.Parse(time.RFC3339Nano, at)
	return status, started
}
