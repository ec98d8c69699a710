package store

import (
	"database/sql"
	"errors"
	"time"
)

// SecretInfo is what may be told of a secret: never its value.
type SecretInfo struct {
	Owner   int64
	Name    string
	Updated time.Time
	// Shared: an owner's secret that members' boxes use too when they have
	// none of that name (readable in those boxes, so by those members).
	Shared bool
}

// PutSecret stores a user's sealed (encrypted) secret.
func (s *Store) PutSecret(owner int64, name string, sealed []byte, shared bool, at time.Time) error {
	_, err := s.db.Exec(`INSERT INTO user_secrets (owner, name, sealed, updated, shared) VALUES (?,?,?,?,?)
		ON CONFLICT(owner, name) DO UPDATE SET sealed=excluded.sealed, updated=excluded.updated, shared=excluded.shared`,
		owner, name, sealed, unix(at), shared)
	return err
}

// Secret returns the sealed secret a box of owner gets under name: the
// owner's own, or else one an owner of the server shared.
func (s *Store) Secret(owner int64, name string) ([]byte, error) {
	var b []byte
	err := s.db.QueryRow(`SELECT sealed FROM user_secrets WHERE name=? AND (owner=? OR shared=1)
		ORDER BY owner=? DESC LIMIT 1`, name, owner, owner).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return b, err
}

// Secrets lists a user's secrets and the shared ones (names and times only).
func (s *Store) Secrets(owner int64) ([]SecretInfo, error) {
	return listAll(s.db, `SELECT owner, name, updated, shared FROM user_secrets WHERE owner=? OR shared=1 ORDER BY name, owner`,
		func(r scanner) (SecretInfo, error) {
			var i SecretInfo
			var u int64
			err := r.Scan(&i.Owner, &i.Name, &u, &i.Shared)
			i.Updated = fromUnix(u)
			return i, err
		}, owner)
}

// DeleteSecret removes a user's secret.
func (s *Store) DeleteSecret(owner int64, name string) error {
	res, err := s.db.Exec(`DELETE FROM user_secrets WHERE owner=? AND name=?`, owner, name)
	if err != nil {
		return err
	}
	return oneRow(res)
}
