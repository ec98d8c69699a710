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
	Owner       int64
}

// AddSSHKey registers a key; ErrConflict if its fingerprint or name is taken.
func (s *Store) AddSSHKey(k SSHKey) error {
	_, err := s.db.Exec(`INSERT INTO ssh_keys (fingerprint, name, key, created, owner) VALUES (?,?,?,?,?)`, k.Fingerprint, k.Name, k.Key, unix(k.Created), k.Owner)
	if err != nil && strings.Contains(err.Error(), "UNIQUE") {
		return ErrConflict
	}
	return err
}

// SSHKeyOwner returns the name and owner of the key with a fingerprint.
func (s *Store) SSHKeyOwner(fingerprint string) (name string, owner int64, err error) {
	err = s.db.QueryRow(`SELECT name, owner FROM ssh_keys WHERE fingerprint=?`, fingerprint).Scan(&name, &owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, ErrNotFound
	}
	return name, owner, err
}

// SSHKeys lists a user's registered keys by name.
func (s *Store) SSHKeys(owner int64) ([]SSHKey, error) {
	return listAll(s.db, `SELECT fingerprint, name, key, created, owner FROM ssh_keys WHERE owner=? ORDER BY name`, func(r scanner) (SSHKey, error) {
		var k SSHKey
		var c int64
		err := r.Scan(&k.Fingerprint, &k.Name, &k.Key, &c, &k.Owner)
		k.Created = fromUnix(c)
		return k, err
	}, owner)
}

// DeleteSSHKey removes one of a user's keys by name or fingerprint.
func (s *Store) DeleteSSHKey(owner int64, nameOrFingerprint string) error {
	res, err := s.db.Exec(`DELETE FROM ssh_keys WHERE owner=? AND (name=? OR fingerprint=?)`, owner, nameOrFingerprint, nameOrFingerprint)
	if err != nil {
		return err
	}
	return oneRow(res)
}
