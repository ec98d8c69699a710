package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/paddock-dev/paddock/appliance/access"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/node"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/units"
)

// install does the idempotent steps of an installation, which install.sh
// hands over to: the configuration file (written only when missing), the
// state directory, the systemd unit, and enabling and starting the service
// (restarting it when the unit changed). Running it again changes nothing.
func install(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("paddockd install", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", "/", "install under this directory (for tests and images)")
	runtime := fs.String("runtime", "sysbox-runc", "OCI runtime for boxes (runc: Docker inside boxes will not work)")
	noStart := fs.Bool("no-start", false, "write the files only; do not touch systemd")
	hostname := fs.String("hostname", "", "the server's public host name (HTTPS and the setup link are for it)")
	tlsMode := fs.String("tls", "acme", "acme, or internal (Caddy's own CA: private networks, tests)")
	image := fs.String("image", "", "default box image (written to a new configuration)")
	sshListen := fs.String("ssh-listen", "", "the SSH gateway's address (written to a new configuration when not :2222)")
	join := fs.String("join", "", "join another server's Paddock as a node: its cluster address (IP:PORT), from 'paddock node add'")
	token := fs.String("token", "", "with --join: the one-time join token")
	fp := fs.String("ca-sha256", "", "with --join: the cluster authority's fingerprint")
	name := fs.String("name", "", "with --join: the name this server asks for (default: its host name)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o := installOptions{root: *root, runtime: *runtime, systemd: !*noStart, hostname: *hostname, tls: *tlsMode, image: *image, sshListen: *sshListen}
	if *join != "" {
		if err := installNode(o, node.JoinRequest{ControlPlane: *join, Token: *token, CASHA256: *fp, Name: *name}, stdout); err != nil {
			fmt.Fprintln(stderr, "paddockd install:", err)
			return 1
		}
		return 0
	}
	if err := installSteps(o, stdout); err != nil {
		fmt.Fprintln(stderr, "paddockd install:", err)
		return 1
	}
	if err := setupState(o, stdout); err != nil {
		fmt.Fprintln(stderr, "paddockd install:", err)
		return 1
	}
	return 0
}

type installOptions struct {
	root, runtime, hostname, tls, image, sshListen string
	systemd                                        bool
}

// setupState prints how to reach the server: a fresh one-time setup link
// while there is no owner (an older link stops working), or that the owner
// exists.
func setupState(o installOptions, out io.Writer) error {
	cfg, err := config.Load(nil, []string{"PADDOCK_CONFIG=" + filepath.Join(o.root, "etc/paddock/paddock.toml")})
	if err != nil {
		return err
	}
	if o.root != "/" {
		cfg.StateDir = filepath.Join(o.root, "var/lib/paddock")
	}
	if cfg.Hostname == "" {
		fmt.Fprintln(out, "setup: no hostname in the configuration; set one to serve HTTPS and get the setup link")
		return nil
	}
	if o.hostname != "" && o.hostname != cfg.Hostname {
		fmt.Fprintf(out, "setup: the configuration keeps hostname %q (not %q); edit %s and restart paddockd to change it\n",
			cfg.Hostname, o.hostname, filepath.Join(o.root, "etc/paddock/paddock.toml"))
	}
	st, err := store.Open(cfg.StateDir)
	if err != nil {
		return err
	}
	defer st.Close()
	svc := &service.Service{Store: st, Cfg: cfg}
	tok, err := access.New(svc, st, &svc.Cfg, slog.New(slog.DiscardHandler)).SetupLink()
	if err != nil {
		return err
	}
	url := PublicURL(cfg)
	if tok == "" {
		fmt.Fprintf(out, "\nPaddock is set up at %s: the owner account exists.\nLog in from your computer with:\n\n  paddock login %s\n\n", url, url)
		return nil
	}
	fmt.Fprintf(out, "\nPaddock is running at %s.\nCreate the owner account with this one-time link (it expires in %s):\n\n  %s/setup/%s\n\n",
		url, cfg.LinkTTL, url, tok)
	return nil
}

func installSteps(o installOptions, out io.Writer) error {
	root, runtime, systemd := o.root, o.runtime, o.systemd
	if runtime != "sysbox-runc" && runtime != "runc" {
		return fmt.Errorf("runtime %q: use sysbox-runc or runc", runtime)
	}
	if o.tls != "acme" && o.tls != "internal" {
		return fmt.Errorf("tls %q: use acme or internal", o.tls)
	}
	if err := writeConfig(o, out); err != nil {
		return err
	}
	state := filepath.Join(root, "var/lib/paddock")
	if err := os.MkdirAll(state, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(state, 0o700); err != nil {
		return err
	}
	unitDir := filepath.Join(root, "etc/systemd/system")
	if err := os.MkdirAll(unitDir, 0o755); err != nil {
		return err
	}
	changed, err := units.Write(unitDir)
	if err != nil {
		return err
	}
	if changed {
		fmt.Fprintf(out, "unit: wrote %s\n", filepath.Join(unitDir, "paddockd.service"))
	} else {
		fmt.Fprintln(out, "unit: unchanged")
	}
	if !systemd {
		return nil
	}
	return startUnit("paddockd.service", changed, out)
}

// startUnit enables and starts a unit, restarting it when its file
// changed.
func startUnit(name string, changed bool, out io.Writer) error {
	run := func(args ...string) error {
		if b, err := exec.Command("systemctl", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("systemctl %v: %v: %s", args, err, b)
		}
		return nil
	}
	if changed {
		if err := run("daemon-reload"); err != nil {
			return err
		}
	}
	if err := run("enable", name); err != nil {
		return err
	}
	// A unit that failed before (a refused start, then systemd's own
	// restarts until its start limit) is started again as new: this run
	// may have fixed the cause.
	exec.Command("systemctl", "reset-failed", name).Run()
	if changed && exec.Command("systemctl", "is-active", "--quiet", name).Run() == nil {
		fmt.Fprintln(out, "service: restarting (the unit changed)")
		return withJournal(name, run("restart", name))
	}
	fmt.Fprintln(out, "service: starting", name)
	return withJournal(name, run("start", name))
}

// withJournal adds to a unit's failed start the end of what it wrote
// (paddockd says there why it did not start: a route over its box
// network, a bad setting), which systemctl's own error only points to.
func withJournal(name string, err error) error {
	if err == nil {
		return nil
	}
	b, _ := exec.Command("journalctl", "-u", name, "-n", "25", "--no-pager", "-o", "cat").Output()
	if len(strings.TrimSpace(string(b))) == 0 {
		return err
	}
	return fmt.Errorf("%w\n%s did not start; the end of its log (journalctl -u %s):\n  %s", err, name, name,
		strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", "\n  "))
}

// installNode makes this server a node of another's control plane: the
// configuration (its runtime and image), the join (this server's engine
// joins the cluster's swarm with it), and paddock-node.service, the agent,
// enabled and started. paddockd.service is not installed: the control
// plane is elsewhere. Run again, it keeps the join it made.
func installNode(o installOptions, jr node.JoinRequest, out io.Writer) error {
	if o.runtime != "sysbox-runc" && o.runtime != "runc" {
		return fmt.Errorf("runtime %q: use sysbox-runc or runc", o.runtime)
	}
	if err := writeConfig(o, out); err != nil {
		return err
	}
	// The environment's PADDOCK_* settings count (the engine's address,
	// node_listen), as they do for the agent the unit runs.
	cfg, err := config.Load(nil, append(os.Environ(), "PADDOCK_CONFIG="+filepath.Join(o.root, "etc/paddock/paddock.toml")))
	if err != nil {
		return err
	}
	if o.root != "/" {
		cfg.StateDir = filepath.Join(o.root, "var/lib/paddock")
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return err
	}
	dir := filepath.Join(cfg.StateDir, "node")
	id, err := node.LoadIdentity(dir)
	switch {
	case err == nil:
		fmt.Fprintf(out, "node: joined already, as %s through %s\n", id.Name, id.ControlPlane)
	case errors.Is(err, os.ErrNotExist):
		if jr.Name == "" {
			h, _ := os.Hostname()
			jr.Name = strings.ToLower(strings.SplitN(h, ".", 2)[0])
		}
		jr.Listen = cfg.NodeListen
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		id, err = joinNode(ctx, cfg, dir, jr)
		cancel()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "node: joined as %s (box network %s)\n", id.Name, id.Subnet)
	default:
		return err
	}
	unitDir := filepath.Join(o.root, "etc/systemd/system")
	if err := os.MkdirAll(unitDir, 0o755); err != nil {
		return err
	}
	changed, err := units.WriteUnit(unitDir, "paddock-node.service", units.NodeService)
	if err != nil {
		return err
	}
	if !o.systemd {
		return nil
	}
	if err := startUnit("paddock-node.service", changed, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nThis server is node %s of the Paddock at %s: 'paddock nodes' there lists it.\n", id.Name, id.ControlPlane)
	return nil
}

// writeConfig writes the configuration file when it is missing (and keeps
// one that is there).
func writeConfig(o installOptions, out io.Writer) error {
	conf := filepath.Join(o.root, "etc/paddock/paddock.toml")
	if _, err := os.Stat(conf); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
			return err
		}
		body := fmt.Sprintf("# paddockd configuration: see the README for every key.\nruntime = %q\n", o.runtime)
		if o.hostname != "" {
			body += fmt.Sprintf("hostname = %q\ntls = %q\n", o.hostname, o.tls)
		}
		if o.image != "" {
			body += fmt.Sprintf("image = %q\n", o.image)
		}
		if o.sshListen != "" && o.sshListen != ":2222" {
			body += fmt.Sprintf("ssh_listen = %q\n", o.sshListen)
		}
		if err := os.WriteFile(conf, []byte(body), 0o640); err != nil {
			return err
		}
		fmt.Fprintf(out, "config: wrote %s\n", conf)
	} else if err != nil {
		return err
	} else {
		fmt.Fprintf(out, "config: kept %s\n", conf)
	}
	return nil
}
