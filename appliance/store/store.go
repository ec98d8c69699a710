// Package store keeps paddockd's state in SQLite (modernc.org/sqlite, pure
// Go) under the state directory: the declared boxes, drives and snapshots,
// what the reconciler last observed of each box, jobs, and hashed API tokens.
//
// Every change to declared state increments a serial in the same
// transaction, so a plan can name the state it was computed from. The
// database runs in WAL mode; migrations are SQL files (migrations/NNN.sql),
// applied in order at open. Queries made outside a transaction run from statements prepared
// once and kept (package sqlstmt), not parsed again at each call. The audit
// log's table is package auditlog's, whose methods the Store has.
package store

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/paddock-dev/paddock/appliance/store/auditlog"
	"github.com/paddock-dev/paddock/appliance/store/sqlstmt"
	_ "modernc.org/sqlite"
)

// Sentinel errors, mapped to HTTP statuses by the API server.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("already exists")
	// ErrRemoving: a box of that name was removed and its engine objects
	// are not all gone yet; the name is free once they are.
	ErrRemoving = errors.New("is still being removed")
	// ErrOverLimit: a record that would take its owner past a count
	// they may have (AddJobUnder, PutImageUnder); nothing was written.
	ErrOverLimit = errors.New("over its limit")
)

// write runs fn as one write transaction (not declared state: the serial
// stays), so that what it counts and what it records are one step.
func (s *Store) write(fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// Store is the state database.
type Store struct {
	db *sql.DB
	// q runs the queries made outside transactions (sqlstmt.Cache).
	q *sqlstmt.Cache
	// rd reads what is committed on connections of its own, beside the
	// one connection the writes and views hold (Placement).
	rd *sql.DB
	// boxReads counts GetBox's reads (BoxReads).
	boxReads atomic.Int64
	// Log is the audit log: its appends, reads, walks and pruning.
	*auditlog.Log
}

// migrationFiles are the schema's migrations, one SQL file each, applied
// in the order of their names (NNN.sql); each opens with a comment that
// says why it is there. The database's user_version is the number of
// them applied.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations is the migrations' SQL, in order.
func migrations() ([]string, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]string, len(names))
	for i, n := range names {
		if want := fmt.Sprintf("migrations/%03d.sql", i+1); n != want {
			return nil, fmt.Errorf("migration %d is %s, not %s: the files are numbered from 001 without a gap", i+1, n, want)
		}
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out[i] = string(b)
	}
	return out, nil
}

// WatchedTables are the tables whose every insert, update and delete
// moves Seen: what the events stream shows.
var WatchedTables = []string{"boxes", "drives", "snapshots", "jobs", "users", "grants", "user_groups", "group_grants"}

// Seen is a counter that every write to WatchedTables moves.
func (s *Store) Seen() (int64, error) {
	var n int64
	err := s.q.QueryRow(`SELECT v FROM meta WHERE k='seen'`).Scan(&n)
	return n, err
}

// Leftover is a staging folder an upload made: kind "box" (path in the
// box named target) or "volume" (the drive named target).
type Leftover struct{ Kind, Target, Path string }

// AddLeftover lists a staging folder before it is made.
func (s *Store) AddLeftover(l Leftover) error {
	_, err := s.q.Exec(`INSERT OR IGNORE INTO leftovers (kind, target, path) VALUES (?,?,?)`, l.Kind, l.Target, l.Path)
	return err
}

// DoneLeftover forgets a staging folder that was removed.
func (s *Store) DoneLeftover(l Leftover) error {
	_, err := s.q.Exec(`DELETE FROM leftovers WHERE kind=? AND target=? AND path=?`, l.Kind, l.Target, l.Path)
	return err
}

// Leftovers lists the staging folders not known to be removed.
func (s *Store) Leftovers() ([]Leftover, error) {
	rows, err := s.q.Query(`SELECT kind, target, path FROM leftovers ORDER BY kind, target, path`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Leftover
	for rows.Next() {
		var l Leftover
		if err := rows.Scan(&l.Kind, &l.Target, &l.Path); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// Open opens (creating if needed) the database in dir and migrates it.
func Open(dir string) (*Store, error) {
	dsn := "file:" + filepath.Join(dir, "paddock.db") +
		"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	// One writer at a time keeps SQLite's locking simple; reads are fast.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, q: sqlstmt.New(db)}
	s.Log = auditlog.New(db, s.q)
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrating %s: %w", dir, err)
	}
	// WAL lets these read while a transaction is open on db.
	if s.rd, err = sql.Open("sqlite", dsn+"&_pragma=query_only(1)"); err != nil {
		db.Close()
		return nil, err
	}
	s.rd.SetMaxOpenConns(4)
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	s.q.Close()
	s.rd.Close()
	return s.db.Close()
}

func (s *Store) migrate() error {
	var v int
	if err := s.q.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	all, err := migrations()
	if err != nil {
		return err
	}
	for i := v; i < len(all); i++ {
		tx, err := s.db.Begin()
		if err != nil {
			return err
		}
		if _, err := tx.Exec(all[i]); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
		if _, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, i+1)); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// Serial is the number of changes made to declared state so far.
func (s *Store) Serial() (int64, error) {
	var n int64
	err := s.q.QueryRow(`SELECT v FROM meta WHERE k='serial'`).Scan(&n)
	return n, err
}

// declare runs fn in a transaction that also bumps the serial.
func (s *Store) declare(fn func(tx *sql.Tx) error) error {
	return s.write(func(tx *sql.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		_, err := tx.Exec(`UPDATE meta SET v = v + 1 WHERE k='serial'`)
		return err
	})
}

// Tx is a declared-state transaction: several changes that land together
// with one serial increment, or not at all.
type Tx struct{ tx *sql.Tx }

// Declare runs fn as one declared-state transaction.
func (s *Store) Declare(fn func(*Tx) error) error {
	return s.declare(func(tx *sql.Tx) error { return fn(&Tx{tx}) })
}

// Read runs fn on one view of the store: what it reads, across tables,
// is as of one moment, never half of a transaction committed meanwhile
// (a claim moves a pool box into the boxes table in one). fn must not
// write, and reads through tx only: the store has one connection, which
// the view holds until fn returns.
func (s *Store) Read(fn func(*Tx) error) error {
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(&Tx{tx})
}

func unix(t time.Time) int64 { return t.UnixMilli() }
func fromUnix(ms int64) time.Time {
	return time.UnixMilli(ms).UTC()
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// BackupTo writes a consistent copy of the database to path (which must
// not exist), while the server may go on writing: SQLite's VACUUM INTO.
func (s *Store) BackupTo(path string) error {
	_, err := s.q.Exec(`VACUUM INTO ?`, path)
	return err
}

// IsDiskFull tells whether err says the disk under the state directory is
// full: SQLite's SQLITE_FULL, or ENOSPC from a write of a file there.
func IsDiskFull(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) {
		return true
	}
	var coded interface{ Code() int }
	if errors.As(err, &coded) && coded.Code()&0xff == 13 { // SQLITE_FULL
		return true
	}
	return strings.Contains(err.Error(), "database or disk is full")
}
