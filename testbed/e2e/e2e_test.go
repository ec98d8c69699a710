package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	goimage "image"
	"image/png"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/policies"
	"github.com/paddock-dev/paddock/testbed/harness"
)

var (
	bins  harness.Bins
	image string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if reason := harness.EngineReason(); reason != "" {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "e2e: cannot run in CI:", reason)
			return 1
		}
		// Outside CI the suite skips, and says so as a skipped test (not
		// as a package that passed with no test run).
		noEngine = reason
		flag.Set("test.run", "^TestNoEngine$")
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "paddock-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if bins, err = harness.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if image, err = harness.Image(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	harness.SweepPrefix("pdkt-") // what a killed earlier run left behind
	// The test internet exists before any box does, so that no packet of
	// an egress test can leave the machine.
	stop, err := harness.StartInternet()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	os.Setenv("PADDOCK_TEST_DNS_UPSTREAM", harness.InetDNS)
	os.Setenv("PADDOCK_TEST_BROKER_CA", harness.InetCA())
	return m.Run()
}

// noEngine is why the suite cannot run here, when it cannot.
var noEngine string

// TestNoEngine stands for the whole suite where no engine can run it
// (outside CI): it is skipped, with the reason.
func TestNoEngine(t *testing.T) {
	if noEngine != "" {
		t.Skip("SKIP: the end-to-end suite: " + noEngine)
	}
}

func newDaemon(t interface{ Fatal(...any) }, dir string) *harness.Daemon {
	d, err := harness.NewDaemon(bins, image, dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func startDaemon(t interface{ Fatal(...any) }, dir string) *harness.Daemon {
	d := newDaemon(t, dir)
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams("testdata"))
}

// scriptParams runs the scripts of dir, each against a daemon of its own
// (with daemonEnv in its environment).
func scriptParams(dir string, daemonEnv ...string) testscript.Params {
	return testscript.Params{
		Dir: dir,
		// [pool] says the daemon has a warm pool (poolParams).
		Condition: func(cond string) (bool, error) {
			if cond == "pool" {
				return false, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(env *testscript.Env) error {
			d := newDaemon(env.T(), env.WorkDir)
			d.Env = append(d.Env, daemonEnv...)
			if err := d.Start(); err != nil {
				env.T().Fatal(err)
			}
			env.Values["daemon"] = d
			// The CLI talks to paddockd through a proxy that checks every
			// exchange against the OpenAPI document.
			proxyURL, checker, stopProxy, err := harness.ContractProxy(d)
			if err != nil {
				d.Cleanup()
				env.T().Fatal(err)
			}
			env.Defer(func() {
				stopProxy()
				defer d.Cleanup()
				fails := checker.Failures()
				for _, f := range fails {
					env.T().Log("OpenAPI contract: " + f)
				}
				env.T().Log(checker.Summary())
				if t, ok := env.T().(interface{ Failed() bool }); (ok && t.Failed()) || len(fails) > 0 {
					b, _ := os.ReadFile(d.LogPath())
					env.T().Log("paddockd log:\n" + string(b))
				}
				if len(fails) > 0 {
					env.T().Fatal(fmt.Sprintf("%d exchange(s) differ from the OpenAPI document", len(fails)))
				}
			})
			env.Setenv("PATH", filepath.Dir(bins.Paddock)+string(os.PathListSeparator)+os.Getenv("PATH"))
			env.Setenv("PADDOCK_CONFIG_DIR", filepath.Join(env.WorkDir, ".paddock"))
			env.Setenv("PADDOCK_HOST", proxyURL)
			env.Setenv("PADDOCKD", "http://"+d.Listen)
			env.Setenv("PADDOCK_TOKEN", d.Token)
			env.Setenv("OWNER_TOKEN", d.Token)
			env.Setenv("INSTANCE", d.Instance)
			env.Setenv("STATE_DIR", d.StateDir)
			_, sshPort, _ := net.SplitHostPort(d.SSH)
			env.Setenv("SSHPORT", sshPort)
			env.Setenv("BOXGW", netip.MustParsePrefix(d.Subnet).Addr().Next().String())
			env.Setenv("IMAGE", image)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"daemon":      cmdDaemon,
			"waitbox":     cmdWaitBox,
			"metric":      cmdMetric,
			"eviltar":     cmdEvilTar,
			"rawpush":     cmdRawPush,
			"engine":      cmdEngine,
			"sleep":       cmdSleep,
			"boxip":       cmdBoxIP,
			"boxipv6":     cmdBoxIPv6,
			"hostlisten":  cmdHostListen,
			"waitexec":    cmdWaitExec,
			"waitlog":     cmdWaitLog,
			"portforward": cmdPortForward,
			"png":         cmdPNG,
			"pngdiff":     cmdPNGDiff,
			"boxnet":      cmdBoxNet,
			"member":      cmdMember,
			"redeem":      cmdRedeem,
			"mcp":         cmdMCP,
		},
	}
}

func daemonOf(ts *testscript.TestScript) *harness.Daemon {
	return ts.Value("daemon").(*harness.Daemon)
}

// daemon stop|start|kill: start may add NAME=VALUE settings to the
// daemon's environment for that start only. "! daemon start" expects
// paddockd not to start, and prints why (its last log lines) on stderr.
func cmdDaemon(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || (args[0] != "start" && len(args) != 1) {
		ts.Fatalf("usage: daemon stop|start [NAME=VALUE...]|kill")
	}
	d := daemonOf(ts)
	var err error
	switch args[0] {
	case "stop":
		err = d.Stop()
	case "kill":
		err = d.Kill()
	case "start":
		saved := d.Env
		d.Env = append(slices.Clone(d.Env), args[1:]...)
		err = d.Start()
		d.Env = saved
	default:
		ts.Fatalf("unknown daemon action %q", args[0])
	}
	switch {
	case neg && err == nil:
		ts.Fatalf("daemon %s did what it was expected not to", args[0])
	case neg:
		lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
		fmt.Fprintln(ts.Stderr(), strings.Join(lines[max(0, len(lines)-4):], "\n"))
	case err != nil:
		ts.Fatalf("daemon %s: %v", args[0], err)
	}
}

// waitbox BOX STATUS SECONDS: poll until the box's observed status is STATUS.
func cmdWaitBox(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: waitbox BOX STATUS SECONDS")
	}
	var secs int
	fmt.Sscan(args[2], &secs)
	c := daemonOf(ts).Client()
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		b, err := c.Box(context.Background(), args[0])
		if err == nil {
			last = b.Status + "/" + b.Desired
			if b.Status == args[1] && b.Desired == args[1] {
				return
			}
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	ts.Fatalf("box %s not %s after %ss (last: %s)", args[0], args[1], args[2], last)
}

// metric BOX FIELD MIN MAX SECONDS: poll the box's newest sample (GET
// /v1/metrics) until FIELD (its JSON name) is from MIN to MAX ("-": no
// bound above). The whole wait is a bound: a sample in range ends it.
func cmdMetric(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 5 {
		ts.Fatalf("usage: metric BOX FIELD MIN MAX SECONDS")
	}
	var lo, hi float64
	var secs int
	fmt.Sscan(args[2], &lo)
	hi = math.Inf(1)
	if args[3] != "-" {
		fmt.Sscan(args[3], &hi)
	}
	fmt.Sscan(args[4], &secs)
	c := daemonOf(ts).Client()
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	var seen []string
	for time.Now().Before(deadline) {
		ms, err := c.Metrics(context.Background())
		ts.Check(err)
		for _, m := range ms {
			if m.Box != args[0] {
				continue
			}
			raw, _ := json.Marshal(m)
			var fields map[string]any
			json.Unmarshal(raw, &fields)
			v, ok := fields[args[1]].(float64)
			if !ok {
				ts.Fatalf("metric: a sample has no number %q: %s", args[1], raw)
			}
			if v >= lo && v <= hi {
				ts.Logf("%s %s = %g", args[0], args[1], v)
				return
			}
			if len(seen) < 20 {
				seen = append(seen, fmt.Sprint(v))
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	ts.Fatalf("box %s's %s not from %s to %s within %ss (seen: %s)", args[0], args[1], args[2], args[3], args[4], strings.Join(seen, " "))
}

// waitlog SECONDS REGEXP: poll until a line of the daemon's log matches.
func cmdWaitLog(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: waitlog SECONDS REGEXP")
	}
	var secs int
	fmt.Sscan(args[0], &secs)
	re, err := regexp.Compile("(?m)" + args[1])
	if err != nil {
		ts.Fatalf("waitlog: %v", err)
	}
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	for {
		b, err := os.ReadFile(daemonOf(ts).LogPath())
		if err != nil {
			ts.Fatalf("waitlog: %v", err)
		}
		if m := re.Find(b); m != nil {
			ts.Logf("log: %s", m)
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("no line of the daemon's log matched %q after %ss", args[1], args[0])
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// portforward VAR: a port forward on this machine, as another program
// could set one up: a DNAT of the box network's gateway address, on a
// free port, to the test internet's web server, in an nftables table of
// the test's own (removed when the script ends). VAR is the forwarded
// address and port.
func cmdPortForward(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: portforward VAR")
	}
	d := daemonOf(ts)
	n, err := policies.NetworkFor(d.Instance, d.Subnet)
	ts.Check(err)
	addr, err := harness.FreeAddr()
	ts.Check(err)
	_, port, _ := net.SplitHostPort(addr)
	table := "fwd-" + d.Instance
	rules := fmt.Sprintf("table ip %s {\n chain pre {\n  type nat hook prerouting priority -100;\n  ip daddr %s tcp dport %s dnat to %s:80\n }\n}\n", table, n.Gateway, port, harness.InetWeb)
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		ts.Fatalf("portforward: %v\n%s", err, out)
	}
	ts.Defer(func() { exec.Command("nft", "delete", "table", "ip", table).Run() })
	ts.Setenv(args[0], net.JoinHostPort(n.Gateway.String(), port))
}

// eviltar FILE KIND: write a tar whose one bad entry is of KIND: dotdot,
// abs, symlink (to outside), linkthrough (a file written through a symlink).
func cmdEvilTar(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: eviltar FILE KIND")
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	file := func(name, body string) {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	file("good.txt", "good\n")
	switch args[1] {
	case "dotdot":
		file("../escaped.txt", "bad\n")
	case "abs":
		file("/tmp/escaped.txt", "bad\n")
	case "symlink":
		tw.WriteHeader(&tar.Header{Name: "link", Linkname: "../../../tmp", Typeflag: tar.TypeSymlink})
	case "linkthrough":
		tw.WriteHeader(&tar.Header{Name: "inner", Linkname: "sub", Typeflag: tar.TypeSymlink})
		file("inner/x.txt", "bad\n")
	default:
		ts.Fatalf("unknown kind %q", args[1])
	}
	tw.Close()
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), buf.Bytes(), 0o644))
}

// rawpush BOX DIR FILE: send a tar file as is, bypassing the CLI's checks.
func cmdRawPush(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: rawpush BOX DIR FILE")
	}
	f, err := os.Open(ts.MkAbs(args[2]))
	ts.Check(err)
	defer f.Close()
	err = daemonOf(ts).Client().Push(context.Background(), args[0], args[1], f)
	if err != nil {
		ts.Logf("push: %v", err)
		fmt.Fprintln(ts.Stderr(), err)
	}
	if neg != (err != nil) {
		ts.Fatalf("rawpush: unexpected result %v", err)
	}
}

// engine containers N | engine volume NAME present|absent | engine state
// BOX STATE: check the engine. engine rm BOX, engine restart BOX and engine
// root BOX CMD... change a box behind Paddock's back.
func cmdEngine(ts *testscript.TestScript, neg bool, args []string) {
	inst := daemonOf(ts).Instance
	switch {
	case len(args) == 2 && args[0] == "containers":
		names := usersContainers(ts)
		if fmt.Sprint(len(names)) != args[1] {
			ts.Fatalf("engine has %d box containers %v, want %s", len(names), names, args[1])
		}
	case len(args) == 2 && args[0] == "rm":
		ts.Check(exec.Command("docker", "rm", "-f", boxContainer(ts, args[1])).Run())
	case len(args) == 2 && args[0] == "restart":
		// The engine restarts the box's container, behind Paddock's back.
		if out, err := exec.Command("docker", "restart", "-t", "1", boxContainer(ts, args[1])).CombinedOutput(); err != nil {
			ts.Fatalf("engine restart %s: %v\n%s", args[1], err, out)
		}
	case len(args) > 2 && args[0] == "root":
		// A command as root in the box, behind Paddock's back.
		out, err := exec.Command("docker", append([]string{"exec", "-u", "0", boxContainer(ts, args[1])}, args[2:]...)...).CombinedOutput()
		if err != nil {
			ts.Fatalf("engine root %s: %v\n%s", strings.Join(args[1:], " "), err, out)
		}
	case len(args) == 3 && args[0] == "state":
		out, err := exec.Command("docker", "inspect", "-f", "{{.State.Status}}", boxContainer(ts, args[1])).Output()
		ts.Check(err)
		if got := strings.TrimSpace(string(out)); got != args[2] {
			ts.Fatalf("box %s's container is %s, want %s", args[1], got, args[2])
		}
	case len(args) == 3 && args[0] == "shares":
		// The CPU share the engine keeps for the box's container (what its
		// next start gives it). A box claimed from the warm pool gets a
		// box's usual one shortly after the claim: waited for.
		var got string
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			out, err := exec.Command("docker", "inspect", "-f", "{{.HostConfig.CpuShares}}", boxContainer(ts, args[1])).Output()
			ts.Check(err)
			if got = strings.TrimSpace(string(out)); got == args[2] || time.Now().After(deadline) {
				break
			}
		}
		if got != args[2] {
			ts.Fatalf("box %s's container has CPU shares %s, want %s", args[1], got, args[2])
		}
	case (len(args) == 2 || len(args) == 3 && args[2] == "mini") && args[0] == "tag":
		// A second name for the test image (or, with "mini", for the
		// testbed's small box image: user, paddock-init, busybox),
		// removed when the script ends; "alt" is on the daemon's list of
		// images, any other is not.
		repo, _, _ := strings.Cut(image, ":")
		ref := repo + ":" + args[1] + "-" + inst
		src := image
		if len(args) == 3 {
			root, _ := harness.Root()
			out, err := exec.Command("bash", filepath.Join(root, "testbed", "images.sh"), args[2]).Output()
			if err != nil {
				ts.Fatalf("images.sh %s: %v", args[2], err)
			}
			src = strings.TrimSpace(string(out))
		}
		ts.Check(exec.Command("docker", "tag", src, ref).Run())
		ts.Defer(func() { exec.Command("docker", "rmi", ref).Run() })
		ts.Setenv(strings.ToUpper(args[1])+"_IMAGE", ref)
	case len(args) == 3 && args[0] == "volume":
		err := exec.Command("docker", "volume", "inspect", inst+"-"+args[1]).Run()
		if (err == nil) != (args[2] == "present") {
			ts.Fatalf("volume %s: want %s (inspect: %v)", args[1], args[2], err)
		}
	default:
		ts.Fatalf("usage: engine containers N | engine volume KIND-NAME present|absent | engine state BOX STATE | engine shares BOX N | engine rm BOX | engine root BOX CMD... | engine tag NAME [mini]")
	}
}

// boxContainer names box's container. A box claimed from the warm pool has
// the pool box's container, and its name: the store says which (read
// directly, so that it answers while paddockd is down).
func boxContainer(ts *testscript.TestScript, box string) string {
	d := daemonOf(ts)
	db, err := d.StateDB()
	ts.Check(err)
	defer db.Close()
	var engine string
	if err := db.QueryRow(`SELECT engine FROM boxes WHERE name=?`, box).Scan(&engine); err != nil || engine == "" {
		return d.Instance + "-" + box
	}
	return d.Instance + "-" + engine
}

// usersContainers lists the instance's box containers but those of the
// warm pool's boxes nobody claimed. Every /var/lib/docker volume must
// belong to one of them or to a pool box. A pass makes a box's volume
// before its container and removes it after, and the pool refills in the
// background, so a volume may be seen without its container for a moment:
// one is a leak only if it stays so (orphanSettle).
func usersContainers(ts *testscript.TestScript) []string {
	deadline := time.Now().Add(orphanSettle)
	for {
		out, orphans := boxContainersAndOrphans(ts)
		if len(orphans) == 0 {
			return out
		}
		if time.Now().After(deadline) {
			ts.Fatalf("volume(s) %v belong to no box container (for %v)", orphans, orphanSettle)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// orphanSettle is how long a volume may be without its box container
// before it counts as left behind: far longer than the step between a
// volume and its container.
const orphanSettle = 30 * time.Second

func boxContainersAndOrphans(ts *testscript.TestScript) (out, orphans []string) {
	inst := daemonOf(ts).Instance
	ips, err := harness.ContainerIPs(inst)
	ts.Check(err)
	boxes, err := daemonOf(ts).Client().Boxes(context.Background())
	ts.Check(err)
	claimed := map[string]bool{}
	for _, b := range boxes {
		claimed[b.IP] = true
	}
	keys := map[string]bool{}
	for name, ip := range ips {
		keys[strings.TrimPrefix(name, inst+"-")] = true
		if !strings.HasPrefix(name, inst+"-"+harness.PoolPrefix) || claimed[ip] {
			out = append(out, name)
		}
	}
	vols, err := exec.Command("docker", "volume", "ls", "-q", "--filter", "label=paddock.instance="+inst).Output()
	ts.Check(err)
	for _, v := range strings.Fields(string(vols)) {
		if key, ok := strings.CutPrefix(v, inst+"-boxdata-"); ok && !keys[key] {
			orphans = append(orphans, v)
		}
	}
	return out, orphans
}

func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}

// TestCrashWhileCreating kills paddockd with SIGKILL while boxes are being
// created, starts it again, and checks that the engine converges on exactly
// the declared boxes.
func TestCrashWhileCreating(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	c := d.Client()

	const n = 6
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			_, err := c.CreateBox(context.Background(), api.BoxPost{Name: fmt.Sprintf("crash-%d", i)})
			errs <- err
		}(i)
	}
	// Creates are serialised by the reconciler: kill once the engine has
	// the first container, while the others are still to come.
	deadline := time.Now().Add(60 * time.Second)
	for {
		names, err := harness.Containers(d.Instance)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) >= 1 && len(names) < n {
			break
		}
		if len(names) >= n || time.Now().After(deadline) {
			t.Fatalf("never saw the creates in flight (%d containers)", len(names))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := d.Kill(); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			failed++
		}
	}
	t.Logf("%d of %d creates were cut off by the crash", failed, n)
	if failed == 0 {
		t.Fatal("no create was cut off by the crash: the test did not test one")
	}

	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	c = d.Client()
	boxes, err := c.Boxes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, b := range boxes {
		want[d.Instance+"-"+b.Name] = true
		if b.Status != "running" {
			t.Errorf("box %s is %s after restart (%s)", b.Name, b.Status, b.Error)
		}
	}
	names, err := harness.Containers(d.Instance)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, name := range names {
		got[name] = true
		if !want[name] {
			t.Errorf("orphan container %s: no box declares it", name)
		}
	}
	for name := range want {
		if !got[name] {
			t.Errorf("declared box %s has no container", name)
		}
	}
	if len(boxes) == 0 {
		t.Errorf("no box was declared before the crash; the test did not test anything")
	}
	// And a second pass changes nothing.
	res, err := c.Reconcile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 0 {
		t.Errorf("reconcile after convergence still changes: %s", strings.Join(res.Changes, "; "))
	}
}

// boxip VAR BOX: set VAR to the box's address.
func cmdBoxIP(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: boxip VAR BOX")
	}
	b, err := daemonOf(ts).Client().Box(context.Background(), args[1])
	ts.Check(err)
	if b.IP == "" {
		ts.Fatalf("box %s has no address", args[1])
	}
	ts.Setenv(args[0], b.IP)
}

// boxipv6 VAR BOX: turn IPv6 on in the box's network namespace, as a box
// whose root holds capabilities there (Sysbox) could, and set VAR to its
// link-local address once duplicate address detection is over.
func cmdBoxIPv6(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: boxipv6 VAR BOX")
	}
	pid, err := exec.Command("docker", "inspect", "-f", "{{.State.Pid}}", boxContainer(ts, args[1])).Output()
	ts.Check(err)
	ns := []string{"-t", strings.TrimSpace(string(pid)), "-n"}
	out, err := exec.Command("nsenter", append(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.lo.disable_ipv6=0", "net.ipv6.conf.eth0.disable_ipv6=0")...).CombinedOutput()
	if err != nil {
		ts.Fatalf("enabling IPv6 in box %s: %v\n%s", args[1], err, out)
	}
	for range 50 {
		out, err := exec.Command("nsenter", append(ns, "ip", "-6", "-o", "addr", "show", "dev", "eth0", "scope", "link")...).Output()
		ts.Check(err)
		if f := strings.Fields(string(out)); len(f) >= 4 && !strings.Contains(string(out), "tentative") {
			ts.Setenv(args[0], strings.Split(f[3], "/")[0])
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	ts.Fatalf("box %s has no usable link-local address", args[1])
}

// hostlisten VAR: a TCP service on all of the host's addresses, on a port
// the kernel chose (set in $VAR, so that runs sharing the machine do not
// collide), answering "host-service", until the script ends.
func cmdHostListen(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: hostlisten VAR")
	}
	l, err := net.Listen("tcp", "0.0.0.0:0")
	ts.Check(err)
	ts.Defer(func() { l.Close() })
	ts.Setenv(args[0], strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.0 200 OK\r\n\r\nhost-service\n")
			c.Close()
		}
	}()
}

// waitexec SECONDS CMD...: run CMD until it succeeds (or, negated, fails).
func cmdWaitExec(ts *testscript.TestScript, neg bool, args []string) {
	secs, err := strconv.Atoi(args[0])
	ts.Check(err)
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	var out []byte
	for {
		name := args[1]
		if name == "paddock" {
			name = bins.Paddock
		}
		cmd := exec.Command(name, args[2:]...)
		cmd.Env = append(os.Environ(), "PADDOCK_HOST="+ts.Getenv("PADDOCK_HOST"), "PADDOCK_TOKEN="+ts.Getenv("PADDOCK_TOKEN"),
			"PADDOCK_CONFIG_DIR="+ts.Getenv("PADDOCK_CONFIG_DIR"), "PATH="+ts.Getenv("PATH"))
		cmd.Dir = ts.Getenv("WORK")
		out, err = cmd.CombinedOutput()
		if (err == nil) != neg {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%v did not %s within %ds: %v\n%s", args[1:], map[bool]string{false: "succeed", true: "fail"}[neg], secs, err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func readPNG(ts *testscript.TestScript, name string) goimage.Image {
	f, err := os.Open(ts.MkAbs(name))
	ts.Check(err)
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		ts.Fatalf("%s is not a PNG: %v", name, err)
	}
	return img
}

// png FILE WIDTH HEIGHT: FILE is a PNG of that size.
func cmdPNG(ts *testscript.TestScript, neg bool, args []string) {
	img := readPNG(ts, args[0])
	if got := fmt.Sprintf("%dx%d", img.Bounds().Dx(), img.Bounds().Dy()); got != args[1]+"x"+args[2] {
		ts.Fatalf("%s is %s, want %sx%s", args[0], got, args[1], args[2])
	}
}

// pngdiff A B X Y MIN: the images differ in at least MIN pixels, and at
// (X, Y).
func cmdPNGDiff(ts *testscript.TestScript, neg bool, args []string) {
	a, b := readPNG(ts, args[0]), readPNG(ts, args[1])
	x, _ := strconv.Atoi(args[2])
	y, _ := strconv.Atoi(args[3])
	minDiff, _ := strconv.Atoi(args[4])
	same := func(x, y int) bool {
		r1, g1, b1, _ := a.At(x, y).RGBA()
		r2, g2, b2, _ := b.At(x, y).RGBA()
		return r1 == r2 && g1 == g2 && b1 == b2
	}
	n := 0
	for yy := a.Bounds().Min.Y; yy < a.Bounds().Max.Y; yy++ {
		for xx := a.Bounds().Min.X; xx < a.Bounds().Max.X; xx++ {
			if !same(xx, yy) {
				n++
			}
		}
	}
	ts.Logf("%d pixels differ", n)
	if n < minDiff || same(x, y) {
		ts.Fatalf("%s and %s: %d pixels differ (want at least %d), and (%d,%d) same=%v", args[0], args[1], n, minDiff, x, y, same(x, y))
	}
}

// A port taken between the harness picking it and paddockd binding it
// (another test's listener, or an outgoing connection's port: CI saw one)
// does not fail a daemon's first start: it starts on fresh ports.
func TestDaemonStartsPastATakenPort(t *testing.T) {
	d := newDaemon(t, t.TempDir())
	taken := d.Listen
	l, err := net.Listen("tcp", taken)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Cleanup()
	if d.Listen == taken {
		t.Fatalf("started on the taken %s", taken)
	}
	if _, err := d.Client().Whoami(context.Background()); err != nil {
		t.Fatal(err)
	}
}
