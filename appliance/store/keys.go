package store

import (
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

// AddSSHKey registers a key of a user; ErrConflict if that user has the
// key or a key of that name already.
func (s *Store) AddSSHKey(k SSHKey) error {
	_, err := s.q.Exec(`INSERT INTO user_ssh_keys (fingerprint, name, key, created, owner) VALUES (?,?,?,?,?)`, k.Fingerprint, k.Name, k.Key, unix(k.Created), k.Owner)
	if err != nil && strings.Contains(err.Error(), "UNIQUE") {
		return ErrConflict
	}
	return err
}

// SSHKeyHolders lists every registration of the key with a fingerprint,
// one per user that registered it.
func (s *Store) SSHKeyHolders(fingerprint string) ([]SSHKey, error) {
	return listAll(s.q, `SELECT fingerprint, name, key, created, owner FROM user_ssh_keys WHERE fingerprint=? ORDER BY owner`, scanKey, fingerprint)
}

func scanKey(r scanner) (SSHKey, error) {
	var k SSHKey
	var c int64
	err := r.Scan(&k.Fingerprint, &k.Name, &k.Key, &c, &k.Owner)
	k.Created = fromUnix(c)
	return k, err
}

// SSHKeys lists a user's registered keys by name.
func (s *Store) SSHKeys(owner int64) ([]SSHKey, error) {
	return listAll(s.q, `SELECT fingerprint, name, key, created, owner FROM user_ssh_keys WHERE owner=? ORDER BY name`, scanKey, owner)
}

// DeleteSSHKey removes one of a user's keys by name or fingerprint.
func (s *Store) DeleteSSHKey(owner int64, nameOrFingerprint string) error {
	res, err := s.q.Exec(`DELETE FROM user_ssh_keys WHERE owner=? AND (name=? OR fingerprint=?)`, owner, nameOrFingerprint, nameOrFingerprint)
	if err != nil {
		return err
	}
	return oneRow(res)
}
