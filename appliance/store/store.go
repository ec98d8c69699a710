// Package store keeps paddockd's state in SQLite (modernc.org/sqlite, pure
// Go) under the state directory: the declared boxes, drives and snapshots,
// what the reconciler last observed of each box, jobs, and hashed API tokens.
//
// Every change to declared state increments a serial in the same
// transaction, so a plan can name the state it was computed from. The
// database runs in WAL mode; migrations are numbered and applied in order at
// open. Queries made outside a transaction run from statements prepared
// once and kept (stmtCache), not parsed again at each call.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

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
	// q runs the queries made outside transactions (stmtCache).
	q *stmtCache
	// rd reads what is committed on connections of its own, beside the
	// one connection the writes and views hold (Placement).
	rd *sql.DB
	// boxReads counts GetBox's reads (BoxReads).
	boxReads atomic.Int64
}

var migrations = []string{
	`CREATE TABLE meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
	 INSERT INTO meta VALUES ('serial', 0);
	 CREATE TABLE boxes (
		name TEXT PRIMARY KEY,
		type TEXT NOT NULL,
		image TEXT NOT NULL,
		ttl_seconds INTEGER NOT NULL DEFAULT 0,
		expires_at INTEGER,
		mounts TEXT NOT NULL DEFAULT '[]',
		env TEXT NOT NULL DEFAULT '{}',
		desired TEXT NOT NULL,
		from_snapshot TEXT NOT NULL DEFAULT '',
		created INTEGER NOT NULL,
		observed TEXT NOT NULL DEFAULT 'pending',
		observed_error TEXT NOT NULL DEFAULT ''
	 );
	 CREATE TABLE drives (
		name TEXT PRIMARY KEY,
		state TEXT NOT NULL,
		created INTEGER NOT NULL
	 );
	 CREATE TABLE snapshots (
		id TEXT PRIMARY KEY,
		box TEXT NOT NULL,
		reason TEXT NOT NULL,
		state TEXT NOT NULL,
		error TEXT NOT NULL DEFAULT '',
		created INTEGER NOT NULL
	 );
	 CREATE INDEX snapshots_box ON snapshots(box, created);
	 CREATE TABLE jobs (
		id TEXT PRIMARY KEY,
		box TEXT NOT NULL,
		cmd TEXT NOT NULL,
		state TEXT NOT NULL,
		exit_code INTEGER,
		started INTEGER NOT NULL,
		ended INTEGER
	 );
	 CREATE TABLE tokens (
		hash TEXT PRIMARY KEY,
		name TEXT NOT NULL,
		created INTEGER NOT NULL
	 );`,
	// Projects (Boxfiles), policies, and one-time setup of boxes.
	`ALTER TABLE boxes ADD COLUMN project TEXT NOT NULL DEFAULT '';
	 ALTER TABLE boxes ADD COLUMN policy TEXT NOT NULL DEFAULT 'allow-all';
	 ALTER TABLE boxes ADD COLUMN agent TEXT NOT NULL DEFAULT '';
	 ALTER TABLE boxes ADD COLUMN desktop INTEGER NOT NULL DEFAULT 0;
	 ALTER TABLE boxes ADD COLUMN setup TEXT NOT NULL DEFAULT '';
	 ALTER TABLE boxes ADD COLUMN setup_error TEXT NOT NULL DEFAULT '';
	 ALTER TABLE boxes ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
	 ALTER TABLE drives ADD COLUMN project TEXT NOT NULL DEFAULT '';
	 ALTER TABLE drives ADD COLUMN size TEXT NOT NULL DEFAULT '';
	 ALTER TABLE drives ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
	 CREATE TABLE policies (
		name TEXT PRIMARY KEY,
		project TEXT NOT NULL DEFAULT '',
		allow_domains TEXT NOT NULL DEFAULT '[]',
		allow_cidrs TEXT NOT NULL DEFAULT '[]'
	 );`,
	// Boxes get a fixed address on the box network, so that their
	// firewall rules exist before their container does.
	`ALTER TABLE boxes ADD COLUMN ip TEXT NOT NULL DEFAULT '';`,
	// Secrets for agents, encrypted with a key kept outside the database.
	`CREATE TABLE secrets (
		name TEXT PRIMARY KEY,
		sealed BLOB NOT NULL,
		updated INTEGER NOT NULL
	 );`,
	// Public keys that may open SSH sessions to boxes.
	`CREATE TABLE ssh_keys (
		fingerprint TEXT PRIMARY KEY,
		name TEXT NOT NULL UNIQUE,
		key TEXT NOT NULL,
		created INTEGER NOT NULL
	 );`,
	// Users, their one-time links (owner setup, invites), and who owns
	// what. Owner 0 is "before there were users": only owners see it.
	`CREATE TABLE users (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		name TEXT NOT NULL UNIQUE,
		role TEXT NOT NULL,
		password TEXT NOT NULL DEFAULT '',
		created INTEGER NOT NULL
	 );
	 CREATE TABLE links (
		hash TEXT PRIMARY KEY,
		kind TEXT NOT NULL,
		role TEXT NOT NULL,
		created INTEGER NOT NULL,
		expires INTEGER NOT NULL
	 );
	 ALTER TABLE tokens ADD COLUMN user_id INTEGER NOT NULL DEFAULT 0;
	 ALTER TABLE tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'api';
	 ALTER TABLE tokens ADD COLUMN expires INTEGER;
	 ALTER TABLE tokens ADD COLUMN csrf TEXT NOT NULL DEFAULT '';
	 ALTER TABLE boxes ADD COLUMN owner INTEGER NOT NULL DEFAULT 0;
	 ALTER TABLE drives ADD COLUMN owner INTEGER NOT NULL DEFAULT 0;
	 ALTER TABLE policies ADD COLUMN owner INTEGER NOT NULL DEFAULT 0;
	 ALTER TABLE ssh_keys ADD COLUMN owner INTEGER NOT NULL DEFAULT 0;`,
	// Every box has an id of its own from its creation; a removed box is a
	// tombstone that holds its name until its engine objects are gone.
	// Boxes from before ids keep '' (their containers stay as they are).
	`ALTER TABLE boxes ADD COLUMN uid TEXT NOT NULL DEFAULT '';
	 CREATE TABLE tombstones (
		name TEXT PRIMARY KEY,
		uid TEXT NOT NULL DEFAULT '',
		removed INTEGER NOT NULL
	 );`,
	// Secrets belong to a user. Those from before were the owner's.
	`CREATE TABLE user_secrets (
		owner INTEGER NOT NULL,
		name TEXT NOT NULL,
		sealed BLOB NOT NULL,
		updated INTEGER NOT NULL,
		shared INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (owner, name)
	 );
	 INSERT INTO user_secrets (owner, name, sealed, updated)
		SELECT COALESCE((SELECT min(id) FROM users WHERE role = 'owner'), 0), name, sealed, updated FROM secrets;
	 DROP TABLE secrets;`,
	// An SSH key and a key name are unique per user, not across users: one
	// user registering another's public key takes nothing from them.
	`CREATE TABLE user_ssh_keys (
		owner INTEGER NOT NULL,
		fingerprint TEXT NOT NULL,
		name TEXT NOT NULL,
		key TEXT NOT NULL,
		created INTEGER NOT NULL,
		PRIMARY KEY (owner, fingerprint),
		UNIQUE (owner, name)
	 );
	 INSERT INTO user_ssh_keys (owner, fingerprint, name, key, created)
		SELECT owner, fingerprint, name, key, created FROM ssh_keys;
	 DROP TABLE ssh_keys;`,
	// The last applied request of each Boxfile project, to tell its drift.
	`CREATE TABLE projects (
		name TEXT PRIMARY KEY,
		owner INTEGER NOT NULL,
		request TEXT NOT NULL,
		applied INTEGER NOT NULL,
		applied_by TEXT NOT NULL,
		serial INTEGER NOT NULL
	 );`,
	`ALTER TABLE snapshots ADD COLUMN size INTEGER NOT NULL DEFAULT 0;`,
	// Why a box was stopped, when it was not its user (its disk bound).
	`ALTER TABLE boxes ADD COLUMN note TEXT NOT NULL DEFAULT '';`,
	// Staging folders an upload made (in a box, or in a drive's volume),
	// listed until the upload removed them: one a crash cut off is
	// removed after the next start.
	`CREATE TABLE leftovers (
		kind TEXT NOT NULL,
		target TEXT NOT NULL,
		path TEXT NOT NULL,
		PRIMARY KEY (kind, target, path)
	 );`,
	// A counter that every write to what the events stream shows moves
	// (Seen), so that a watcher reads the tables only after a change.
	`INSERT INTO meta VALUES ('seen', 0);
	 CREATE TRIGGER seen_boxes_i AFTER INSERT ON boxes BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_boxes_u AFTER UPDATE ON boxes BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_boxes_d AFTER DELETE ON boxes BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_drives_i AFTER INSERT ON drives BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_drives_u AFTER UPDATE ON drives BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_drives_d AFTER DELETE ON drives BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_snapshots_i AFTER INSERT ON snapshots BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_snapshots_u AFTER UPDATE ON snapshots BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_snapshots_d AFTER DELETE ON snapshots BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_jobs_i AFTER INSERT ON jobs BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_jobs_u AFTER UPDATE ON jobs BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_jobs_d AFTER DELETE ON jobs BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_users_i AFTER INSERT ON users BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_users_u AFTER UPDATE ON users BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_users_d AFTER DELETE ON users BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;`,
	// The warm pool: boxes made ahead of any request, under engine names
	// of their own (key). A box claimed from it keeps that name in the
	// engine (boxes.engine; '' means the box's own name), and so does its
	// tombstone.
	`CREATE TABLE pool (
		key TEXT PRIMARY KEY,
		uid TEXT NOT NULL,
		type TEXT NOT NULL,
		image TEXT NOT NULL,
		image_id TEXT NOT NULL,
		desktop INTEGER NOT NULL,
		ip TEXT NOT NULL,
		created INTEGER NOT NULL,
		ready INTEGER NOT NULL DEFAULT 0
	 );
	 ALTER TABLE boxes ADD COLUMN engine TEXT NOT NULL DEFAULT '';
	 ALTER TABLE tombstones ADD COLUMN engine TEXT NOT NULL DEFAULT '';`,
	// Servers beyond the control plane's own ("nodes"), the one-time
	// tokens that let a server join, and the node every engine object is
	// on ('' is the control plane's own server: a single-server install
	// has nothing else).
	`CREATE TABLE nodes (
		name TEXT PRIMARY KEY,
		addr TEXT NOT NULL,
		subnet TEXT NOT NULL UNIQUE,
		labels TEXT NOT NULL DEFAULT '{}',
		joined INTEGER NOT NULL,
		cert TEXT NOT NULL
	 );
	 CREATE TABLE node_joins (
		hash TEXT PRIMARY KEY,
		expires INTEGER NOT NULL,
		created INTEGER NOT NULL
	 );
	 ALTER TABLE boxes ADD COLUMN node TEXT NOT NULL DEFAULT '';
	 ALTER TABLE pool ADD COLUMN node TEXT NOT NULL DEFAULT '';
	 ALTER TABLE tombstones ADD COLUMN node TEXT NOT NULL DEFAULT '';
	 ALTER TABLE drives ADD COLUMN node TEXT NOT NULL DEFAULT '';
	 ALTER TABLE snapshots ADD COLUMN node TEXT NOT NULL DEFAULT '';`,
	// The labels a box's server must have (placement).
	`ALTER TABLE boxes ADD COLUMN node_labels TEXT NOT NULL DEFAULT '{}';`,
	// A server no new box goes to.
	`ALTER TABLE nodes ADD COLUMN drained INTEGER NOT NULL DEFAULT 0;`,
	// Moves between servers under way: what a move shipped, so that one a
	// crash cut off is finished or undone after the next start.
	`CREATE TABLE moves (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		source TEXT NOT NULL,
		target TEXT NOT NULL,
		boxes TEXT NOT NULL,
		drives TEXT NOT NULL,
		running TEXT NOT NULL,
		snaps TEXT NOT NULL,
		started INTEGER NOT NULL
	 );`,
	// The audit log (package audit): append-only, each entry chained to
	// the one before by a keyed hash; the anchor is where a pruned log
	// starts.
	`CREATE TABLE audit (
		seq INTEGER PRIMARY KEY,
		at INTEGER NOT NULL,
		at_text TEXT NOT NULL,
		user TEXT NOT NULL,
		via TEXT NOT NULL,
		addr TEXT NOT NULL,
		agent TEXT NOT NULL,
		action TEXT NOT NULL,
		box TEXT NOT NULL,
		box_owner TEXT NOT NULL,
		object TEXT NOT NULL,
		detail TEXT NOT NULL,
		result TEXT NOT NULL,
		prev TEXT NOT NULL,
		hash TEXT NOT NULL
	 );
	 CREATE INDEX audit_at ON audit (at);
	 CREATE INDEX audit_box ON audit (box, seq);
	 CREATE INDEX audit_user ON audit (user, seq);
	 CREATE TRIGGER audit_append_only BEFORE UPDATE ON audit
	 BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
	 CREATE TABLE audit_anchor (
		one INTEGER PRIMARY KEY CHECK (one = 1),
		seq INTEGER NOT NULL,
		hash TEXT NOT NULL,
		seal TEXT NOT NULL
	 );`,
	// A box's own labels.
	`ALTER TABLE boxes ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';`,
	// Each user's own quota; a NULL takes the server's default
	// (limits.* in the configuration).
	`CREATE TABLE quotas (
		user_id INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
		boxes INTEGER,
		running INTEGER,
		drives INTEGER,
		drive_gib REAL,
		jobs INTEGER,
		types TEXT
	 );`,
	// A server's own warm pool: pool boxes of each type kept on it, beside
	// those warm_pool keeps wherever there is most room ('' is the
	// control plane's own server).
	`CREATE TABLE node_pools (
		node TEXT NOT NULL,
		type TEXT NOT NULL,
		count INTEGER NOT NULL,
		PRIMARY KEY (node, type)
	 );`,
	// A box's idle stop (0: its type's; negative: never) and whether it
	// stopped it (the box wakes on use).
	`ALTER TABLE boxes ADD COLUMN idle_stop_seconds INTEGER NOT NULL DEFAULT 0;
	 ALTER TABLE boxes ADD COLUMN slept INTEGER NOT NULL DEFAULT 0;`,
	// What running boxes used, a sample every metrics_interval (thinned
	// to one a minute after an hour, kept for metrics_keep), and the
	// processes the kernel killed for a box's memory bound.
	`CREATE TABLE metrics (
		box TEXT NOT NULL,
		at INTEGER NOT NULL,
		cpu REAL NOT NULL,
		memory INTEGER NOT NULL,
		memory_limit INTEGER NOT NULL,
		disk INTEGER NOT NULL,
		disk_limit INTEGER NOT NULL,
		net_rx INTEGER NOT NULL,
		net_tx INTEGER NOT NULL,
		rx_rate REAL NOT NULL,
		tx_rate REAL NOT NULL,
		processes INTEGER NOT NULL
	 );
	 CREATE INDEX metrics_box_at ON metrics (box, at);
	 CREATE INDEX metrics_at ON metrics (at);
	 ALTER TABLE boxes ADD COLUMN oom_kills INTEGER NOT NULL DEFAULT 0;
	 ALTER TABLE boxes ADD COLUMN oom_at INTEGER;
	 ALTER TABLE boxes ADD COLUMN oom_seen INTEGER NOT NULL DEFAULT 0;`,
	// Users who sign in with an OpenID provider: who the provider says
	// they are, their refresh token there (sealed), and when they last
	// signed in and were last checked.
	`CREATE TABLE sso_users (
		user_id INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
		provider TEXT NOT NULL,
		subject TEXT NOT NULL,
		email TEXT NOT NULL,
		refresh TEXT NOT NULL,
		signed_in INTEGER NOT NULL,
		checked INTEGER NOT NULL,
		UNIQUE (provider, subject)
	 );`,
	// Boxes shared with users other than their owner: as viewer (they
	// read it) or member (they work in it).
	`CREATE TABLE grants (
		box TEXT NOT NULL,
		user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
		access TEXT NOT NULL,
		PRIMARY KEY (box, user_id)
	 );
	 CREATE INDEX grants_user ON grants (user_id);`,
	// A share shows on the events stream of the user it is given to.
	`CREATE TRIGGER seen_grants_i AFTER INSERT ON grants BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_grants_u AFTER UPDATE ON grants BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_grants_d AFTER DELETE ON grants BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;`,
	// Groups of users: set by the owner, or by a sign-in provider (source
	// sso:ID, replaced at each sign-in); a group's quota; boxes shared
	// with a group.
	`CREATE TABLE user_groups (
		user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
		grp TEXT NOT NULL,
		source TEXT NOT NULL,
		PRIMARY KEY (user_id, grp, source)
	 );
	 CREATE INDEX user_groups_grp ON user_groups (grp);
	 CREATE TABLE group_quotas (
		grp TEXT PRIMARY KEY,
		boxes INTEGER,
		running INTEGER,
		drives INTEGER,
		drive_gib REAL,
		jobs INTEGER,
		types TEXT
	 );
	 CREATE TABLE group_grants (
		box TEXT NOT NULL,
		grp TEXT NOT NULL,
		access TEXT NOT NULL,
		PRIMARY KEY (box, grp)
	 );
	 CREATE TRIGGER seen_user_groups_i AFTER INSERT ON user_groups BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_user_groups_d AFTER DELETE ON user_groups BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_group_grants_i AFTER INSERT ON group_grants BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_group_grants_u AFTER UPDATE ON group_grants BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_group_grants_d AFTER DELETE ON group_grants BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;`,
	// Brokered secrets (package broker): the hosts a secret may be sent
	// to, the header it goes in, a per-box rate; and what each box sent
	// through the broker with each secret.
	`ALTER TABLE user_secrets ADD COLUMN broker_hosts TEXT NOT NULL DEFAULT '';
	 ALTER TABLE user_secrets ADD COLUMN broker_header TEXT NOT NULL DEFAULT '';
	 ALTER TABLE user_secrets ADD COLUMN broker_limit TEXT NOT NULL DEFAULT '';
	 CREATE TABLE broker_use (
		box TEXT NOT NULL,
		secret TEXT NOT NULL,
		requests INTEGER NOT NULL DEFAULT 0,
		refused INTEGER NOT NULL DEFAULT 0,
		bytes_up INTEGER NOT NULL DEFAULT 0,
		bytes_down INTEGER NOT NULL DEFAULT 0,
		s2 INTEGER NOT NULL DEFAULT 0,
		s4 INTEGER NOT NULL DEFAULT 0,
		s5 INTEGER NOT NULL DEFAULT 0,
		last_status INTEGER NOT NULL DEFAULT 0,
		last_at INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (box, secret)
	 );`,
	// Users' own images (package images): one row per name and tag, who
	// may use them, and the builds under way (what a crash leaves).
	`ALTER TABLE boxes ADD COLUMN builder INTEGER NOT NULL DEFAULT 0;
	 CREATE TABLE images (
		owner INTEGER NOT NULL,
		name TEXT NOT NULL,
		tag TEXT NOT NULL,
		image_id TEXT NOT NULL,
		size INTEGER NOT NULL DEFAULT 0,
		dockerfile TEXT NOT NULL DEFAULT '',
		context_digest TEXT NOT NULL DEFAULT '',
		inputs TEXT NOT NULL DEFAULT '',
		bases TEXT NOT NULL DEFAULT '[]',
		project TEXT NOT NULL DEFAULT '',
		built INTEGER NOT NULL,
		build_ms INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (owner, name, tag)
	 );
	 CREATE TABLE image_shares (
		owner INTEGER NOT NULL,
		name TEXT NOT NULL,
		kind TEXT NOT NULL,
		who TEXT NOT NULL,
		PRIMARY KEY (owner, name, kind, who)
	 );
	 CREATE TABLE builds (
		id TEXT PRIMARY KEY,
		owner INTEGER NOT NULL,
		name TEXT NOT NULL,
		tag TEXT NOT NULL,
		box TEXT NOT NULL,
		image_id TEXT NOT NULL DEFAULT '',
		started INTEGER NOT NULL
	 );`,
	// Boxes its disk bound stopped get a grace to free space when they
	// start again (before, a note on a box that had not slept said so).
	`ALTER TABLE boxes ADD COLUMN disk_stopped INTEGER NOT NULL DEFAULT 0;
	 UPDATE boxes SET disk_stopped = 1 WHERE note != '' AND slept = 0 AND desired = 'stopped';`,
	// Who made each one-time link (invitations are listed with it).
	`ALTER TABLE links ADD COLUMN by_user INTEGER NOT NULL DEFAULT 0;`,
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
	s := &Store{db: db, q: newStmtCache(db)}
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
	s.q.close()
	s.rd.Close()
	return s.db.Close()
}

func (s *Store) migrate() error {
	var v int
	if err := s.q.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	for i := v; i < len(migrations); i++ {
		tx, err := s.db.Begin()
		if err != nil {
			return err
		}
		if _, err := tx.Exec(migrations[i]); err != nil {
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
