package store

import (
	"database/sql"
	"errors"
	"time"
)

// PutSecret stores a sealed (encrypted) secret.
func (s *Store) PutSecret(name string, sealed []byte, at time.Time) error {
	_, err := s.db.Exec(`INSERT INTO secrets (name, sealed, updated) VALUES (?,?,?)
		ON CONFLICT(name) DO UPDATE SET sealed=excluded.sealed, updated=excluded.updated`, name, sealed, unix(at))
	return err
}

// Secret returns a sealed secret.
func (s *Store) Secret(name string) ([]byte, error) {
	var b []byte
	err := s.db.QueryRow(`SELECT sealed FROM secrets WHERE name=?`, name).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return b, err
}

// SecretNames lists the secrets' names and when each was set.
func (s *Store) SecretNames() (map[string]time.Time, error) {
	rows, err := s.db.Query(`SELECT name, updated FROM secrets ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var n string
		var u int64
		if err := rows.Scan(&n, &u); err != nil {
			return nil, err
		}
		out[n] = fromUnix(u)
	}
	return out, rows.Err()
}

// DeleteSecret removes a secret.
func (s *Store) DeleteSecret(name string) error {
	res, err := s.db.Exec(`DELETE FROM secrets WHERE name=?`, name)
	if err != nil {
		return err
	}
	return oneRow(res)
}
