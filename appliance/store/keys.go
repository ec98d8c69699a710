package store

import (
	"database/sql"
	"errors"
	"strings"
	"time"
)

// SSHKey is a registered public key.
type SSHKey struct {
	Fingerprint string
	Name        string
	Key         string // authorized_keys form
	Created     time.Time
}

// AddSSHKey registers a key; ErrConflict if its fingerprint or name is taken.
func (s *Store) AddSSHKey(k SSHKey) error {
	_, err := s.db.Exec(`INSERT INTO ssh_keys (fingerprint, name, key, created) VALUES (?,?,?,?)`, k.Fingerprint, k.Name, k.Key, unix(k.Created))
	if err != nil && strings.Contains(err.Error(), "UNIQUE") {
		return ErrConflict
	}
	return err
}

// SSHKeyName returns the name of the key with a fingerprint.
func (s *Store) SSHKeyName(fingerprint string) (string, error) {
	var n string
	err := s.db.QueryRow(`SELECT name FROM ssh_keys WHERE fingerprint=?`, fingerprint).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	return n, err
}

// SSHKeys lists registered keys by name.
func (s *Store) SSHKeys() ([]SSHKey, error) {
	return listAll(s.db, `SELECT fingerprint, name, key, created FROM ssh_keys ORDER BY name`, func(r scanner) (SSHKey, error) {
		var k SSHKey
		var c int64
		err := r.Scan(&k.Fingerprint, &k.Name, &k.Key, &c)
		k.Created = fromUnix(c)
		return k, err
	})
}

// DeleteSSHKey removes a key by name or fingerprint.
func (s *Store) DeleteSSHKey(nameOrFingerprint string) error {
	res, err := s.db.Exec(`DELETE FROM ssh_keys WHERE name=? OR fingerprint=?`, nameOrFingerprint, nameOrFingerprint)
	if err != nil {
		return err
	}
	return oneRow(res)
}
