package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/nftables"
	"github.com/spf13/pflag"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver/docker"
	"github.com/paddock-dev/paddock/appliance/node"
	"github.com/paddock-dev/paddock/policies"
	"github.com/paddock-dev/paddock/units"
)

// nodeCmd is 'paddockd node': this server as a node of a control plane on
// another. The first time it joins with the command 'paddock node add'
// printed (--join, --token, --ca-sha256); then, and on every later start,
// its agent serves the control plane: this engine's boxes, their egress
// rules and resolver, over mutual TLS at node_listen.
func nodeCmd(args, environ []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("paddockd node", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	config.Flags(fs)
	join := fs.String("join", "", "the control plane's cluster address (IP:PORT), from 'paddock node add'")
	token := fs.String("token", "", "the one-time join token, from 'paddock node add'")
	fp := fs.String("ca-sha256", "", "the cluster authority's fingerprint, from 'paddock node add'")
	name := fs.String("name", "", "the name this server asks for (default: its host name)")
	cfg, code := parseAndLoad(fs, args, environ, stderr)
	if code >= 0 {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	dir := filepath.Join(cfg.StateDir, "node")
	id, err := node.LoadIdentity(dir)
	switch {
	case err == nil && *join != "":
		fmt.Fprintf(stderr, "paddockd node: this server joined already, as %s through %s; to join again, remove it ('paddock node rm %s') and %s\n", id.Name, id.ControlPlane, id.Name, dir)
		return 1
	case errors.Is(err, os.ErrNotExist) && *join == "":
		fmt.Fprintln(stderr, "paddockd node: this server has not joined: run the command 'paddock node add' printed (--join, --token, --ca-sha256)")
		return 2
	case errors.Is(err, os.ErrNotExist):
		if *name == "" {
			h, _ := os.Hostname()
			*name = strings.ToLower(strings.SplitN(h, ".", 2)[0])
		}
		if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
			fmt.Fprintln(stderr, "paddockd node:", err)
			return 1
		}
		jctx, cancel := context.WithTimeout(ctx, time.Minute)
		id, err = joinNode(jctx, cfg, dir, node.JoinRequest{ControlPlane: *join, Token: *token, CASHA256: *fp, Name: *name, Listen: cfg.NodeListen})
		cancel()
		if err != nil {
			fmt.Fprintln(stderr, "paddockd node:", err)
			return 1
		}
		fmt.Fprintf(stdout, "joined as node %s (box network %s)\n", id.Name, id.Subnet)
	case err != nil:
		fmt.Fprintln(stderr, "paddockd node:", err)
		return 1
	}
	if err := serveNode(ctx, cfg, id, dir, stdout, stderr); errors.Is(err, node.ErrLeft) {
		fmt.Fprintln(stderr, "paddockd node:", err)
		return units.ExitRemoved
	} else if err != nil {
		fmt.Fprintln(stderr, "paddockd node:", err)
		return 1
	}
	return 0
}

// joinNode joins this server to the control plane and its engine to the
// cluster's swarm. An engine in a swarm already is refused before the
// token is spent.
func joinNode(ctx context.Context, cfg config.Config, dir string, jr node.JoinRequest) (*node.Identity, error) {
	eng, err := docker.Connect(ctx, cfg.DockerHost)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	state, cluster, _, err := eng.SwarmState(ctx)
	if err != nil {
		return nil, fmt.Errorf("this server's engine: %w", err)
	}
	if state != "inactive" {
		return nil, fmt.Errorf("this server's engine is in a swarm already (%s, %s): a server joins the cluster's swarm as it joins; leave that one first ('docker swarm leave')", cluster, state)
	}
	jr.Swarm = func(ctx context.Context, sj api.SwarmJoin, ip string) error {
		return eng.SwarmJoin(ctx, sj.Managers, sj.Token, ip, sj.ClusterID)
	}
	return node.Join(ctx, dir, jr)
}

// serveNode runs the agent of a node that joined.
func serveNode(ctx context.Context, cfg config.Config, id *node.Identity, dir string, stdout, stderr io.Writer) error {
	syscall.Umask(0o077)
	log := logger(cfg, stderr).With("node", id.Name)
	boxNet, err := policies.NetworkFor(id.Instance, id.Subnet)
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	drv, err := engine(dctx, cfg, boxNet, "")
	if err == nil {
		err = drv.Prepare(dctx)
	}
	cancel()
	if err == nil {
		err = boxNet.CheckRoutes("Remove those routes, or have this server leave and join a control plane whose node_subnets no route here covers")
	}
	if err != nil {
		return err
	}
	defer drv.Close()
	fw := rulesFor(boxNet, log)
	resolver, err := startResolver(cfg, fw, boxNet, log)
	if err != nil {
		return err
	}
	defer resolver.Shutdown()

	listen := cfg.NodeListen
	if id.Listen != "" {
		listen = id.Listen
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	agent := &node.Agent{Driver: drv, Firewall: fw, Name: id.Name, Log: log, Info: func(ctx context.Context) (node.Info, error) {
		return localInfo(ctx, id.Name, drv, boxNet)
	}}
	// Removed by the control plane (it holds nothing by then): out of the
	// swarm, its rules gone, its join forgotten, so that this server can
	// join again, here or elsewhere, with a new token.
	agent.Leave = func(ctx context.Context) error {
		if state, _, _, err := drv.SwarmState(ctx); err != nil {
			return err
		} else if state != "inactive" {
			if err := drv.SwarmLeave(ctx); err != nil {
				return fmt.Errorf("leaving the swarm: %w", err)
			}
		}
		if err := fw.Cleanup(); err != nil {
			return fmt.Errorf("removing the boxes' rules: %w", err)
		}
		log.Info("removed from the cluster: left the swarm; forgetting the join", "dir", dir)
		return os.RemoveAll(dir)
	}
	units.NewNotifier().Ready()
	log.Info("node agent ready", "listen", l.Addr().String(), "subnet", id.Subnet, "control_plane", id.ControlPlane)
	fmt.Fprintf(stdout, "node %s serves the control plane at %s\n", id.Name, l.Addr())
	return agent.Serve(ctx, l, id.CA.ServerConfig(id.Cert))
}

// rulesFor is the egress rules of the boxes of boxNet, in this machine's
// kernel.
func rulesFor(boxNet policies.Network, log *slog.Logger) *policies.Manager {
	fw := policies.NewManager(boxNet, func() (*nftables.Conn, error) { return policies.Dial() })
	fw.Log = log.Warn
	return fw
}

// startResolver turns on bridge filtering, then serves the boxes'
// resolver at the box network's gateway, forwarding allowed names to
// dns_upstream (or /etc/resolv.conf's first).
func startResolver(cfg config.Config, fw *policies.Manager, boxNet policies.Network, log *slog.Logger) (*policies.Resolver, error) {
	if err := bridgeFiltering(); err != nil {
		return nil, err
	}
	upstream, err := dnsUpstream(cfg)
	if err != nil {
		return nil, err
	}
	r := &policies.Resolver{M: fw, Upstream: upstream, Addr: net.JoinHostPort(boxNet.Gateway.String(), "53")}
	if err := r.Serve(); err != nil {
		return nil, err
	}
	log.Info("box resolver", "listen", r.Addr, "upstream", r.Upstream, "table", boxNet.Table, "bridge", boxNet.Bridge)
	return r, nil
}

// dnsUpstream is where names the boxes' resolver and the credential
// broker look up are asked: dns_upstream, or /etc/resolv.conf's first.
func dnsUpstream(cfg config.Config) (string, error) {
	if cfg.DNSUpstream != "" {
		return cfg.DNSUpstream, nil
	}
	upstream, err := policies.UpstreamFromResolvConf("/etc/resolv.conf")
	if err != nil {
		return "", fmt.Errorf("no upstream for the box resolver (set dns_upstream): %w", err)
	}
	return upstream, nil
}

// localInfo is what this server has: the engine's CPUs and memory, the
// memory free now (MemAvailable), the disk under the engine's data, and
// the load.
func localInfo(ctx context.Context, name string, drv *docker.Driver, boxNet policies.Network) (node.Info, error) {
	e, err := drv.Engine(ctx)
	if err != nil {
		return node.Info{}, err
	}
	in := node.Info{Name: name, CPUs: e.CPUs, MemoryBytes: e.MemoryBytes, Engine: e.Version}
	if cs, err := boxNet.RouteConflicts(); err == nil {
		for _, c := range cs {
			in.Routes = append(in.Routes, c.String())
		}
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				in.MemoryFree = kb << 10
			}
		}
		f.Close()
	}
	var st syscall.Statfs_t
	if e.Root != "" && syscall.Statfs(e.Root, &st) == nil {
		in.DiskBytes, in.DiskFree = int64(st.Blocks)*st.Bsize, int64(st.Bavail)*st.Bsize
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			in.Load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return in, nil
}

// serveJoins serves the cluster listener, where servers join with the
// command 'paddock node add' printed: TLS with the control plane's
// certificate from the cluster's authority, the join route alone, and a
// bound on attempts per address.
func serveJoins(ctx context.Context, addr string, cluster *node.Cluster, joinNode func(context.Context, api.NodeJoinRequest) (api.NodeJoined, error), log *slog.Logger) (stop func(), err error) {
	cfg, err := cluster.JoinTLS()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cluster_listen: %w", err)
	}
	limit := auth.Limiter{Every: 6 * time.Second, Burst: 10}
	join := node.JoinHandler(joinNode)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		if ok, wait := limit.Allow(host); !ok {
			w.Header().Set("Retry-After", fmt.Sprint(int(wait/time.Second)+1))
			http.Error(w, `{"error":"too many join attempts; wait a little"}`, http.StatusTooManyRequests)
			return
		}
		join.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: h, TLSConfig: cfg, ReadHeaderTimeout: 10 * time.Second, ErrorLog: serverLog(log)}
	go srv.ServeTLS(l, "", "")
	log.Info("cluster listener", "listen", l.Addr().String())
	return func() { srv.Close() }, nil
}
