package store

import (
	"database/sql"
	"errors"
)

// Grant is a box shared with a user who does not own it.
type Grant struct {
	Box    string
	UserID int64
	// Access is "viewer" (reads it) or "member" (works in it).
	Access string
}

// Access levels of a grant.
const (
	AccessViewer = "viewer"
	AccessMember = "member"
)

// SetGrant shares a box with a user (or changes how).
func (s *Store) SetGrant(g Grant) error {
	_, err := s.q.Exec(`INSERT INTO grants (box, user_id, access) VALUES (?,?,?)
		ON CONFLICT (box, user_id) DO UPDATE SET access=excluded.access`, g.Box, g.UserID, g.Access)
	return err
}

// RemoveGrant stops sharing a box with a user; ErrNotFound when it was not.
func (s *Store) RemoveGrant(box string, user int64) error {
	res, err := s.q.Exec(`DELETE FROM grants WHERE box=? AND user_id=?`, box, user)
	if err != nil {
		return err
	}
	return oneRow(res)
}

// Grants lists who a box is shared with.
func (s *Store) Grants(box string) ([]Grant, error) {
	return listAll(s.q, `SELECT box, user_id, access FROM grants WHERE box=? ORDER BY user_id`, scanGrant, box)
}

// GrantsOf lists the boxes shared with a user.
func (s *Store) GrantsOf(user int64) ([]Grant, error) {
	return listAll(s.q, `SELECT box, user_id, access FROM grants WHERE user_id=? ORDER BY box`, scanGrant, user)
}

func scanGrant(r scanner) (Grant, error) {
	var g Grant
	err := r.Scan(&g.Box, &g.UserID, &g.Access)
	return g, err
}

// GrantOf is how a box is shared with a user ("" when it is not).
func (s *Store) GrantOf(box string, user int64) (string, error) {
	var a string
	err := s.q.QueryRow(`SELECT access FROM grants WHERE box=? AND user_id=?`, box, user).Scan(&a)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return a, err
}
