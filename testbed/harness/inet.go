package harness

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The testbed's internet: a network namespace that owns the test ranges, so
// that no test packet can leave this machine, whatever the rules under test
// do (see TESTBED.md).
const (
	InetNS       = "pdk-inet"
	InetDNS      = "198.18.0.53:53"
	InetWeb      = "198.18.0.10"
	inetHostSide = "pdk-inet0"
)

// InetRoutes are routed from the host into the namespace: the test
// ranges, and the cloud metadata and host-agent addresses, which the
// namespace also answers on, so that a test of their rules reaches no
// other machine.
var InetRoutes = []string{"198.18.0.0/16", "169.254.169.254/32", "100.100.100.200/32", "168.63.129.16/32", "192.0.0.192/32"}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// StartInternet makes the namespace, routes the test ranges and
// 169.254.169.254 into it, and starts the test servers (testbed/inet) in
// it. It returns a function that removes all of it.
func StartInternet(binDir string) (stop func(), err error) {
	StopInternet()
	root, err := Root()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(binDir, "inet")
	cmd := exec.Command("go", "build", "-o", bin, "./testbed/inet")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building testbed/inet: %v\n%s", err, out)
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
			return nil, err
		}
	}
	srv := exec.Command("ip", "netns", "exec", InetNS, bin)
	logf, _ := os.CreateTemp("", "pdk-inet-*.log")
	srv.Stdout, srv.Stderr = logf, logf
	if err := srv.Start(); err != nil {
		StopInternet()
		return nil, err
	}
	stop = func() {
		srv.Process.Kill()
		srv.Wait()
		logf.Close()
		os.Remove(logf.Name())
		StopInternet()
	}
	// Wait for the web server, reached through the route like a box would.
	for i := 0; i < 100; i++ {
		c, err := net.DialTimeout("tcp", InetWeb+":80", 200*time.Millisecond)
		if err == nil {
			c.Close()
			return stop, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	b, _ := os.ReadFile(logf.Name())
	return nil, fmt.Errorf("testbed internet did not come up: %s", b)
}

// StopInternet removes the namespace and the routes (what is absent is
// skipped).
func StopInternet() {
	for _, r := range InetRoutes {
		exec.Command("ip", "route", "del", r, "via", "198.19.255.2").Run()
	}
	exec.Command("ip", "link", "del", inetHostSide).Run()
	exec.Command("ip", "netns", "del", InetNS).Run()
}
