package store

import (
	"database/sql"
	"errors"
	"strings"
	"time"
)

// Roles of users.
const (
	RoleOwner = "owner"
	// RoleAdmin does what an owner does with users and their objects,
	// but not the server's settings (its servers, secrets shared with
	// every box) nor making or removing owners.
	RoleAdmin  = "admin"
	RoleMember = "member"
	// RoleViewer owns nothing and changes nothing: it reads the boxes
	// shared with it.
	RoleViewer = "viewer"
)

// SeesAll says whether u sees and manages every user's objects: an
// owner or an admin.
func (u User) SeesAll() bool { return u.Role == RoleOwner || u.Role == RoleAdmin }

// User is a person (or the local machine's owner) who may use the API.
// Password is a slow hash ("" when the user cannot log in with one).
type User struct {
	ID       int64
	Name     string
	Role     string
	Password string
	Created  time.Time
}

const userCols = `id, name, role, password, created`

func scanUser(r scanner) (User, error) {
	var u User
	var c int64
	err := r.Scan(&u.ID, &u.Name, &u.Role, &u.Password, &c)
	if errors.Is(err, sql.ErrNoRows) {
		return u, ErrNotFound
	}
	u.Created = fromUnix(c)
	return u, err
}

func createUser(tx *sql.Tx, u User) (User, error) {
	res, err := tx.Exec(`INSERT INTO users (name, role, password, created) VALUES (?,?,?,?)`, u.Name, u.Role, u.Password, unix(u.Created))
	if err != nil && strings.Contains(err.Error(), "UNIQUE") {
		return u, ErrConflict
	}
	if err != nil {
		return u, err
	}
	u.ID, err = res.LastInsertId()
	return u, err
}

// CreateUser adds a user; ErrConflict if the name is taken.
func (s *Store) CreateUser(u User) (User, error) {
	tx, err := s.db.Begin()
	if err != nil {
		return u, err
	}
	defer tx.Rollback()
	if u, err = createUser(tx, u); err != nil {
		return u, err
	}
	return u, tx.Commit()
}

// GetUser reads a user by id.
func (s *Store) GetUser(id int64) (User, error) {
	return scanUser(s.q.QueryRow(`SELECT `+userCols+` FROM users WHERE id=?`, id))
}

// GetUser reads a user by id in the transaction.
func (t *Tx) GetUser(id int64) (User, error) {
	return scanUser(t.tx.QueryRow(`SELECT `+userCols+` FROM users WHERE id=?`, id))
}

// UserByName reads a user by name.
func (s *Store) UserByName(name string) (User, error) {
	return scanUser(s.q.QueryRow(`SELECT `+userCols+` FROM users WHERE name=?`, name))
}

// Users lists users by name.
func (s *Store) Users() ([]User, error) {
	return listAll(s.q, `SELECT `+userCols+` FROM users ORDER BY name`, scanUser)
}

// HasOwner reports whether an owner exists.
func (s *Store) HasOwner() (bool, error) {
	var n int
	err := s.q.QueryRow(`SELECT count(*) FROM users WHERE role=?`, RoleOwner).Scan(&n)
	return n > 0, err
}

// DeleteUser removes a user with their tokens, sessions and SSH keys.
// What they own (boxes, drives, policies) stays, visible to owners.
func (s *Store) DeleteUser(id int64) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.Exec(`DELETE FROM users WHERE id=?`, id)
	if err != nil {
		return err
	}
	if err := oneRow(res); err != nil {
		return err
	}
	for _, q := range []string{`DELETE FROM tokens WHERE user_id=?`, `DELETE FROM user_ssh_keys WHERE owner=?`, `DELETE FROM user_secrets WHERE owner=?`} {
		if _, err := tx.Exec(q, id); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Link kinds: the owner setup link and invitations.
const (
	LinkSetup  = "setup"
	LinkInvite = "invite"
)

// Link is a one-time link (its token's hash only).
type Link struct {
	Hash    string
	Kind    string
	Role    string
	Created time.Time
	Expires time.Time
	// By is the id of the user who made it (0: paddockd, for a setup
	// link).
	By int64
}

// LinkIDLen is how many of a link's hash's hex digits name it (in a
// list, and to revoke it): enough that two live links never share them,
// and nothing that could be used as the link.
const LinkIDLen = 12

// ID is the link's name: the first LinkIDLen hex digits of its hash.
func (l Link) ID() string { return l.Hash[:min(LinkIDLen, len(l.Hash))] }

// AddLink stores a one-time link. A new setup link replaces older ones.
func (s *Store) AddLink(l Link) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if l.Kind == LinkSetup {
		if _, err := tx.Exec(`DELETE FROM links WHERE kind=?`, LinkSetup); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(`INSERT INTO links (hash, kind, role, created, expires, by_user) VALUES (?,?,?,?,?,?)`,
		l.Hash, l.Kind, l.Role, unix(l.Created), unix(l.Expires), l.By); err != nil {
		return err
	}
	return tx.Commit()
}

// Links lists the links of a kind that have not expired at now, oldest
// first.
func (s *Store) Links(kind string, now time.Time) ([]Link, error) {
	rows, err := s.q.Query(`SELECT hash, kind, role, created, expires, by_user FROM links WHERE kind=? AND expires>? ORDER BY created, hash`, kind, unix(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Link
	for rows.Next() {
		var l Link
		var c, e int64
		if err := rows.Scan(&l.Hash, &l.Kind, &l.Role, &c, &e, &l.By); err != nil {
			return nil, err
		}
		l.Created, l.Expires = fromUnix(c), fromUnix(e)
		out = append(out, l)
	}
	return out, rows.Err()
}

// DeleteLink removes a link, so that it signs nobody up; ErrNotFound if
// it is gone (used, or already removed).
func (s *Store) DeleteLink(hash string) error {
	res, err := s.db.Exec(`DELETE FROM links WHERE hash=?`, hash)
	if err != nil {
		return err
	}
	return oneRow(res)
}

// GetLink reads a link that has not expired at now; ErrNotFound otherwise.
func (s *Store) GetLink(hash string, now time.Time) (Link, error) {
	var l Link
	var c, e int64
	err := s.q.QueryRow(`SELECT hash, kind, role, created, expires FROM links WHERE hash=? AND expires>?`, hash, unix(now)).
		Scan(&l.Hash, &l.Kind, &l.Role, &c, &e)
	if errors.Is(err, sql.ErrNoRows) {
		return l, ErrNotFound
	}
	l.Created, l.Expires = fromUnix(c), fromUnix(e)
	return l, err
}

// RedeemLink uses a link once: in one transaction it deletes the link
// (ErrNotFound if it is gone or expired) and creates the user with the
// link's role. A setup link also fails, with ErrConflict, once an owner
// exists.
func (s *Store) RedeemLink(hash string, now time.Time, u User) (User, error) {
	tx, err := s.db.Begin()
	if err != nil {
		return u, err
	}
	defer tx.Rollback()
	var kind, role string
	err = tx.QueryRow(`SELECT kind, role FROM links WHERE hash=? AND expires>?`, hash, unix(now)).Scan(&kind, &role)
	if errors.Is(err, sql.ErrNoRows) {
		return u, ErrNotFound
	}
	if err != nil {
		return u, err
	}
	if _, err := tx.Exec(`DELETE FROM links WHERE hash=?`, hash); err != nil {
		return u, err
	}
	if kind == LinkSetup {
		var n int
		if err := tx.QueryRow(`SELECT count(*) FROM users WHERE role=?`, RoleOwner).Scan(&n); err != nil {
			return u, err
		}
		if n > 0 {
			return u, ErrConflict
		}
	}
	u.Role = role
	if u, err = createUser(tx, u); err != nil {
		return u, err
	}
	return u, tx.Commit()
}

// Token kinds: API tokens (CLI, automation) and browser sessions.
const (
	TokenAPI     = "api"
	TokenSession = "session"
)

// Token is a stored token (its hash only).
type Token struct {
	Hash    string
	Name    string
	UserID  int64
	Kind    string
	Created time.Time
	Expires *time.Time
	// CSRF is a session's anti-forgery value, sent back by its pages.
	CSRF string
}

// AddToken stores a token.
func (s *Store) AddToken(t Token) error {
	if t.Kind == "" {
		t.Kind = TokenAPI
	}
	_, err := s.q.Exec(`INSERT INTO tokens (hash, name, created, user_id, kind, expires, csrf) VALUES (?,?,?,?,?,?,?)`,
		t.Hash, t.Name, unix(t.Created), t.UserID, t.Kind, expiresArg(t.Expires), t.CSRF)
	return err
}

// LookupToken returns the unexpired token with a hash and its user.
func (s *Store) LookupToken(hash string, now time.Time) (Token, User, error) {
	var t Token
	var u User
	var c, uc int64
	var exp sql.NullInt64
	err := s.q.QueryRow(`SELECT t.hash, t.name, t.created, t.user_id, t.kind, t.expires, t.csrf,
		u.id, u.name, u.role, u.password, u.created
		FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash=?`, hash).
		Scan(&t.Hash, &t.Name, &c, &t.UserID, &t.Kind, &exp, &t.CSRF, &u.ID, &u.Name, &u.Role, &u.Password, &uc)
	if errors.Is(err, sql.ErrNoRows) {
		return t, u, ErrNotFound
	}
	if err != nil {
		return t, u, err
	}
	t.Created, u.Created = fromUnix(c), fromUnix(uc)
	if exp.Valid {
		e := fromUnix(exp.Int64)
		if !now.Before(e) {
			return t, u, ErrNotFound
		}
		t.Expires = &e
	}
	return t, u, nil
}

// Tokens lists a user's tokens of a kind by name.
func (s *Store) Tokens(user int64, kind string) ([]Token, error) {
	return listAll(s.q, `SELECT hash, name, created, user_id, kind FROM tokens WHERE user_id=? AND kind=? ORDER BY name`, func(r scanner) (Token, error) {
		var t Token
		var c int64
		err := r.Scan(&t.Hash, &t.Name, &c, &t.UserID, &t.Kind)
		t.Created = fromUnix(c)
		return t, err
	}, user, kind)
}

// DeleteToken revokes a user's API tokens with a name.
func (s *Store) DeleteToken(user int64, name string) error {
	res, err := s.q.Exec(`DELETE FROM tokens WHERE user_id=? AND kind=? AND name=?`, user, TokenAPI, name)
	if err != nil {
		return err
	}
	return oneRow(res)
}

// DeleteTokenHash revokes one token (logout).
func (s *Store) DeleteTokenHash(hash string) error {
	res, err := s.q.Exec(`DELETE FROM tokens WHERE hash=?`, hash)
	if err != nil {
		return err
	}
	return oneRow(res)
}
