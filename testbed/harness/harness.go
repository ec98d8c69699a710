// Package harness runs Paddock for real on a test machine: it builds the
// paddock and paddockd binaries, makes sure the Docker engine and the test
// images are there (testbed/engine.sh, testbed/images.sh), and starts
// paddockd daemons in local mode, each with its own instance name, state
// directory and port, so that tests can run side by side on one engine and
// clean up exactly what they made. The end-to-end tests and the benchmarks
// use it.
package harness

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/client"

	_ "modernc.org/sqlite"
)

// Root is the repository's top directory.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Bins are the built binaries.
type Bins struct {
	Paddock  string
	Paddockd string
}

// TestVersion is the release the tests' binaries are stamped with.
const TestVersion = "e2e-test"

// Build compiles both binaries into dir, stamped with TestVersion, without
// cgo as testbed/dist.sh builds the ones that ship: the tests and the bench
// run what users get (a CLI linked with cgo starts 3 ms slower here, which
// the bench would count on every command).
//
// With PADDOCK_TEST_RACE=1 they are built with the race detector instead
// (which needs cgo), and each paddockd started stops at its first data
// race, its report kept in RaceDir: the e2e tests then look for races in
// the daemon under their real loads. The suite does not run so by
// default: the detector makes paddockd several times slower.
func Build(dir string) (Bins, error) {
	root, err := Root()
	if err != nil {
		return Bins{}, err
	}
	b := Bins{Paddock: filepath.Join(dir, "paddock"), Paddockd: filepath.Join(dir, "paddockd")}
	args, cgo := []string{"build"}, "CGO_ENABLED=0"
	if Racing() {
		args, cgo = append(args, "-race"), "CGO_ENABLED=1"
	}
	args = append(args, "-ldflags", "-X github.com/paddock-dev/paddock/appliance/version.Version="+TestVersion,
		"-o", dir+string(os.PathSeparator), "./cmd/paddock", "./cmd/paddockd")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), cgo)
	if out, err := cmd.CombinedOutput(); err != nil {
		return b, fmt.Errorf("go build: %v\n%s", err, out)
	}
	return b, nil
}

// Racing says whether the binaries are built with the race detector.
func Racing() bool { return os.Getenv("PADDOCK_TEST_RACE") == "1" }

// RaceDir holds the race detector's reports, paddockd.PID each.
const RaceDir = RunsDir + "/race"

// EngineReason says why the engine cannot be used, or "" when it can.
func EngineReason() string {
	if os.Geteuid() != 0 {
		return "not root: the testbed needs to run the Docker engine"
	}
	if _, err := exec.LookPath("docker"); err != nil {
		if _, err := exec.LookPath("apt-get"); err != nil {
			return "no docker and no apt-get to install it"
		}
	}
	return ""
}

var (
	imageOnce sync.Once
	image     string
	imageErr  error
)

// Image makes sure the engine runs and the test box image is built, and
// returns the image's tag.
func Image() (string, error) {
	imageOnce.Do(func() {
		root, err := Root()
		if err != nil {
			imageErr = err
			return
		}
		if out, err := exec.Command("bash", filepath.Join(root, "testbed", "engine.sh")).CombinedOutput(); err != nil {
			imageErr = fmt.Errorf("testbed/engine.sh: %v\n%s", err, out)
			return
		}
		cmd := exec.Command("bash", filepath.Join(root, "testbed", "images.sh"))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			imageErr = fmt.Errorf("testbed/images.sh: %v\n%s", err, stderr.String())
			return
		}
		image = strings.TrimSpace(string(out))
	})
	return image, imageErr
}

// Daemon is one paddockd in local mode.
type Daemon struct {
	Bins     Bins
	Image    string
	Instance string
	StateDir string
	Socket   string
	Listen   string
	Token    string
	// Subnet is the box network's.
	Subnet string
	// SSH is the SSH gateway's address.
	SSH string
	// Extra environment for paddockd (PADDOCK_* settings).
	Env []string
	// Config is the TOML configuration file's content (default: TestConfig).
	Config string
	// Images are other images boxes may be made from (the configuration's
	// images, beside the test image's second name).
	Images []string
	// Engine is the Docker engine's address (docker_host) when it is not
	// the machine's (an OwnEngine's).
	Engine string

	cmd     *exec.Cmd
	done    chan error
	exit    atomic.Pointer[error] // how the last started paddockd exited, once it has
	log     *os.File
	started bool // once: its addresses are in use by its callers
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// FreeAddr is a loopback address with a port nothing listens on.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

var (
	subnetMu   sync.Mutex
	nextSubnet = int(time.Now().UnixNano() % 256)
)

// FreeSubnet hands each daemon, test driver and cluster hub its own /24,
// one that overlaps no network the engine already has, no address of this
// machine's interfaces (a Paddock running on this machine with the
// default 10.213.0.0/16 takes that whole range; the tests then use
// 10.215.0.0/16 and on; 10.214.0.0/16, the default of node_subnets, is
// left out) and none another live run or test package chose and has not
// made yet (chosen under a lock shared by them all, and listed in the
// run's file).
func FreeSubnet() string {
	subnetMu.Lock()
	defer subnetMu.Unlock()
	if err := os.MkdirAll(RunsDir, 0o755); err == nil {
		if l, err := lockFile(filepath.Join(RunsDir, "subnets.lock"), syscall.LOCK_EX); err == nil {
			defer l.Close()
		}
	}
	var used []netip.Prefix
	for _, s := range claimedSubnets() {
		if p, err := netip.ParsePrefix(s); err == nil {
			used = append(used, p)
		}
	}
	// Addresses on this machine's interfaces too: a bridge that an engine
	// left (one whose files are gone) still takes the route.
	if ifs, err := net.Interfaces(); err == nil {
		for _, ifc := range ifs {
			addrs, _ := ifc.Addrs()
			for _, a := range addrs {
				if p, err := netip.ParsePrefix(a.String()); err == nil {
					used = append(used, p.Masked())
				}
			}
		}
	}
	out, _ := exec.Command("sh", "-c", `docker network ls -q | xargs -r docker network inspect --format '{{range .IPAM.Config}}{{.Subnet}} {{end}}'`).Output()
	for _, s := range strings.Fields(string(out)) {
		if p, err := netip.ParsePrefix(s); err == nil {
			used = append(used, p)
		}
	}
	free := func(p netip.Prefix) bool {
		for _, u := range used {
			if u.Overlaps(p) {
				return false
			}
		}
		return true
	}
	for second := 213; second < 224; second++ {
		if second == 214 {
			continue
		}
		for i := 0; i < 256; i++ {
			nextSubnet = (nextSubnet + 1) % 256
			p := netip.MustParsePrefix(fmt.Sprintf("10.%d.%d.0/24", second, nextSubnet))
			if free(p) {
				claim("subnet " + p.String())
				return p.String()
			}
		}
	}
	return fmt.Sprintf("10.213.%d.0/24", nextSubnet)
}

// SweepPrefix removes what earlier test runs left behind: every object of
// every instance whose name starts with prefix and that no live run holds
// (see RunsDir), so that two runs on one machine leave each other alone.
func SweepPrefix(prefix string) {
	live := liveInstances()
	out, _ := exec.Command("sh", "-c", `docker ps -a --format '{{.Label "paddock.instance"}}'; docker volume ls --format '{{.Label "paddock.instance"}}'; docker network ls --format '{{.Name}}'`).Output()
	seen := map[string]bool{}
	for _, inst := range strings.Fields(string(out)) {
		if strings.HasPrefix(inst, prefix) && !seen[inst] && !live[inst] {
			seen[inst] = true
			Sweep(inst)
		}
	}
	// The install test's servers (containers named PREFIX inst-N, with
	// their volumes) that a run killed before its cleanup left running:
	// each is a whole server, systemd, engine and paddockd, that slows
	// every later run. Only when no other run is live: they carry no
	// instance of their own to tell whose they are.
	named, _ := exec.Command("sh", "-c", `docker ps -a --format '{{.Names}}'; docker volume ls --format '{{.Name}}'`).Output()
	for _, n := range strings.Fields(string(named)) {
		if len(live) == 0 && strings.HasPrefix(n, prefix+"inst-") {
			exec.Command("docker", "rm", "-f", "-v", n).Run()
			exec.Command("docker", "volume", "rm", n).Run()
		}
	}
	tables, _ := exec.Command("nft", "list", "tables").Output()
	for _, line := range strings.Split(string(tables), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "table" && strings.HasPrefix(f[2], prefix) && !live[f[2]] {
			exec.Command("nft", "delete", "table", f[1], f[2]).Run()
		}
	}
}

// AltImage is the second name of the test image that a daemon's boxes may
// use besides its default.
func AltImage(image, instance string) string {
	repo, _, _ := strings.Cut(image, ":")
	return repo + ":alt-" + instance
}

// TestConfig adds to the built-in agents four test agents: "echo", that
// requires the secret TEST_KEY and prints its task and whether it got the
// secret; "say", that needs none and passes TEST_KEY when it is set; and
// "sub", that runs on its secret SUB_KEY or on its own login in the box
// (~/.sub/login), as the subscription agents do, and has neither at
// first; "api", that sends its task to the fake model API of the test
// internet as a model agent would, at $MODEL_BASE_URL (set by the
// broker) with $MODEL_KEY.
const TestConfig = `
# Boxes ask for a desktop when a test needs one: the tests run many boxes.
desktop_default = false
# No warm pool but where a test asks for one (PADDOCK_WARM_POOL__SMALL).
warm_pool = { small = 0 }
# Bounds a test can reach quickly (bounds.txtar).
job_log_max_mib = 1
disk_check_interval = "2s"
# A box started again after its disk bound is measured again after 10 s
# (five checks), not a minute (bounds.txtar waits for it).
disk_grace = "1s"
# Idle stops are looked at every second (idle.txtar's are seconds long),
# and a box using 1% of a CPU is in use: a busy box passes that on any
# machine, however loaded, and an idle one stays far under it.
idle_check_interval = "1s"
idle_cpu = 0.01
[types.small]
pids = 512
disk_gib = 0
# Only medium boxes are measured (bounds.txtar): a small bound reached fast.
[types.medium]
disk_gib = 0.05
[types.large]
disk_gib = 0
[agents.echo]
command = ["sh", "-c", "echo \"task=$1\"; echo \"key=${TEST_KEY:+set}\"; test -n \"$TEST_KEY\"", "agent"]
secrets = ["TEST_KEY"]
required = ["TEST_KEY"]
[agents.say]
command = ["sh", "-c", "echo \"said=$1 key=${TEST_KEY:+set}\"", "agent"]
secrets = ["TEST_KEY"]
[agents.sub]
command = ["sh", "-c", "echo \"sub=$1\"", "agent"]
secrets = ["SUB_KEY"]
logins = [".sub/login"]
[agents.api]
command = ["sh", "-c", "curl -sS -X POST \"$MODEL_BASE_URL/v1/messages\" -H \"x-api-key: $MODEL_KEY\" --data-binary \"$1\"", "agent"]
secrets = ["MODEL_KEY"]
required = ["MODEL_KEY"]
base_urls = { MODEL_BASE_URL = "${MODEL_KEY}" }
`

// NewDaemon prepares (does not start) a daemon whose state lives in dir.
func NewDaemon(bins Bins, image, dir string) (*Daemon, error) {
	id := "pdkt-" + randHex(4)
	if err := claim(id); err != nil {
		return nil, err
	}
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	sshAddr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	return &Daemon{
		Bins: bins, Image: image, Instance: id, Subnet: FreeSubnet(), SSH: sshAddr,
		StateDir: filepath.Join(dir, "state"),
		Socket:   filepath.Join(os.TempDir(), id+".sock"),
		Listen:   addr,
	}, nil
}

// LogPath is where the daemon's stderr goes.
func (d *Daemon) LogPath() string { return filepath.Join(filepath.Dir(d.StateDir), d.Instance+".log") }

// Start starts paddockd and waits until its API answers.
//
// The first start of a daemon whose port was taken between FreeAddr and
// paddockd's bind (by another test's listener or an outgoing connection's
// port) is tried again on fresh ports, up to three times; later starts
// keep their addresses, which scripts and clients already hold.
func (d *Daemon) Start() error {
	for try := 0; ; try++ {
		err := d.start()
		if err == nil || d.started || try == 2 || !strings.Contains(err.Error(), "address already in use") {
			if err == nil {
				d.started = true
			}
			return err
		}
		if d.Listen, err = FreeAddr(); err != nil {
			return err
		}
		if d.SSH, err = FreeAddr(); err != nil {
			return err
		}
	}
}

func (d *Daemon) start() error {
	if d.cmd != nil {
		return errors.New("daemon already running")
	}
	if err := os.MkdirAll(filepath.Dir(d.StateDir), 0o755); err != nil {
		return err
	}
	log, err := os.OpenFile(d.LogPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	conf := filepath.Join(filepath.Dir(d.StateDir), d.Instance+".toml")
	if d.Config == "" {
		d.Config = TestConfig
	}
	// The second name a script may give the test image (engine tag alt)
	// is on the daemon's list of images.
	images := fmt.Sprintf("%q", AltImage(d.Image, d.Instance))
	for _, im := range d.Images {
		images += fmt.Sprintf(", %q", im)
	}
	if err := os.WriteFile(conf, []byte("images = ["+images+"]\n"+d.Config), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(d.Bins.Paddockd, "--local", "--config", conf,
		"--state-dir", d.StateDir, "--socket", d.Socket, "--listen", d.Listen,
		"--instance", d.Instance, "--runtime", "runc", "--image", d.Image, "--log-level", "debug")
	cmd.Env = append(os.Environ(), "PADDOCK_SUBNET="+d.Subnet, "PADDOCK_SSH_LISTEN="+d.SSH)
	if d.Engine != "" {
		cmd.Env = append(cmd.Env, "PADDOCK_DOCKER_HOST="+d.Engine)
	}
	if up := os.Getenv("PADDOCK_TEST_DNS_UPSTREAM"); up != "" {
		cmd.Env = append(cmd.Env, "PADDOCK_DNS_UPSTREAM="+up)
	}
	if ca := os.Getenv("PADDOCK_TEST_BROKER_CA"); ca != "" {
		cmd.Env = append(cmd.Env, "PADDOCK_BROKER_CA_FILE="+ca)
	}
	if Racing() && os.Getenv("GORACE") == "" {
		if err := os.MkdirAll(RaceDir, 0o755); err != nil {
			return err
		}
		cmd.Env = append(cmd.Env, "GORACE=halt_on_error=1 log_path="+RaceDir+"/paddockd")
	}
	cmd.Env = append(cmd.Env, d.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	d.cmd, d.log, d.done = cmd, log, make(chan error, 1)
	d.exit.Store(nil)
	go func() {
		err := cmd.Wait()
		d.exit.Store(&err)
		d.done <- err
	}()

	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-d.done:
			d.cmd = nil
			log.Close()
			b, _ := os.ReadFile(d.LogPath())
			return fmt.Errorf("paddockd exited at start (%v):\n%s", err, b)
		default:
		}
		if tok, err := os.ReadFile(filepath.Join(d.StateDir, "local.token")); err == nil {
			d.Token = strings.TrimSpace(string(tok))
			c, err := client.New("http://"+d.Listen, d.Token)
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, err = c.Whoami(ctx)
				cancel()
				if err == nil {
					return nil
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	d.Kill()
	return errors.New("paddockd did not answer within 60s; see " + d.LogPath())
}

func (d *Daemon) signal(sig syscall.Signal) error {
	if d.cmd == nil {
		return nil
	}
	d.cmd.Process.Signal(sig)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
	}
	d.cmd = nil
	d.log.Close()
	return nil
}

// Exited says whether the paddockd last started has exited, and how
// (cmd.Wait's error: nil for exit 0): what a failed request's caller
// needs to tell a broken connection from a daemon that died (a SIGKILL
// writes nothing in its log).
func (d *Daemon) Exited() (bool, error) {
	if e := d.exit.Load(); e != nil {
		return true, *e
	}
	return false, nil
}

// Stop stops the daemon with SIGTERM.
func (d *Daemon) Stop() error { return d.signal(syscall.SIGTERM) }

// Kill stops the daemon with SIGKILL, as a crash would.
func (d *Daemon) Kill() error { return d.signal(syscall.SIGKILL) }

// StateDB opens the daemon's database read-only: the store is the truth of
// what is declared (the warm pool, and which engine name each box has),
// and it answers while paddockd is down.
func (d *Daemon) StateDB() (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+filepath.Join(d.StateDir, "paddock.db")+"?mode=ro&_pragma=busy_timeout(5000)")
}

// WaitPool waits until the daemon's log says n warm pool boxes became
// ready since it was first started.
func (d *Daemon) WaitPool(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(d.LogPath())
		if err != nil {
			return err
		}
		got := strings.Count(string(b), "warm pool box ready")
		if got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %s for %d warm pool boxes to be ready; %d were", timeout, n, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Client is an API client for the daemon.
func (d *Daemon) Client() *client.Client {
	c, err := client.New("http://"+d.Listen, d.Token)
	if err != nil {
		panic(err)
	}
	return c
}

// CLIEnv is the environment under which the paddock CLI talks to the daemon.
func (d *Daemon) CLIEnv() []string {
	return []string{"PADDOCK_HOST=http://" + d.Listen, "PADDOCK_TOKEN=" + d.Token}
}

// Cleanup stops the daemon, removes every engine object of its instance,
// and its nftables table (paddockd --cleanup).
func (d *Daemon) Cleanup() {
	d.Stop()
	Unmount(d.StateDir)
	Sweep(d.Instance)
	os.Remove(d.Socket)
	exec.Command(d.Bins.Paddockd, "--cleanup", "--config", os.DevNull, "--instance", d.Instance).Run()
}

// Sweep removes the containers, volumes, images and network labelled with an
// instance name.
func Sweep(instance string) {
	f := "label=paddock.instance=" + instance
	ids := func(args ...string) []string {
		out, _ := exec.Command("docker", args...).Output()
		return strings.Fields(string(out))
	}
	if c := ids("ps", "-aq", "--filter", f); len(c) > 0 {
		exec.Command("docker", append([]string{"rm", "-f"}, c...)...).Run()
	}
	if v := ids("volume", "ls", "-q", "--filter", f); len(v) > 0 {
		exec.Command("docker", append([]string{"volume", "rm", "-f"}, v...)...).Run()
	}
	if i := ids("images", "-q", "--filter", f); len(i) > 0 {
		exec.Command("docker", append([]string{"rmi", "-f"}, i...)...).Run()
	}
	exec.Command("docker", "network", "rm", instance).Run()
}

// Containers lists the names of the instance's box containers.
func Containers(instance string) ([]string, error) {
	out, err := exec.Command("docker", "ps", "-a", "--format", "{{.Names}}", "--filter", "label=paddock.instance="+instance, "--filter", "label=paddock.kind=box").Output()
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// ContainerIPs maps each box container of an instance to its fixed
// address on the box network (a box claimed from the warm pool has the
// pool box's container, and name, so tests find a box's by its address).
func ContainerIPs(instance string) (map[string]string, error) {
	names, err := Containers(instance)
	if err != nil || len(names) == 0 {
		return map[string]string{}, err
	}
	out, err := exec.Command("docker", append([]string{"inspect", "-f",
		`{{.Name}} {{range .NetworkSettings.Networks}}{{if .IPAMConfig}}{{.IPAMConfig.IPv4Address}}{{end}}{{end}}`}, names...)...).Output()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			m[strings.TrimPrefix(f[0], "/")] = f[1]
		}
	}
	return m, nil
}

// PoolPrefix starts the engine names of warm pool boxes (after the
// instance and "-").
const PoolPrefix = "pool-"

// Tool finds a program a test needs. Outside CI a missing one skips the
// test, saying so; in CI (CI=true), where the testbed installs everything,
// it fails the test.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing (testbed/engine.sh installs it)", name)
	}
	t.Skipf("SKIP: no %s", name)
	return ""
}

// NeedRoot is Tool for what needs root: outside CI a test not run as root
// skips, saying why; in CI (CI=true), where tests run as root, it fails.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("not root: %s", why)
	}
	t.Skipf("SKIP: needs root (%s)", why)
}

// PID is the daemon's process id (0 when it is not running).
func (d *Daemon) PID() int {
	if d.cmd == nil || d.cmd.Process == nil {
		return 0
	}
	return d.cmd.Process.Pid
}

// RSS is the daemon's resident memory in bytes (0 when it is not running).
func (d *Daemon) RSS() int64 {
	pid := d.PID()
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			var kb int64
			fmt.Sscan(f[1], &kb)
			return kb << 10
		}
	}
	return 0
}

// Unmount lets go of every mount under dir (the bucket mounts a killed
// paddockd left), so that the test's folder can be removed.
func Unmount(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil || dir == "" {
		return
	}
	var under []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			under = append(under, f[4])
		}
	}
	// The deepest first.
	sort.Slice(under, func(i, j int) bool { return len(under[i]) > len(under[j]) })
	for _, mp := range under {
		exec.Command("umount", "-l", mp).Run()
	}
}
