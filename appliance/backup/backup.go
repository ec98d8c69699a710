// Package backup copies paddockd's own state, not the boxes' or drives'
// (which have snapshots and drive backups of their own): a gzipped tar of
// the database (a consistent copy taken while the server runs), the key
// that seals secrets, the SSH gateway's host key, local mode's token, the
// front door's certificates and account, the cluster's authority, and the
// configuration file.
// Restore puts them back on a stopped server's (empty) state directory.
//
// A backup holds the keys to the server (the key that seals every secret,
// the local token), so it is always encrypted, with age: to a passphrase
// the owner gives (scrypt) or to age public keys, and restored only with
// that passphrase or a matching identity. Without it the file reveals no
// secret and no token. Every file inside is 0600.
//
// Schedule writes one every backup_every to a Place (the object store's
// backups/, or a folder) and keeps the newest backup_keep; Latest and
// the places' Open are what 'paddockd restore --from' reads.
package backup

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"filippo.io/age"

	"github.com/paddock-dev/paddock/appliance/archive"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Files are the state directory's files and folders a backup keeps,
// beside the database.
// broker.key keeps the boxes' stand-ins for brokered secrets what they
// were; sso.key opens the sign-in providers' refresh tokens; cluster/ is
// the cluster's authority (its key signs the nodes' certificates), so
// that a restored control plane still reaches its nodes, and they it,
// without each joining again.
var Files = []string{"secret.key", "audit.key", "broker.key", "sso.key", "ssh_host_ed25519_key", "local.token", "caddy", "cluster"}

// Key is what a backup is encrypted to (Recipients) or opened with
// (Identities).
type Key struct {
	Recipients []age.Recipient
	Identities []age.Identity
}

// MinPassphrase is the shortest passphrase a backup is encrypted to.
const MinPassphrase = 12

// Passphrase is the key of a passphrase, both ways.
func Passphrase(p string) (Key, error) {
	if len(p) < MinPassphrase {
		return Key{}, fmt.Errorf("a backup's passphrase needs at least %d characters", MinPassphrase)
	}
	r, err := age.NewScryptRecipient(p)
	if err != nil {
		return Key{}, err
	}
	i, err := age.NewScryptIdentity(p)
	if err != nil {
		return Key{}, err
	}
	return Key{Recipients: []age.Recipient{r}, Identities: []age.Identity{i}}, nil
}

// Write writes the backup of the state in stateDir (and the configuration
// file at configPath, if there is one) to w, encrypted to key.
func Write(w io.Writer, key Key, st *store.Store, stateDir, configPath string) error {
	if len(key.Recipients) == 0 {
		return errors.New("a backup holds the keys to the server: give a passphrase or an age recipient to encrypt it to")
	}
	enc, err := age.Encrypt(w, key.Recipients...)
	if err != nil {
		return err
	}
	if err := write(enc, st, stateDir, configPath); err != nil {
		return err
	}
	return enc.Close()
}

func write(w io.Writer, st *store.Store, stateDir, configPath string) error {
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
			h.Mode = 0o600 // the database and keys: for root alone
			if d.IsDir() {
				h.Mode = 0o700
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
func Restore(r io.Reader, key Key, stateDir, configPath string, force bool) error {
	if _, err := os.Stat(filepath.Join(stateDir, "paddock.db")); err == nil && !force {
		return fmt.Errorf("%s already holds a database: restore into an empty state directory, or give --force", stateDir)
	}
	br := bufio.NewReader(r)
	var plain io.Reader = br
	if magic, _ := br.Peek(2); !bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		// A backup from before they were encrypted is a plain gzip.
		dec, err := age.Decrypt(br, key.Identities...)
		if err != nil {
			return fmt.Errorf("cannot open the backup (a wrong passphrase or key?): %w", err)
		}
		plain = dec
	}
	gz, err := gzip.NewReader(plain)
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
