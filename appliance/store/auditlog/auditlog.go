// Package auditlog is the audit log's table in the store: entries
// appended in order, each chained to the one before by a seal the caller
// makes (package audit), read by filter, walked, and pruned to an anchor
// the rest chains to. The store (package store) has its methods.
package auditlog

import (
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/store/sqlstmt"
)

// Log is the audit log of a store's database.
type Log struct {
	db *sql.DB
	q  *sqlstmt.Cache
}

// New is the audit log of db, whose queries q keeps prepared.
func New(db *sql.DB, q *sqlstmt.Cache) *Log { return &Log{db: db, q: q} }

// unix is how the store keeps times: Unix milliseconds.
func unix(t time.Time) int64 { return t.UnixMilli() }

const auditCols = `seq, at_text, user, via, addr, agent, action, box, box_owner, object, detail, result, prev, hash`

func scanAudit(r interface{ Scan(...any) error }) (audit.Entry, error) {
	var e audit.Entry
	var at, detail string
	err := r.Scan(&e.Seq, &at, &e.User, &e.Via, &e.Addr, &e.Agent, &e.Action, &e.Box, &e.Owner, &e.Object, &detail, &e.Result, &e.Prev, &e.Hash)
	if err != nil {
		return e, err
	}
	if e.At, err = time.Parse(time.RFC3339Nano, at); err != nil {
		return e, err
	}
	if detail != "" {
		e.Detail = []byte(detail)
	}
	return e, nil
}

// AppendAudit adds e at the end of the audit log, numbered and chained to
// the last entry (or the anchor) by seal, and returns it as written.
func (s *Log) AppendAudit(e audit.Entry, seal func(e audit.Entry, prev string) string) (audit.Entry, error) {
	last, anchor, insert := s.q.Stmt(lastAuditQ), s.q.Stmt(auditAnchorQ), s.q.Stmt(insertAuditQ)
	tx, err := s.db.Begin()
	if err != nil {
		return e, err
	}
	defer tx.Rollback()
	err = sqlstmt.TxQueryRow(tx, last, lastAuditQ).Scan(&e.Seq, &e.Prev)
	if errors.Is(err, sql.ErrNoRows) {
		err = sqlstmt.TxQueryRow(tx, anchor, auditAnchorQ).Scan(&e.Seq, &e.Prev)
		if errors.Is(err, sql.ErrNoRows) {
			e.Seq, e.Prev, err = 0, "", nil
		}
	}
	if err != nil {
		return e, err
	}
	e.Seq++
	e.At = e.At.UTC()
	e.Hash = seal(e, e.Prev)
	if _, err := sqlstmt.TxExec(tx, insert, insertAuditQ,
		e.Seq, e.At.Format(time.RFC3339Nano), e.User, e.Via, e.Addr, e.Agent, e.Action, e.Box, e.Owner, e.Object, string(e.Detail), e.Result, e.Prev, e.Hash, unix(e.At)); err != nil {
		return e, err
	}
	return e, tx.Commit()
}

const (
	lastAuditQ   = `SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1`
	auditAnchorQ = `SELECT seq, hash FROM audit_anchor`
	insertAuditQ = `INSERT INTO audit (` + auditCols + `, at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`
)

// Filter picks entries; zero fields pick all.
type Filter struct {
	Box, User, Action string // Action also picks its kind: "box" picks box.create, box.stop...
	Since             time.Time
	After             int64 // entries after this sequence number
	Limit             int   // the newest Limit (0: all)
	// Member limits the entries to those a member sees: their own
	// actions and those about their boxes. The log names users by name,
	// and a removed user's name may be taken again: only entries from
	// MemberSince on (the user's creation) are theirs.
	Member      string
	MemberSince time.Time
}

// Audit lists entries in order.
func (s *Log) Audit(f Filter) ([]audit.Entry, error) {
	var where []string
	var args []any
	add := func(cond string, a ...any) { where = append(where, cond); args = append(args, a...) }
	if f.Box != "" {
		add(`box = ?`, f.Box)
	}
	if f.User != "" {
		add(`user = ?`, f.User)
	}
	if f.Action != "" {
		add(`(action = ? OR action LIKE ? ESCAPE '\')`, f.Action, strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(f.Action)+".%")
	}
	if !f.Since.IsZero() {
		add(`at >= ?`, unix(f.Since))
	}
	if f.After > 0 {
		add(`seq > ?`, f.After)
	}
	if f.Member != "" {
		add(`(user = ? OR box_owner = ?) AND at >= ?`, f.Member, f.Member, unix(f.MemberSince))
	}
	q := `SELECT ` + auditCols + ` FROM audit`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY seq DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := s.db.Query(q, args...) // built from the filter: not kept prepared
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []audit.Entry
	for rows.Next() {
		e, err := scanAudit(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	// Oldest first.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, rows.Err()
}

// AuditAnchor is where the log starts: the last pruned entry's sequence
// number, hash and seal (0 and "" when nothing was pruned).
func (s *Log) AuditAnchor() (seq int64, hash, seal string, err error) {
	err = s.q.QueryRow(`SELECT seq, hash, seal FROM audit_anchor`).Scan(&seq, &hash, &seal)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", "", nil
	}
	return seq, hash, seal, err
}

// WalkAudit calls fn on every entry, in order, until it returns an error.
func (s *Log) WalkAudit(fn func(audit.Entry) error) error {
	// In pages, so that the one connection is not held for the whole walk.
	var after int64
	for {
		rows, err := s.q.Query(`SELECT `+auditCols+` FROM audit WHERE seq > ? ORDER BY seq LIMIT 1000`, after)
		if err != nil {
			return err
		}
		var page []audit.Entry
		for rows.Next() {
			e, err := scanAudit(rows)
			if err != nil {
				rows.Close()
				return err
			}
			page = append(page, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		for _, e := range page {
			if err := fn(e); err != nil {
				return err
			}
		}
		after = page[len(page)-1].Seq
	}
}

// PruneAudit removes the entries older than before, and keeps the last
// one removed as the anchor (sealed by anchor) that the rest chains to.
// It returns how many went.
func (s *Log) PruneAudit(before time.Time, anchor func(seq int64, hash string) string) (int64, error) {
	tx, err := s.db.Begin()
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var seq int64
	var hash string
	err = tx.QueryRow(`SELECT seq, hash FROM audit WHERE at < ? ORDER BY seq DESC LIMIT 1`, unix(before)).Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	res, err := tx.Exec(`DELETE FROM audit WHERE seq <= ?`, seq)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	if _, err := tx.Exec(`INSERT INTO audit_anchor (one, seq, hash, seal) VALUES (1,?,?,?)
		ON CONFLICT (one) DO UPDATE SET seq=excluded.seq, hash=excluded.hash, seal=excluded.seal`, seq, hash, anchor(seq, hash)); err != nil {
		return 0, err
	}
	return n, tx.Commit()
}
