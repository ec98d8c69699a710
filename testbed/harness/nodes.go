package harness

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Servers are other servers for a cluster test, on this machine: each a
// network namespace with its own Docker engine (its own data root, exec
// root, socket and default bridge), joined to this machine's network
// namespace through a bridge in a hub namespace, on a /24 of the test
// ranges that nothing else uses (FreeSubnet). This machine is .254 on it,
// server i is .(i+2). A server routes the test ranges and the metadata
// addresses through this machine (into the test internet, as this
// machine's own boxes do) and nothing else: what its boxes send anywhere
// else goes nowhere.
//
// The recipe measured in ../shared/recipes/swarm, with per-run names and
// cleanup.
type Servers struct {
	// Host is this machine's address on the hub (where the control
	// plane's cluster listener goes).
	Host netip.Addr
	List []*Server
	Hub  netip.Prefix
	// Engine is the control plane's own engine (in this machine's network
	// namespace, with the same images): the swarm's manager. The
	// machine's engine is never made a manager, nor left out of a swarm
	// it is in: a suite run on a machine whose engine is in a swarm leaves
	// it there.
	Engine *OwnEngine

	id   string
	dir  string
	undo []func()
}

// Server is one of them.
type Server struct {
	Name  string
	index int
	// NS is its network namespace (ip netns); Addr its address on the hub.
	NS   string
	Addr netip.Addr
	// Engine is its Docker engine's address (unix://…).
	Engine string
	// hub is this machine's address on the hub: its routes' gateway.
	hub    string
	dir    string
	engine *exec.Cmd
	done   chan struct{}
	agent  *exec.Cmd
	agentD chan struct{}
	// cgroupParent is where its engine puts containers ("": the engine's
	// default).
	cgroupParent string
}

// memoryCgroup makes a cgroup named name that holds at most memory bytes,
// for an engine's --cgroup-parent (cgroup v1 or v2), and what removes it
// (and what the engine made beside it in the other hierarchies) once the
// engine's containers are gone.
func memoryCgroup(name string, memory int64) (string, func(), error) {
	const root = "/sys/fs/cgroup"
	undo := func() {
		dirs, _ := filepath.Glob(filepath.Join(root, "*", name))
		if _, err := os.Stat(filepath.Join(root, name)); err == nil {
			dirs = append(dirs, filepath.Join(root, name))
		}
		for _, d := range dirs {
			os.Remove(d)
		}
	}
	dir, file := filepath.Join(root, "memory", name), "memory.limit_in_bytes"
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		dir, file = filepath.Join(root, name), "memory.max" // v2
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", undo, err
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(fmt.Sprint(memory)), 0o644); err != nil {
		return "", undo, fmt.Errorf("bounding %s's memory: %w", name, err)
	}
	return "/" + name, undo, nil
}

// StartServers starts n servers named names[i] (the hub under dir, a path
// short enough for sockets) and loads images into each engine from this
// machine's.
func StartServers(dir string, names []string, images ...string) (*Servers, error) {
	return startServers(dir, names, 0, images)
}

// StartBoundedServers is StartServers with each server's containers under
// a cgroup of their own that holds at most memory bytes, as a server with
// that much memory for its boxes would: the engine's --cgroup-parent, a
// cgroup made (and removed) here.
func StartBoundedServers(dir string, names []string, memory int64, images ...string) (*Servers, error) {
	if memory <= 0 {
		return nil, errors.New("give the servers' memory")
	}
	return startServers(dir, names, memory, images)
}

func startServers(dir string, names []string, memory int64, images []string) (*Servers, error) {
	pfx, err := netip.ParsePrefix(FreeSubnet())
	if err != nil {
		return nil, err
	}
	s := &Servers{Hub: pfx, id: randHex(3), dir: dir}
	a := pfx.Addr().As4()
	a[3] = 254
	s.Host = netip.AddrFrom4(a)
	hub := "pdk-" + s.id + "-hub"
	hostIf, hubIf := "pdkh"+s.id, "pdkH"+s.id
	steps := [][]string{
		{"ip", "netns", "add", hub},
		{"ip", "-n", hub, "link", "set", "lo", "up"},
		{"ip", "-n", hub, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", hub, "link", "set", "br0", "up"},
		{"ip", "link", "add", hostIf, "type", "veth", "peer", "name", hubIf},
		{"ip", "link", "set", hubIf, "netns", hub},
		{"ip", "-n", hub, "link", "set", hubIf, "master", "br0"},
		{"ip", "-n", hub, "link", "set", hubIf, "up"},
		{"ip", "addr", "add", s.Host.String() + "/24", "dev", hostIf},
		{"ip", "link", "set", hostIf, "up"},
	}
	s.undo = append(s.undo, func() { exec.Command("ip", "link", "del", hostIf).Run() }, func() { exec.Command("ip", "netns", "del", hub).Run() })
	if err := runAll(steps); err != nil {
		s.Stop()
		return nil, err
	}
	if s.Engine, err = StartOwnEngine(filepath.Join(dir, "cp"), images...); err != nil {
		s.Stop()
		return nil, err
	}
	// The machine's engine drops forwarded traffic it did not make rules
	// for: the hub's to and from the test internet passes.
	if exec.Command("iptables", "-n", "-L", "DOCKER-USER").Run() == nil {
		for _, dir := range []string{"-i", "-o"} {
			rule := []string{"DOCKER-USER", dir, hostIf, "-j", "ACCEPT"}
			if err := run(append([]string{"iptables", "-I"}, rule...)...); err != nil {
				s.Stop()
				return nil, err
			}
			s.undo = append(s.undo, func() { run(append([]string{"iptables", "-D"}, rule...)...) })
		}
	}
	for i, name := range names {
		a := pfx.Addr().As4()
		a[3] = byte(i + 2)
		sv := &Server{Name: name, index: i, NS: fmt.Sprintf("pdk-%s-%d", s.id, i), Addr: netip.AddrFrom4(a), dir: filepath.Join(dir, fmt.Sprint(i)), hub: s.Host.String()}
		s.List = append(s.List, sv)
		in, out := fmt.Sprintf("pdkn%s%d", s.id, i), fmt.Sprintf("pdkN%s%d", s.id, i)
		steps := [][]string{
			{"ip", "netns", "add", sv.NS},
			{"ip", "-n", sv.NS, "link", "set", "lo", "up"},
			{"ip", "link", "add", in, "type", "veth", "peer", "name", out},
			{"ip", "link", "set", in, "netns", sv.NS},
			{"ip", "link", "set", out, "netns", hub},
			{"ip", "-n", hub, "link", "set", out, "master", "br0"},
			{"ip", "-n", hub, "link", "set", out, "up"},
			{"ip", "-n", sv.NS, "link", "set", in, "name", "eth0"},
			{"ip", "-n", sv.NS, "addr", "add", sv.Addr.String() + "/24", "dev", "eth0"},
			{"ip", "-n", sv.NS, "link", "set", "eth0", "up"},
		}
		// The test ranges and the metadata addresses go to this machine,
		// which routes them into the test internet (InetRoutes), as its
		// own boxes' do; nothing else has a route.
		for _, r := range InetRoutes {
			steps = append(steps, []string{"ip", "-n", sv.NS, "route", "add", r, "via", s.Host.String()})
		}
		s.undo = append(s.undo, func() { exec.Command("ip", "netns", "del", sv.NS).Run() })
		if err := runAll(steps); err != nil {
			s.Stop()
			return nil, err
		}
		if memory > 0 {
			parent, undo, err := memoryCgroup(sv.NS, memory)
			s.undo = append(s.undo, undo)
			if err != nil {
				s.Stop()
				return nil, err
			}
			sv.cgroupParent = parent
		}
		if err := sv.startEngine(i); err != nil {
			s.Stop()
			return nil, err
		}
		for _, img := range images {
			load := exec.Command("sh", "-c", "docker save \"$1\" | docker -H \"$2\" load", "load", img, sv.Engine)
			if out, err := load.CombinedOutput(); err != nil {
				s.Stop()
				return nil, fmt.Errorf("loading %s into server %s: %v: %s", img, name, err, out)
			}
		}
	}
	return s, nil
}

func runAll(steps [][]string) error {
	for _, c := range steps {
		if err := run(c...); err != nil {
			return err
		}
	}
	return nil
}

// In runs argv in the server's network namespace (by nsenter: 'ip netns
// exec' mounts a sysfs of its own over /sys, which hides the cgroups an
// engine needs).
func (sv *Server) In(argv ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + sv.NS, "--"}, argv...)...)
}

func (sv *Server) startEngine(i int) error {
	for _, sub := range []string{"data", "exec"} {
		if err := os.MkdirAll(filepath.Join(sv.dir, sub), 0o700); err != nil {
			return err
		}
	}
	sv.Engine = "unix://" + sv.dir + "/docker.sock"
	logf, err := os.OpenFile(sv.dir+"/dockerd.log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := []string{"dockerd", "--data-root", sv.dir + "/data", "--exec-root", sv.dir + "/exec",
		"--pidfile", sv.dir + "/dockerd.pid", "-H", sv.Engine, "--bip", fmt.Sprintf("172.30.%d.1/24", i+1)}
	if sv.cgroupParent != "" {
		args = append(args, "--cgroup-parent", sv.cgroupParent)
	}
	cmd := sv.In(args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	sv.engine, sv.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(sv.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for exec.Command("docker", "-H", sv.Engine, "info", "--format", "{{.ServerVersion}}").Run() != nil {
		select {
		case <-sv.done:
			b, _ := os.ReadFile(sv.dir + "/dockerd.log")
			return fmt.Errorf("server %s's engine exited at start:\n%s", sv.Name, b)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server %s's engine did not answer within 60s; see %s/dockerd.log", sv.Name, sv.dir)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// KillEngine kills the server's engine at once (SIGKILL, as a crash:
// its containers' shims live on) and, after, starts it again, as systemd
// would; it returns once the engine answers again.
func (sv *Server) KillEngine(after time.Duration) error {
	if sv.engine == nil {
		return errors.New("the engine is not running")
	}
	sv.engine.Process.Kill()
	<-sv.done
	sv.engine = nil
	time.Sleep(after)
	return sv.startEngine(sv.index)
}

// StartAgent runs 'paddockd node' (bin) with args in the server's
// namespace, as its node agent, with no configuration file but env
// (PADDOCK_* settings) and the server's engine; its output goes to the
// server's folder (AgentLog).
func (sv *Server) StartAgent(bin string, env []string, args ...string) error {
	if sv.agent != nil {
		return errors.New("the agent runs already")
	}
	logf, err := os.OpenFile(sv.AgentLog(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	argv := append([]string{"env", "PADDOCK_DOCKER_HOST=" + sv.Engine}, env...)
	argv = append(argv, bin, "node", "--config", os.DevNull, "--state-dir", sv.StateDir(), "--runtime", "runc", "--log-level", "debug")
	cmd := sv.In(append(argv, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	sv.agent, sv.agentD = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(sv.agentD) }()
	return nil
}

// KillAgent kills the agent at once (SIGKILL, as the kernel's OOM killer
// or a crash would): nothing of its own ending runs.
func (sv *Server) KillAgent() {
	if sv.agent == nil {
		return
	}
	syscall.Kill(-sv.agent.Process.Pid, syscall.SIGKILL)
	<-sv.agentD
	sv.agent = nil
}

// Partition drops what the server and addr send each other (in the
// server's namespace, both ways), and nothing else: the server is cut off
// from that one peer alone. Unpartition lifts it.
func (sv *Server) Partition(addr netip.Addr) error {
	rules := fmt.Sprintf(`table inet pdkpart {
	chain in { type filter hook input priority -300; policy accept; ip saddr %[1]s drop; }
	chain out { type filter hook output priority -300; policy accept; ip daddr %[1]s drop; }
}
`, addr)
	cmd := sv.In("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft: %v: %s", err, out)
	}
	return nil
}

// Unpartition lifts Partition.
func (sv *Server) Unpartition() error {
	if out, err := sv.In("nft", "delete", "table", "inet", "pdkpart").CombinedOutput(); err != nil {
		return fmt.Errorf("nft: %v: %s", err, out)
	}
	return nil
}

// Cut takes the server's link down (its engine and agent run on, and
// reach nothing); Heal brings it back.
func (sv *Server) Cut() error { return run("ip", "-n", sv.NS, "link", "set", "eth0", "down") }
func (sv *Server) Heal() error {
	if err := run("ip", "-n", sv.NS, "link", "set", "eth0", "up"); err != nil {
		return err
	}
	// Taking the link down took its routes with it.
	for _, r := range InetRoutes {
		exec.Command("ip", "-n", sv.NS, "route", "replace", r, "via", sv.hub).Run()
	}
	return nil
}

// Root is the server's file system root for 'paddockd install --root'.
func (sv *Server) Root() string { return filepath.Join(sv.dir, "root") }

// StateDir is the agent's state directory: the one an install under Root
// makes.
func (sv *Server) StateDir() string { return filepath.Join(sv.Root(), "var/lib/paddock") }

// Install runs 'paddockd install' (bin) with args in the server's
// namespace, under Root, without systemd, with env and the server's
// engine, and returns its output.
func (sv *Server) Install(bin string, env []string, args ...string) (string, error) {
	argv := append([]string{"env", "PADDOCK_DOCKER_HOST=" + sv.Engine}, env...)
	argv = append(argv, bin, "install", "--root", sv.Root(), "--no-start")
	out, err := sv.In(append(argv, args...)...).CombinedOutput()
	return string(out), err
}

// AgentLog is where the agent's output goes.
func (sv *Server) AgentLog() string { return filepath.Join(sv.dir, "agent.log") }

// StopAgent ends the agent (SIGTERM, then SIGKILL after 10 s).
func (sv *Server) StopAgent() {
	if sv.agent == nil {
		return
	}
	syscall.Kill(-sv.agent.Process.Pid, syscall.SIGTERM)
	select {
	case <-sv.agentD:
	case <-time.After(10 * time.Second):
		syscall.Kill(-sv.agent.Process.Pid, syscall.SIGKILL)
		<-sv.agentD
	}
	sv.agent = nil
}

// AgentExit waits up to d for the agent to end by itself, and says with
// which exit status (ok false: it still runs).
func (sv *Server) AgentExit(d time.Duration) (code int, ok bool) {
	if sv.agent == nil {
		return 0, false
	}
	select {
	case <-sv.agentD:
	case <-time.After(d):
		return 0, false
	}
	code = sv.agent.ProcessState.ExitCode()
	sv.agent = nil
	return code, true
}

// Destroy is the server gone for good, as when its machine or disk is
// lost: its agent killed, its containers gone (their processes with
// them), its engine killed, and its engine's data and Paddock's state
// removed. Nothing of it answers again.
func (sv *Server) Destroy() error {
	sv.KillAgent()
	if sv.engine != nil {
		if ids, err := sv.Docker("ps", "-aq"); err == nil && strings.TrimSpace(ids) != "" {
			sv.Docker(append([]string{"rm", "-f"}, strings.Fields(ids)...)...)
		}
		sv.engine.Process.Kill()
		<-sv.done
		sv.engine = nil
	}
	exec.Command("umount", "-R", sv.dir+"/data").Run()
	// The exec root (sockets, network namespaces' mounts) is not data,
	// and goes when the servers stop.
	return errors.Join(os.RemoveAll(sv.dir+"/data"), os.RemoveAll(sv.StateDir()))
}

// Docker runs the docker CLI against the server's engine.
func (sv *Server) Docker(args ...string) (string, error) {
	out, err := exec.Command("docker", append([]string{"-H", sv.Engine}, args...)...).CombinedOutput()
	return string(out), err
}

// Stop ends every agent and engine (their containers with them), removes
// the namespaces, the link into the hub, and the servers' files.
func (s *Servers) Stop() {
	for _, sv := range s.List {
		sv.StopAgent()
		if sv.engine != nil {
			// Containers first, so that the engine's stop is quick.
			if ids, err := sv.Docker("ps", "-aq"); err == nil && strings.TrimSpace(ids) != "" {
				sv.Docker(append([]string{"rm", "-f"}, strings.Fields(ids)...)...)
			}
			sv.engine.Process.Signal(syscall.SIGTERM)
			select {
			case <-sv.done:
			case <-time.After(60 * time.Second):
				sv.engine.Process.Kill()
				<-sv.done
			}
			sv.engine = nil
		}
		exec.Command("umount", "-R", sv.dir+"/data").Run()
	}
	if s.Engine != nil {
		// The swarm it manages (advertised on the hub) goes with it.
		if ids, err := s.Engine.Docker("ps", "-aq"); err == nil && strings.TrimSpace(ids) != "" {
			s.Engine.Docker(append([]string{"rm", "-f"}, strings.Fields(ids)...)...)
		}
		s.Engine.Docker("swarm", "leave", "--force")
		s.Engine.Stop()
		s.Engine = nil
	}
	for i := len(s.undo) - 1; i >= 0; i-- {
		s.undo[i]()
	}
	s.undo = nil
	os.RemoveAll(s.dir)
}
