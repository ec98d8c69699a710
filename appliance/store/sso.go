package store

import (
	"database/sql"
	"errors"
	"time"
)

// SSOLink ties a user to who an OpenID provider says they are.
type SSOLink struct {
	UserID            int64
	Provider, Subject string
	Email             string
	// Refresh is their refresh token at the provider, sealed ("": none).
	Refresh string
	// SignedIn is their last sign-in; Checked the last look at the
	// provider since (a refresh).
	SignedIn, Checked time.Time
}

const ssoCols = `user_id, provider, subject, email, refresh, signed_in, checked`

func scanSSO(r scanner) (SSOLink, error) {
	var l SSOLink
	var si, ch int64
	err := r.Scan(&l.UserID, &l.Provider, &l.Subject, &l.Email, &l.Refresh, &si, &ch)
	if errors.Is(err, sql.ErrNoRows) {
		return l, ErrNotFound
	}
	l.SignedIn, l.Checked = fromUnix(si), fromUnix(ch)
	return l, err
}

// SSOUser reads the user a provider's subject signed in as.
func (s *Store) SSOUser(provider, subject string) (User, SSOLink, error) {
	l, err := scanSSO(s.q.QueryRow(`SELECT `+ssoCols+` FROM sso_users WHERE provider=? AND subject=?`, provider, subject))
	if err != nil {
		return User{}, l, err
	}
	u, err := s.GetUser(l.UserID)
	return u, l, err
}

// SSOLinks lists every user's link to a provider.
func (s *Store) SSOLinks() ([]SSOLink, error) {
	return listAll(s.q, `SELECT `+ssoCols+` FROM sso_users ORDER BY user_id`, scanSSO)
}

// AddSSOUser makes a user and their link together; ErrConflict when the
// name is taken.
func (s *Store) AddSSOUser(u User, l SSOLink) (User, error) {
	tx, err := s.db.Begin()
	if err != nil {
		return u, err
	}
	defer tx.Rollback()
	if u, err = createUser(tx, u); err != nil {
		return u, err
	}
	if _, err := tx.Exec(`INSERT INTO sso_users (`+ssoCols+`) VALUES (?,?,?,?,?,?,?)`, u.ID, l.Provider, l.Subject, l.Email, l.Refresh, unix(l.SignedIn), unix(l.Checked)); err != nil {
		return u, err
	}
	return u, tx.Commit()
}

// UpdateSSO rewrites a link and, when role is not empty, its user's role
// (never an owner's).
func (s *Store) UpdateSSO(l SSOLink, role string) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`UPDATE sso_users SET email=?, refresh=?, signed_in=?, checked=? WHERE user_id=?`, l.Email, l.Refresh, unix(l.SignedIn), unix(l.Checked), l.UserID); err != nil {
		return err
	}
	if role != "" {
		if _, err := tx.Exec(`UPDATE users SET role=? WHERE id=? AND role != ? AND role != ?`, role, l.UserID, RoleOwner, role); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// RevokeTokens removes every API token and session of a user: how many.
func (s *Store) RevokeTokens(user int64) (int64, error) {
	res, err := s.q.Exec(`DELETE FROM tokens WHERE user_id=?`, user)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
