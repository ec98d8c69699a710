package harness

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The testbed's internet: a network namespace that owns the test ranges, so
// that no test packet can leave this machine, whatever the rules under test
// do (see TESTBED.md).
const (
	InetNS  = "pdk-inet"
	InetDNS = "198.18.0.53:53"
	InetWeb = "198.18.0.10"
	// InetModelAPI is the fake model API's address (HTTPS, port 443;
	// api.model.test).
	InetModelAPI = "198.18.5.5"
	inetHostSide = "pdk-inet0"
)

// InetRoutes are routed from the host into the namespace: the test
// ranges, and the cloud metadata and host-agent addresses, which the
// namespace also answers on, so that a test of their rules reaches no
// other machine; and one private address (InetPrivateAPI), where the
// fake model API answers too: what the credential broker must never
// send a secret to, though something listens there.
var InetRoutes = []string{"198.18.0.0/16", "169.254.169.254/32", "100.100.100.200/32", "168.63.129.16/32", "192.0.0.192/32", InetPrivateAPI + "/32"}

// InetPrivateAPI is a private address of the test internet's (far from the
// tests' box networks, 10.213-10.223): the fake model API answers there as
// private-api.test.
const InetPrivateAPI = "10.254.254.254"

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// StartInternet makes the namespace, routes the test ranges and
// 169.254.169.254 into it, and starts the test servers (testbed/inet) in
// it. Runs that share the machine share it: a run that finds it made by
// another live run uses it as it is, and the last run to stop removes it.
// It returns the function that stops this run's use.
func StartInternet() (stop func(), err error) {
	if err := os.MkdirAll(RunsDir, 0o755); err != nil {
		return nil, err
	}
	setup, err := lockFile(filepath.Join(RunsDir, "inet.lock"), syscall.LOCK_EX)
	if err != nil {
		return nil, err
	}
	defer setup.Close()
	// Every run that uses the namespace holds a shared lock on
	// inet.users; getting it exclusively means no other run does.
	users, err := os.OpenFile(filepath.Join(RunsDir, "inet.users"), os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return nil, err
	}
	alone := syscall.Flock(int(users.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
	if alone {
		if err := makeInternet(); err != nil {
			users.Close()
			return nil, err
		}
	}
	if err := syscall.Flock(int(users.Fd()), syscall.LOCK_SH); err != nil {
		users.Close()
		return nil, err
	}
	if err := waitWeb(); err != nil {
		users.Close()
		return nil, err
	}
	return func() {
		setup, err := lockFile(filepath.Join(RunsDir, "inet.lock"), syscall.LOCK_EX)
		if err == nil {
			defer setup.Close()
		}
		syscall.Flock(int(users.Fd()), syscall.LOCK_UN)
		last := syscall.Flock(int(users.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
		users.Close()
		if last {
			StopInternet()
		}
	}, nil
}

func lockFile(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// makeInternet removes what a run that is over left and makes the
// namespace afresh. Its server is started in a session of its own, so
// that it outlives the run that made it while others use it; its pid is
// kept in RunsDir for the last run's StopInternet.
func makeInternet() error {
	StopInternet()
	root, err := Root()
	if err != nil {
		return err
	}
	bin := filepath.Join(RunsDir, "inet")
	cmd := exec.Command("go", "build", "-o", bin, "./testbed/inet")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building testbed/inet: %v\n%s", err, out)
	}
	steps := [][]string{
		{"ip", "netns", "add", InetNS},
		{"ip", "link", "add", inetHostSide, "type", "veth", "peer", "name", "eth0", "netns", InetNS},
		{"ip", "addr", "add", "198.19.255.1/30", "dev", inetHostSide},
		{"ip", "link", "set", inetHostSide, "up"},
		{"ip", "-n", InetNS, "addr", "add", "198.19.255.2/30", "dev", "eth0"},
		{"ip", "-n", InetNS, "link", "set", "eth0", "up"},
		{"ip", "-n", InetNS, "link", "set", "lo", "up"},
		{"ip", "-n", InetNS, "addr", "add", "198.18.0.10/16", "dev", "lo"},
		{"ip", "-n", InetNS, "route", "add", "default", "via", "198.19.255.1"},
	}
	for _, r := range InetRoutes[1:] {
		steps = append(steps, []string{"ip", "-n", InetNS, "addr", "add", r, "dev", "lo"})
	}
	for _, r := range InetRoutes {
		steps = append(steps, []string{"ip", "route", "add", r, "via", "198.19.255.2"})
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			StopInternet()
			return err
		}
	}
	logf, err := os.OpenFile(filepath.Join(RunsDir, "inet.log"), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		StopInternet()
		return err
	}
	defer logf.Close()
	os.Remove(InetCA())
	srv := exec.Command("ip", "netns", "exec", InetNS, bin, "-ca", InetCA())
	srv.Stdout, srv.Stderr = logf, logf
	srv.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := srv.Start(); err != nil {
		StopInternet()
		return err
	}
	go srv.Wait()
	return os.WriteFile(filepath.Join(RunsDir, "inet.pid"), []byte(strconv.Itoa(srv.Process.Pid)), 0o644)
}

// InetCA is the file of the authority of the fake model API's
// certificate (written by the testbed internet as it starts).
func InetCA() string { return filepath.Join(RunsDir, "inet-ca.pem") }

// waitWeb waits for the web server, reached through the route like a box
// would.
func waitWeb() error {
	for i := 0; i < 100; i++ {
		c, err := net.DialTimeout("tcp", InetWeb+":80", 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := os.ReadFile(filepath.Join(RunsDir, "inet.log"))
	return fmt.Errorf("testbed internet did not come up: %s", b)
}

// StopInternet removes the namespace and the routes (what is absent is
// skipped).
func StopInternet() {
	if b, err := os.ReadFile(filepath.Join(RunsDir, "inet.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			// Its session: ip netns exec and the server it runs.
			syscall.Kill(-pid, syscall.SIGKILL)
		}
		os.Remove(filepath.Join(RunsDir, "inet.pid"))
	}
	for _, r := range InetRoutes {
		exec.Command("ip", "route", "del", r, "via", "198.19.255.2").Run()
	}
	exec.Command("ip", "link", "del", inetHostSide).Run()
	exec.Command("ip", "netns", "del", InetNS).Run()
}
