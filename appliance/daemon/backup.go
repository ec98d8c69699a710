package daemon

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/paddock-dev/paddock/appliance/backup"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/store"
)

// backupCmd is 'paddockd backup --to FILE': a copy of the server's own
// state, taken while it runs.
func backupCmd(args, environ []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("paddockd backup", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	config.Flags(fs)
	to := fs.String("to", "", "the backup file to write (a gzipped tar; - for stdout)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *to == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: paddockd backup --to FILE [--state-dir D] [--config F]")
		return 2
	}
	cfg, err := config.Load(fs, environ)
	if err != nil {
		fmt.Fprintln(stderr, "paddockd backup:", err)
		return 1
	}
	if _, err := os.Stat(filepath.Join(cfg.StateDir, "paddock.db")); err != nil {
		fmt.Fprintf(stderr, "paddockd backup: no database in %s\n", cfg.StateDir)
		return 1
	}
	st, err := store.Open(cfg.StateDir)
	if err != nil {
		fmt.Fprintln(stderr, "paddockd backup:", err)
		return 1
	}
	defer st.Close()
	confPath, _ := config.Path(fs, environ)
	if *to == "-" {
		err = backup.Write(stdout, st, cfg.StateDir, confPath)
	} else {
		err = writeAtomically(*to, func(w io.Writer) error { return backup.Write(w, st, cfg.StateDir, confPath) })
	}
	if err != nil {
		fmt.Fprintln(stderr, "paddockd backup:", err)
		return 1
	}
	if *to != "-" {
		fmt.Fprintf(stdout, "wrote %s: the state of %s (not boxes or drives: they have snapshots and drive backups)\n", *to, cfg.StateDir)
	}
	return 0
}

// writeAtomically writes path through a temporary file beside it, so
// that a failed backup leaves no partial file.
func writeAtomically(path string, fn func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".paddock-backup-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// restoreCmd is 'paddockd restore FILE': the state back, on a stopped
// server.
func restoreCmd(args, environ []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("paddockd restore", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	config.Flags(fs)
	force := fs.Bool("force", false, "replace a state directory that holds a database")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: paddockd restore FILE [--state-dir D] [--config F] [--force]")
		return 2
	}
	cfg, err := config.Load(fs, environ)
	if err != nil {
		// The configuration file itself may be what is being restored:
		// the flags and defaults say where.
		d := config.Defaults()
		cfg = config.Config{StateDir: d["state_dir"].(string), Socket: d["socket"].(string)}
		if f := fs.Lookup("state-dir"); f != nil && f.Changed {
			cfg.StateDir = f.Value.String()
		}
		if f := fs.Lookup("socket"); f != nil && f.Changed {
			cfg.Socket = f.Value.String()
		}
	}
	if cfg.Socket != "" {
		if c, err := net.DialTimeout("unix", cfg.Socket, time.Second); err == nil {
			c.Close()
			fmt.Fprintf(stderr, "paddockd restore: paddockd is running (%s answers): stop it first\n", cfg.Socket)
			return 1
		}
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "paddockd restore:", err)
		return 1
	}
	defer f.Close()
	confPath, _ := config.Path(fs, environ)
	if err := backup.Restore(f, cfg.StateDir, confPath, *force); err != nil {
		fmt.Fprintln(stderr, "paddockd restore:", err)
		return 1
	}
	fmt.Fprintf(stdout, "restored %s into %s; start paddockd\n", fs.Arg(0), cfg.StateDir)
	return 0
}
