package daemon

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/paddock-dev/paddock/appliance/config"
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
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o := installOptions{root: *root, runtime: *runtime, systemd: !*noStart, hostname: *hostname, tls: *tlsMode, image: *image, sshListen: *sshListen}
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
	tok, err := svc.SetupLink()
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
	conf := filepath.Join(root, "etc/paddock/paddock.toml")
	if _, err := os.Stat(conf); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
			return err
		}
		body := fmt.Sprintf("# paddockd configuration: see the README for every key.\nruntime = %q\n", runtime)
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
	if err := run("enable", "paddockd.service"); err != nil {
		return err
	}
	if changed && exec.Command("systemctl", "is-active", "--quiet", "paddockd.service").Run() == nil {
		fmt.Fprintln(out, "service: restarting (the unit changed)")
		return run("restart", "paddockd.service")
	}
	fmt.Fprintln(out, "service: starting")
	return run("start", "paddockd.service")
}
