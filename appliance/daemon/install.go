package daemon

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/pflag"

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
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := installSteps(*root, *runtime, !*noStart, stdout); err != nil {
		fmt.Fprintln(stderr, "paddockd install:", err)
		return 1
	}
	return 0
}

func installSteps(root, runtime string, systemd bool, out io.Writer) error {
	if runtime != "sysbox-runc" && runtime != "runc" {
		return fmt.Errorf("runtime %q: use sysbox-runc or runc", runtime)
	}
	conf := filepath.Join(root, "etc/paddock/paddock.toml")
	if _, err := os.Stat(conf); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
			return err
		}
		body := fmt.Sprintf("# paddockd configuration: see the README for every key.\nruntime = %q\n", runtime)
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
