package e2e

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/paddock-dev/paddock/policies"
	"github.com/paddock-dev/paddock/testbed/forms"
)

// TestAttacks runs each script under testdata/attacks: one attack of a
// hostile box or member against a real paddockd and real boxes. A script
// that ends with "held" has shown the attack fail (and, where it has one,
// its positive control succeed). Each script is one attack of the suite's
// tally (testbed/testlog counts them with every package's TestAttack…
// and Attack… tests).
func TestAttacks(t *testing.T) {
	files, _ := filepath.Glob("testdata/attacks/*.txtar")
	var mu sync.Mutex
	held, tried := map[string]bool{}, map[string]bool{}
	p := scriptParams("testdata/attacks")
	p.Cmds["held"] = func(ts *testscript.TestScript, neg bool, args []string) {
		mu.Lock()
		defer mu.Unlock()
		held[ts.Getenv("ATTACK")] = true
	}
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		env.Setenv("ATTACK", filepath.Base(env.WorkDir))
		mu.Lock()
		tried[filepath.Base(env.WorkDir)] = true
		mu.Unlock()
		return setup(env)
	}
	if len(files) == 0 {
		t.Fatal("no attack scripts")
	}
	// The scripts run as parallel subtests, which end after Run returns.
	t.Cleanup(func() {
		var names []string
		for n := range held {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Logf("attacks held: %s", strings.Join(names, ", "))
		// Every script must reach its "held": one that loses the line
		// (or ends before it) has shown nothing.
		if len(tried) == 0 {
			t.Error("no attack was tried")
		}
		for n := range tried {
			if !held[n] {
				t.Errorf("attack %s did not say it held", n)
			}
		}
	})
	testscript.Run(t, p)
}

// boxnet BOX: set BOX_PID, BOX_IP and BOX_MAC (BOX upper-cased) from the
// engine, and BRIDGE and BRIDGE_MAC of the box network.
func cmdBoxNet(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: boxnet BOX")
	}
	d := daemonOf(ts)
	out, err := exec.Command("docker", "inspect", "-f",
		"{{.State.Pid}} {{range .NetworkSettings.Networks}}{{.IPAddress}} {{.MacAddress}}{{end}}", d.Instance+"-"+args[0]).Output()
	ts.Check(err)
	f := strings.Fields(string(out))
	if len(f) != 3 {
		ts.Fatalf("box %s: pid, address and MAC expected, got %q", args[0], out)
	}
	v := strings.ToUpper(args[0])
	ts.Setenv(v+"_PID", f[0])
	ts.Setenv(v+"_IP", f[1])
	ts.Setenv(v+"_MAC", f[2])
	n, err := policies.NetworkFor(d.Instance, d.Subnet)
	ts.Check(err)
	mac, err := os.ReadFile("/sys/class/net/" + n.Bridge + "/address")
	ts.Check(err)
	ts.Setenv("BRIDGE", n.Bridge)
	ts.Setenv("BRIDGE_MAC", strings.TrimSpace(string(mac)))
}

// scriptTB lets a script command use the helpers written for tests.
type scriptTB struct{ ts *testscript.TestScript }

func (scriptTB) Helper()             {}
func (s scriptTB) Fatal(args ...any) { s.ts.Fatalf("%s", fmt.Sprint(args...)) }

// member NAME [ROLE]: make a member (or a user of ROLE) through an
// invitation and a device login, and set MEMBER_TOKEN to their API token.
func cmdMember(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 && len(args) != 2 {
		ts.Fatalf("usage: member NAME [ROLE]")
	}
	role := "member"
	if len(args) == 2 {
		role = args[1]
	}
	ts.Setenv("MEMBER_TOKEN", userToken(scriptTB{ts}, daemonOf(ts), args[0], role))
}

// redeem FILE NAME: redeem the invitation link in FILE (as 'paddock user
// invite' prints it) as a browser does, for an account NAME; print the
// answer's status and body. "! redeem" expects it refused.
func cmdRedeem(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: redeem FILE NAME")
	}
	d := daemonOf(ts)
	// The link names the address the CLI used (the contract proxy's):
	// its path, on the daemon's own address.
	link, err := url.Parse(strings.TrimSpace(ts.ReadFile(args[0])))
	if err != nil || !strings.HasPrefix(link.Path, "/") {
		ts.Fatalf("redeem: %q is not a link", ts.ReadFile(args[0]))
	}
	base := "http://" + d.Listen
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	code, body := forms.Post(scriptTB{ts}, b, base, link.Path,
		url.Values{"name": {args[1]}, "password": {"a long password"}, "password2": {"a long password"}})
	fmt.Fprintf(ts.Stdout(), "%d\n%s\n", code, body)
	if (code == http.StatusCreated) == neg {
		ts.Fatalf("redeeming the invitation: %d", code)
	}
}

// TestDockerInBox runs testdata/docker against a daemon whose runc boxes
// may run their own engine (unsafe_docker_in_runc_boxes: what Sysbox gives
// in production, which cannot be installed on the test machines).
func TestDockerInBox(t *testing.T) {
	testscript.Run(t, scriptParams("testdata/docker", "PADDOCK_UNSAFE_DOCKER_IN_RUNC_BOXES=true"))
}

// TestDockerWithBox runs testdata/dockerbox against a daemon whose boxes
// start their engine with them (docker_start = "with-box").
func TestDockerWithBox(t *testing.T) {
	testscript.Run(t, scriptParams("testdata/dockerbox", "PADDOCK_UNSAFE_DOCKER_IN_RUNC_BOXES=true", "PADDOCK_DOCKER_START=with-box"))
}
