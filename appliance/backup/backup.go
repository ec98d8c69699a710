// Package backup copies paddockd's own state, not the boxes' or drives'
// (which have snapshots and drive backups of their own): a gzipped tar of
// the database (a consistent copy taken while the server runs), the key
// that seals secrets, the SSH gateway's host key, local mode's token, the
// front door's certificates and account, and the configuration file.
// Restore puts them back on a stopped server's (empty) state directory.
package backup

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/paddock-dev/paddock/appliance/archive"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Files are the state directory's files and folders a backup keeps,
// beside the database.
var Files = []string{"secret.key", "ssh_host_ed25519_key", "local.token", "caddy"}

// Write writes the backup of the state in stateDir (and the configuration
// file at configPath, if there is one) to w.
func Write(w io.Writer, st *store.Store, stateDir, configPath string) error {
	tmp, err := os.MkdirTemp(stateDir, ".backup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	db := filepath.Join(tmp, "paddock.db")
	if err := st.BackupTo(db); err != nil {
		return fmt.Errorf("copying the database: %w", err)
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	add := func(name, src string) error {
		return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			h, err := tar.FileInfoHeader(info, "")
			if err != nil {
				return err
			}
			h.Name = path.Join(name, filepath.ToSlash(rel))
			h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
			if d.IsDir() {
				h.Name += "/"
				return tw.WriteHeader(h)
			}
			if !info.Mode().IsRegular() {
				return nil
			}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		})
	}
	if err := add("state/paddock.db", db); err != nil {
		return err
	}
	for _, f := range Files {
		p := filepath.Join(stateDir, f)
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := add("state/"+f, p); err != nil {
			return err
		}
	}
	if configPath != "" {
		if _, err := os.Stat(configPath); err == nil {
			if err := add("config/paddock.toml", configPath); err != nil {
				return err
			}
		}
	}
	stamp := []byte("paddock backup " + time.Now().UTC().Format(time.RFC3339) + "\n")
	tw.WriteHeader(&tar.Header{Name: "MANIFEST", Mode: 0o600, Size: int64(len(stamp)), ModTime: time.Now()})
	tw.Write(stamp)
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// Restore puts a backup back: the state into stateDir, which must hold no
// database (unless force), and the configuration file to configPath when
// the backup has one and configPath is not "". The archive is checked
// whole (no name may leave its folder) before anything is written.
func Restore(r io.Reader, stateDir, configPath string, force bool) error {
	if _, err := os.Stat(filepath.Join(stateDir, "paddock.db")); err == nil && !force {
		return fmt.Errorf("%s already holds a database: restore into an empty state directory, or give --force", stateDir)
	}
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("not a paddock backup: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(stateDir)), ".restore-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	sp, err := archive.Spool(gz, tmp, 0, nil)
	if err != nil {
		return fmt.Errorf("refusing the backup: %v; nothing was written", err)
	}
	defer sp.Close()
	out := filepath.Join(tmp, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		return err
	}
	if err := archive.Unpack(sp, out, 0); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(out, "state", "paddock.db")); err != nil {
		return errors.New("not a paddock backup: it has no state/paddock.db")
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return err
	}
	for _, stale := range []string{"paddock.db-wal", "paddock.db-shm"} {
		os.Remove(filepath.Join(stateDir, stale))
	}
	ents, err := os.ReadDir(filepath.Join(out, "state"))
	if err != nil {
		return err
	}
	for _, e := range ents {
		dst := filepath.Join(stateDir, e.Name())
		if force {
			os.RemoveAll(dst)
		}
		if err := os.Rename(filepath.Join(out, "state", e.Name()), dst); err != nil {
			return err
		}
	}
	if configPath != "" {
		src := filepath.Join(out, "config", "paddock.toml")
		if _, err := os.Stat(src); err == nil {
			if err := os.MkdirAll(filepath.Dir(configPath), 0o755); err != nil {
				return err
			}
			b, err := os.ReadFile(src)
			if err != nil {
				return err
			}
			if err := os.WriteFile(configPath, b, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
