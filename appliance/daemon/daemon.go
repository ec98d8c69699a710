// Package daemon wires paddockd together: configuration, the state store,
// the Docker driver, the reconciler with its periodic and TTL loops, and the
// API listeners. Run is what cmd/paddockd calls.
//
// Start-up order (serve, its stages in start.go): the store is opened and
// migrated (openState), the engine must answer and the box network be
// clear (openEngine), the core is built with its capabilities
// (buildCore), jobs left running by a previous process are attached or
// marked lost (takeUp), a first reconcile repairs whatever a crash left
// half done (catchUp), the resolver, broker, joins and SSH gateway start
// (startSideServers), and only then are the listeners opened and the
// loops started (startLoops). What each stage made is undone in reverse
// when serve returns.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver/docker"
	"github.com/paddock-dev/paddock/appliance/e2b"
	"github.com/paddock-dev/paddock/appliance/preview"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/caddy"
	"github.com/paddock-dev/paddock/policies"
	"github.com/paddock-dev/paddock/units"
)

// Run runs paddockd with the given arguments and returns its exit code.
func Run(args []string, environ []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "install":
			return install(args[1:], stdout, stderr)
		case "backup":
			return backupCmd(args[1:], environ, stdout, stderr)
		case "restore":
			return restoreCmd(args[1:], environ, stdout, stderr)
		case "node":
			return nodeCmd(args[1:], environ, stdout, stderr)
		}
	}
	fs := pflag.NewFlagSet("paddockd", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	config.Flags(fs)
	cleanup := fs.Bool("cleanup", false, "remove Paddock's nftables table, unless boxes still run, and exit (the unit's ExecStopPost)")
	cfg, code := parseAndLoad(fs, args, environ, stderr)
	if code >= 0 {
		return code
	}
	if *cleanup {
		if err := cleanupFirewall(cfg, stderr); err != nil {
			fmt.Fprintln(stderr, "paddockd --cleanup:", err)
			return 1
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "paddockd:", err)
		return 1
	}
	return 0
}

// engine connects to this server's Docker engine as the driver of the
// boxes of boxNet (named by its table, the instance); bindsDir is where
// boxes' binds are served ("" for none: a node's agent).
func engine(ctx context.Context, cfg config.Config, boxNet policies.Network, bindsDir string) (*docker.Driver, error) {
	return docker.New(ctx, docker.Config{BindsDir: bindsDir,
		Host: cfg.DockerHost, Instance: boxNet.Table, Runtime: cfg.Runtime, User: cfg.BoxUser,
		Bridge: boxNet.Bridge, Subnet: boxNet.Subnet, Gateway: boxNet.Gateway,
		UnsafeDockerInRunc: cfg.UnsafeDockerInRuncBoxes, DockerWithBox: cfg.DockerStart == config.DockerWithBox, KeepWarm: cfg.WarmExec,
		LoadMax: int64(cfg.MoveMaxGiB * (1 << 30)),
	})
}

// parseAndLoad parses a command's flags (no arguments besides) and loads
// the configuration; a code of 0 or more is the exit code to stop with.
func parseAndLoad(fs *pflag.FlagSet, args, environ []string, stderr io.Writer) (config.Config, int) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return config.Config{}, 0
		}
		return config.Config{}, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return config.Config{}, 2
	}
	cfg, err := config.Load(fs, environ)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return config.Config{}, 1
	}
	return cfg, -1
}

func logger(cfg config.Config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl}))
}

// serverLog is the log an http.Server of paddockd's writes its own errors
// to: a handler's panic (which net/http recovers, closing the request's
// connection: an exec's client reads EOF), a failed accept, a bad TLS
// handshake. They are paddockd's errors, in paddockd's log at ERROR. Left
// nil, they went to the standard library's log, which the front door's
// Caddy turns into one JSON line at INFO among its own.
func serverLog(log *slog.Logger) *stdlog.Logger {
	return slog.NewLogLogger(log.Handler(), slog.LevelError)
}

// apiServer is the server of paddockd's API, pages and previews.
func apiServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: serverLog(log)}
}

func serve(ctx context.Context, cfg config.Config, stdout, stderr io.Writer) error {
	// What paddockd writes (state, job logs, the local token, Caddy's keys)
	// is for root alone; what others may use is opened up by name (the
	// API socket).
	syscall.Umask(0o077)
	d := &started{cfg: cfg, log: logger(cfg, stderr)}
	defer d.close()
	if err := checkListen(cfg); err != nil {
		return err
	}
	if err := d.openState(); err != nil {
		return err
	}
	if err := d.openEngine(ctx); err != nil {
		return err
	}
	life, endLife := context.WithCancel(context.Background())
	d.onClose(endLife)
	if err := d.buildCore(life); err != nil {
		return err
	}
	if err := d.takeUp(ctx); err != nil {
		return err
	}
	var token string
	if cfg.Local {
		var err error
		if token, err = localToken(d.st, cfg.StateDir); err != nil {
			return err
		}
	}
	if err := d.catchUp(ctx); err != nil {
		return err
	}
	sshPort, sshHostKey, err := d.startSideServers(ctx)
	if err != nil {
		return err
	}
	srv, prev := d.frontEnds(sshPort, sshHostKey)
	listeners, err := listen(cfg)
	if err != nil {
		return err
	}
	errc := make(chan error, len(listeners))
	var where []string
	for _, l := range listeners {
		go func(l net.Listener) { errc <- srv.Serve(l) }(l)
		where = append(where, l.Addr().Network()+":"+l.Addr().String())
	}
	if cfg.Hostname != "" {
		front, err := startFront(cfg, prev, d.log)
		if err != nil {
			return err
		}
		d.onClose(func() { front.Stop() })
	}
	notify := units.NewNotifier()
	notify.Ready()
	d.log.Info("ready", "listen", strings.Join(where, " "))
	if cfg.Local {
		fmt.Fprintf(stdout, "paddockd is running. Log in with:\n\n  paddock login http://%s --token %s\n\n", cfg.Listen, token)
	}
	d.startLoops(ctx, notify)

	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	d.log.Info("stopping")
	notify.Stopping()
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	srv.Shutdown(sctx)
	endLife()
	if cfg.Socket != "" {
		os.Remove(cfg.Socket)
	}
	return nil
}

// bridgeFiltering makes sure traffic between boxes on the same bridge
// passes the IP hooks where Paddock's rules are (br_netfilter), IPv4 and
// IPv6 alike; without it, box-to-box packets would be switched past them.
func bridgeFiltering() error {
	knobs := []string{"/proc/sys/net/bridge/bridge-nf-call-iptables", "/proc/sys/net/bridge/bridge-nf-call-ip6tables"}
	for _, knob := range knobs {
		if b, err := os.ReadFile(knob); err == nil && strings.TrimSpace(string(b)) == "1" {
			continue
		}
		exec.Command("modprobe", "br_netfilter").Run()
		if err := os.WriteFile(knob, []byte("1\n"), 0o644); err != nil {
			return fmt.Errorf("boxes could reach each other: cannot turn on bridge filtering (%s): %w", knob, err)
		}
	}
	return nil
}

// cleanupFirewall removes the instance's nftables table. Boxes keep their
// rules while paddockd restarts; this is for when the service is stopped
// for good.
func cleanupFirewall(cfg config.Config, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Fail closed: without an engine that answers nobody can say that no
	// box runs, so the table stays.
	drv, err := docker.New(ctx, docker.Config{Host: cfg.DockerHost, Instance: cfg.Instance})
	if err != nil {
		return fmt.Errorf("keeping the firewall table %s: cannot tell whether boxes run: %w", cfg.Instance, err)
	}
	defer drv.Close()
	boxes, err := drv.Boxes(ctx)
	if err != nil {
		return fmt.Errorf("keeping the firewall table %s: listing boxes: %w", cfg.Instance, err)
	}
	running := 0
	for _, b := range boxes {
		if b.Running {
			running++
		}
	}
	if running > 0 {
		fmt.Fprintf(stderr, "paddockd --cleanup: %d box(es) still running; keeping their firewall table %s\n", running, cfg.Instance)
		return nil
	}
	conn, err := policies.Dial()
	if err != nil {
		return err
	}
	return policies.Remove(conn, cfg.Instance)
}

// openAudit opens the audit log's key (audit.key in the state folder,
// made on first use) and its export file, when audit_file names one.
func openAudit(cfg config.Config) (*service.Auditor, error) {
	key, err := auth.LoadKey(filepath.Join(cfg.StateDir, "audit.key"))
	if err != nil {
		return nil, fmt.Errorf("the audit log's key: %w", err)
	}
	a := &service.Auditor{Key: key}
	if cfg.AuditFile != "" {
		if a.Export, err = os.OpenFile(cfg.AuditFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err != nil {
			return nil, fmt.Errorf("audit_file: %w", err)
		}
	}
	return a, nil
}

// kicker is a channel for loop's kicks and the function that kicks: a
// kick while one waits is the same kick.
func kicker() (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	return c, func() {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// nodesEvery is how often every node is asked what it has (and whether it
// answers).
const nodesEvery = 5 * time.Second

// poolEvery is how often the warm pool is looked at without a claim.
const poolEvery = 2 * time.Second

// kickGap is the least time between two runs a kick starts: a box whose
// container dies as soon as it starts is started again at most this often
// by the kicks (the ticker's runs come on top, as before).
const kickGap = 2 * time.Second

// loop calls fn every interval and, when kick is not nil, whenever kick
// has a value: 200 ms after the kick, so that a burst of kicks is one
// call, and no sooner than kickGap after the last call.
func loop(ctx context.Context, every time.Duration, kick <-chan struct{}, fn func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
			wait := max(200*time.Millisecond, time.Until(last.Add(kickGap)))
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			select { // the kicks of the burst are this call's
			case <-kick:
			default:
			}
		}
		fn()
		last = time.Now()
	}
}

func serverName(cfg config.Config) string {
	if cfg.Local {
		return "local"
	}
	h, _ := os.Hostname()
	return h
}

// httpsPort is the HTTPS port when it is not 443 ("" when it is).
func httpsPort(cfg config.Config) string {
	_, port, _ := net.SplitHostPort(cfg.HTTPSListen)
	if port == "443" {
		return ""
	}
	return port
}

// startFront starts the embedded Caddy for the host name, with an ask
// endpoint on loopback for on-demand certificates. Its configuration
// names no box: boxes made and removed do not reload it.
func startFront(cfg config.Config, prev *preview.Handler, log *slog.Logger) (*caddy.Front, error) {
	// Caddy keeps a little of its own (an instance id) in the user's data
	// and config directories; under systemd there is no $HOME to find them.
	for k, sub := range map[string]string{"XDG_DATA_HOME": "data", "XDG_CONFIG_HOME": "config"} {
		if os.Getenv(k) == "" {
			os.Setenv(k, filepath.Join(cfg.StateDir, "caddy", sub))
		}
	}
	al, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go http.Serve(al, http.HandlerFunc(prev.Ask))
	upstream := cfg.Listen
	if cfg.Socket != "" {
		upstream = "unix/" + cfg.Socket
	}
	site := caddy.Site{Hostname: cfg.Hostname, Names: []string{e2b.APIHost(cfg.Hostname)}, HTTPSListen: cfg.HTTPSListen, HTTPListen: cfg.HTTPListen, TLS: cfg.TLS,
		Email: cfg.ACMEEmail, StorageDir: filepath.Join(cfg.StateDir, "caddy"), Upstream: upstream,
		AskURL: "http://" + al.Addr().String() + "/ask"}
	front := &caddy.Front{}
	if err := front.Apply(site); err != nil {
		al.Close()
		return nil, err
	}
	log.Info("front door", "host", cfg.Hostname, "https", cfg.HTTPSListen, "http", cfg.HTTPListen, "tls", cfg.TLS)
	return front, nil
}

// PublicURL is where people reach the server: https://HOSTNAME (with the
// port when it is not 443), or in local mode http://LISTEN.
func PublicURL(cfg config.Config) string {
	if cfg.Hostname != "" {
		_, port, _ := net.SplitHostPort(cfg.HTTPSListen)
		if port == "" || port == "443" {
			return "https://" + cfg.Hostname
		}
		return "https://" + net.JoinHostPort(cfg.Hostname, port)
	}
	if cfg.Listen != "" {
		return "http://" + cfg.Listen
	}
	return ""
}

// LocalUser owns a server in local mode.
const LocalUser = "local"

// localToken returns local mode's owner token, kept in the state directory
// (mode 0600) so that it can be printed again on every start; only its hash
// is in the database.
//
// The token belongs to the user "local", the owner of a local server, who
// has no password (local mode has no login page to use one).
func localToken(st *store.Store, dir string) (string, error) {
	u, err := st.UserByName(LocalUser)
	if errors.Is(err, store.ErrNotFound) {
		u, err = st.CreateUser(store.User{Name: LocalUser, Role: store.RoleOwner, Created: time.Now()})
	}
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "local.token")
	if b, err := os.ReadFile(path); err == nil {
		tok := strings.TrimSpace(string(b))
		if _, _, err := st.LookupToken(auth.Hash(tok), time.Now()); err == nil {
			return tok, nil
		}
	}
	tok, hash := auth.NewToken()
	if err := st.AddToken(store.Token{Hash: hash, Name: "local-owner", UserID: u.ID, Created: time.Now()}); err != nil {
		return "", err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(tok+"\n"), 0o600); err != nil {
		return "", err
	}
	return tok, os.Rename(tmp, path)
}
