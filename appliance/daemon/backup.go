package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"filippo.io/age"
	"github.com/spf13/pflag"

	"github.com/paddock-dev/paddock/appliance/backup"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/objstore"
	"github.com/paddock-dev/paddock/appliance/store"
)

// backupCmd is 'paddockd backup --to FILE': a copy of the server's own
// state, taken while it runs.
func backupCmd(args, environ []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("paddockd backup", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	config.Flags(fs)
	to := fs.String("to", "", "the backup file to write (an age-encrypted gzipped tar; - for stdout)")
	pass := fs.String("passphrase-file", "", "encrypt to the passphrase on this file's first line (at least 12 characters)")
	recips := fs.StringArray("recipient", nil, "encrypt to this age public key (age1...); repeatable")
	recipFile := fs.String("recipients-file", "", "encrypt to the age public keys in this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *to == "" || fs.NArg() > 0 || (*pass == "" && len(*recips) == 0 && *recipFile == "") {
		fmt.Fprintln(stderr, "usage: paddockd backup --to FILE (--passphrase-file F | --recipient AGE1... | --recipients-file F) [--state-dir D] [--config F]")
		fmt.Fprintln(stderr, "a backup holds the keys to the server (the key that seals every secret, the local token): it is always encrypted")
		return 2
	}
	key, err := backupKey(*pass, *recips, *recipFile, "")
	if err != nil {
		fmt.Fprintln(stderr, "paddockd backup:", err)
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
		err = backup.Write(stdout, key, st, cfg.StateDir, confPath)
	} else {
		err = writeAtomically(*to, func(w io.Writer) error { return backup.Write(w, key, st, cfg.StateDir, confPath) })
	}
	if err != nil {
		fmt.Fprintln(stderr, "paddockd backup:", err)
		return 1
	}
	if *to != "-" {
		fmt.Fprintf(stdout, "wrote %s: the state of %s, encrypted (not boxes or drives: they have snapshots and drive backups); keep the passphrase or key apart from it\n", *to, cfg.StateDir)
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
	pass := fs.String("passphrase-file", "", "the backup's passphrase, on this file's first line")
	ident := fs.String("identity", "", "a file of age identities (AGE-SECRET-KEY-...) one of which opens the backup")
	from := fs.String("from", "", `restore a scheduled backup (backup_to) from "object_store" (the configuration's) or a folder: NAME, or the newest when none is given`)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if (*from == "" && fs.NArg() != 1) || (*from != "" && fs.NArg() > 1) {
		fmt.Fprintln(stderr, "usage: paddockd restore (FILE | --from object_store|FOLDER [NAME]) (--passphrase-file F | --identity F) [--state-dir D] [--config F] [--force]")
		return 2
	}
	key, err := backupKey(*pass, nil, "", *ident)
	if err != nil {
		fmt.Fprintln(stderr, "paddockd restore:", err)
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
	var f io.ReadCloser
	what := fs.Arg(0)
	if *from != "" {
		f, what, err = openScheduled(cfg, *from, fs.Arg(0))
	} else {
		f, err = os.Open(what)
	}
	if err != nil {
		fmt.Fprintln(stderr, "paddockd restore:", err)
		return 1
	}
	defer f.Close()
	confPath, _ := config.Path(fs, environ)
	if err := backup.Restore(f, key, cfg.StateDir, confPath, *force); err != nil {
		fmt.Fprintln(stderr, "paddockd restore:", err)
		return 1
	}
	fmt.Fprintf(stdout, "restored %s into %s; start paddockd\n", what, cfg.StateDir)
	return 0
}

// openScheduled opens a scheduled backup: name (the newest when "") in
// the object store of cfg (from "object_store") or in folder from.
func openScheduled(cfg config.Config, from, name string) (io.ReadCloser, string, error) {
	ctx := context.Background()
	var place backup.Place = backup.Folder(from)
	if from == "object_store" {
		if !cfg.ObjectStore.Enabled() {
			return nil, "", errors.New("--from object_store: the configuration has no [object_store] (set it in paddock.toml, as on the server the backup came from)")
		}
		bucket, err := objstore.Open(cfg.ObjectStore, cfg.Instance)
		if err != nil {
			return nil, "", err
		}
		place = backup.Bucket{Store: bucket}
	} else if !filepath.IsAbs(from) {
		return nil, "", fmt.Errorf(`--from must be "object_store" or an absolute folder, not %q`, from)
	}
	if name == "" {
		latest, err := backup.Latest(ctx, place)
		if err != nil {
			return nil, "", err
		}
		if latest == "" {
			return nil, "", fmt.Errorf("no backup in %s", place)
		}
		name = latest
	}
	rc, err := place.Open(ctx, name)
	if err != nil {
		return nil, "", fmt.Errorf("backup %s in %s: %w", name, place, err)
	}
	return rc, name + " from " + place.String(), nil
}

// backupKey makes a backup's key from the flags: a passphrase (its file's
// first line), age public keys (to encrypt to) and identities (to open
// with).
func backupKey(passFile string, recipients []string, recipientsFile, identityFile string) (backup.Key, error) {
	var k backup.Key
	if passFile != "" {
		b, err := os.ReadFile(passFile)
		if err != nil {
			return k, err
		}
		line, _, _ := strings.Cut(string(b), "\n")
		if k, err = backup.Passphrase(strings.TrimRight(line, "\r")); err != nil {
			return k, err
		}
	}
	for _, r := range recipients {
		rc, err := age.ParseX25519Recipient(r)
		if err != nil {
			return k, fmt.Errorf("--recipient %q: %w", r, err)
		}
		k.Recipients = append(k.Recipients, rc)
	}
	if recipientsFile != "" {
		f, err := os.Open(recipientsFile)
		if err != nil {
			return k, err
		}
		defer f.Close()
		rs, err := age.ParseRecipients(f)
		if err != nil {
			return k, fmt.Errorf("%s: %w", recipientsFile, err)
		}
		k.Recipients = append(k.Recipients, rs...)
	}
	if identityFile != "" {
		f, err := os.Open(identityFile)
		if err != nil {
			return k, err
		}
		defer f.Close()
		ids, err := age.ParseIdentities(f)
		if err != nil {
			return k, fmt.Errorf("%s: %w", identityFile, err)
		}
		k.Identities = append(k.Identities, ids...)
	}
	return k, nil
}
