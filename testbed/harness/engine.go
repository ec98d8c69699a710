package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"
)

// OwnEngine is a Docker engine of a test's own beside the machine's:
// its own data root, exec root, socket and containerd, in this network
// namespace, with a default bridge of its own (ownBridge, made here: an
// engine told --bridge=none deletes docker0, the machine's engine's) and
// no iptables rules of its own (--iptables=false), so that starting,
// stopping or restarting it disturbs nothing else on the machine. Its
// boxes' bridge forwards through the machine's firewall by the rules
// Forward adds.
type OwnEngine struct {
	Host string // unix://…, for DOCKER_HOST and paddockd's docker_host
	dir  string
	argv []string
	base []string // argv as made, before RestartWith
	cmd  *exec.Cmd
	done chan struct{}
	undo []func()
}

// StartOwnEngine starts an engine whose files live under dir (a path
// short enough for its sockets), and loads images into it from the
// machine's engine.
func StartOwnEngine(dir string, images ...string) (*OwnEngine, error) {
	for _, sub := range []string{"data", "exec"} {
		if err := os.MkdirAll(dir+"/"+sub, 0o700); err != nil {
			return nil, err
		}
	}
	e := &OwnEngine{Host: "unix://" + dir + "/docker.sock", dir: dir}
	exec.Command("ip", "link", "del", ownBridge).Run() // a killed run's
	for _, c := range [][]string{
		{"ip", "link", "add", "name", ownBridge, "type", "bridge"},
		{"ip", "addr", "add", ownBridgeAddr, "dev", ownBridge},
		{"ip", "link", "set", ownBridge, "up"},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			exec.Command("ip", "link", "del", ownBridge).Run()
			return nil, fmt.Errorf("%v: %v: %s", c, err, out)
		}
	}
	e.undo = append(e.undo, func() { exec.Command("ip", "link", "del", ownBridge).Run() })
	e.argv = []string{"dockerd", "--data-root", dir + "/data", "--exec-root", dir + "/exec",
		"--pidfile", dir + "/dockerd.pid", "-H", e.Host, "--iptables=false", "--ip-masq=false", "--bridge", ownBridge}
	if err := e.start(); err != nil {
		e.Stop()
		return nil, err
	}
	for _, img := range images {
		load := exec.Command("sh", "-c", "docker save \"$1\" | docker -H \"$2\" load", "load", img, e.Host)
		if out, err := load.CombinedOutput(); err != nil {
			e.Stop()
			return nil, fmt.Errorf("loading %s into the test's engine: %v: %s", img, err, out)
		}
	}
	return e, nil
}

// The test engine's default bridge: a name and an address of the test
// ranges that nothing else on the machine uses (one such engine at a
// time).
const (
	ownBridge     = "pdk-owneng"
	ownBridgeAddr = "198.19.254.1/24"
)

func (e *OwnEngine) start() error {
	logf, err := os.OpenFile(e.dir+"/dockerd.log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(e.argv[0], e.argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	e.cmd, e.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(e.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for exec.Command("docker", "-H", e.Host, "info", "--format", "{{.ServerVersion}}").Run() != nil {
		select {
		case <-e.done:
			b, _ := os.ReadFile(e.dir + "/dockerd.log")
			return fmt.Errorf("the test's engine exited at start:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the test's engine did not answer within 60s; see %s/dockerd.log", e.dir)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// stop ends the engine with SIGTERM, as systemd's stop does: it stops its
// containers on the way down.
func (e *OwnEngine) stop() error {
	if e.cmd == nil {
		return nil
	}
	e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(90 * time.Second):
		e.cmd.Process.Kill()
		<-e.done
		return errors.New("the test's engine did not stop within 90s")
	}
	e.cmd = nil
	return nil
}

// RestartWith restarts the engine (Restart) with extra flags for its
// dockerd (none: as it was made).
func (e *OwnEngine) RestartWith(extra ...string) error {
	if e.base == nil {
		e.base = e.argv
	}
	e.argv = append(slices.Clone(e.base), extra...)
	return e.Restart()
}

// Restart stops the engine and starts it again, as an upgrade or a crash
// and systemd's restart would: it stops its containers on the way down and
// starts none of them again. It returns once the engine answers again.
func (e *OwnEngine) Restart() error {
	if err := e.stop(); err != nil {
		return err
	}
	return e.start()
}

// Forward lets the engine's bridge br forward through the machine's
// firewall, as the machine's engine's own rules do for its bridges (the
// DOCKER-USER chain, where it exists); Stop removes the rules, and the
// bridge.
func (e *OwnEngine) Forward(br string) error {
	// The engine leaves its networks' bridges when it stops, and its
	// files, which name them, go with Stop: the bridge goes too, else a
	// later run's network on the same addresses is routed to it.
	e.undo = append(e.undo, func() { exec.Command("ip", "link", "del", br).Run() })
	if exec.Command("iptables", "-n", "-L", "DOCKER-USER").Run() != nil {
		return nil // no engine rules that drop forwarded traffic
	}
	for _, dir := range []string{"-i", "-o"} {
		rule := []string{"DOCKER-USER", dir, br, "-j", "ACCEPT"}
		if out, err := exec.Command("iptables", append([]string{"-I"}, rule...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("iptables: %v: %s", err, out)
		}
		e.undo = append(e.undo, func() { exec.Command("iptables", append([]string{"-D"}, rule...)...).Run() })
	}
	return nil
}

// Docker runs the docker CLI against the engine.
func (e *OwnEngine) Docker(args ...string) (string, error) {
	out, err := exec.Command("docker", append([]string{"-H", e.Host}, args...)...).CombinedOutput()
	return string(out), err
}

// Stop stops the engine, removes its files and the rules Forward added.
func (e *OwnEngine) Stop() error {
	err := e.stop()
	for _, u := range e.undo {
		u()
	}
	e.undo = nil
	exec.Command("umount", "-R", e.dir+"/data").Run()
	os.RemoveAll(e.dir)
	return err
}
