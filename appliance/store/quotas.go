package store

import (
	"database/sql"
	"encoding/json"
	"errors"
)

// Quota is what the owner set for one user; a nil field takes the
// server's default.
type Quota struct {
	Boxes, Running, Drives, Jobs *int
	DriveGiB                     *float64
	Types                        *[]string
}

func getQuota(q querier, user int64) (Quota, error) {
	return readQuota(q.QueryRow(`SELECT boxes, running, drives, drive_gib, jobs, types FROM quotas WHERE user_id=?`, user))
}

func readQuota(row *sql.Row) (Quota, error) {
	var out Quota
	var boxes, running, drives, jobs sql.NullInt64
	var gib sql.NullFloat64
	var types sql.NullString
	err := row.Scan(&boxes, &running, &drives, &gib, &jobs, &types)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	for _, f := range []struct {
		v  sql.NullInt64
		to **int
	}{{boxes, &out.Boxes}, {running, &out.Running}, {drives, &out.Drives}, {jobs, &out.Jobs}} {
		if f.v.Valid {
			n := int(f.v.Int64)
			*f.to = &n
		}
	}
	if gib.Valid {
		out.DriveGiB = &gib.Float64
	}
	if types.Valid {
		var ts []string
		if err := json.Unmarshal([]byte(types.String), &ts); err != nil {
			return out, err
		}
		out.Types = &ts
	}
	return out, nil
}

// GetQuota is what the owner set for user (all nil: the defaults).
func (s *Store) GetQuota(user int64) (Quota, error) { return getQuota(s.db, user) }

// GetQuota is Store.GetQuota in the transaction.
func (t *Tx) GetQuota(user int64) (Quota, error) { return getQuota(t.tx, user) }

// SetQuota replaces what is set for user.
func (s *Store) SetQuota(user int64, q Quota) error {
	return s.setQuotaRow("quotas", "user_id", user, q)
}

// setQuotaRow replaces the quota of key in table (a user's, or a
// group's).
func (s *Store) setQuotaRow(table, keyCol string, key any, q Quota) error {
	var types any
	if q.Types != nil {
		types = mustJSON(*q.Types)
	}
	_, err := s.q.Exec(`INSERT INTO `+table+` (`+keyCol+`, boxes, running, drives, drive_gib, jobs, types) VALUES (?,?,?,?,?,?,?)
		ON CONFLICT (`+keyCol+`) DO UPDATE SET boxes=excluded.boxes, running=excluded.running, drives=excluded.drives,
		drive_gib=excluded.drive_gib, jobs=excluded.jobs, types=excluded.types`,
		key, q.Boxes, q.Running, q.Drives, q.DriveGiB, q.Jobs, types)
	return err
}

// CountRunning counts the owner's boxes meant to run, but the one named
// except.
func (t *Tx) CountRunning(owner int64, except string) (int, error) {
	return countRunning(t.tx, owner, except)
}

// CountRunning is Tx.CountRunning outside a transaction (for reading).
func (s *Store) CountRunning(owner int64, except string) (int, error) {
	return countRunning(s.db, owner, except)
}

func countRunning(q querier, owner int64, except string) (int, error) {
	var n int
	err := q.QueryRow(`SELECT count(*) FROM boxes WHERE owner=? AND desired='running' AND name != ?`, owner, except).Scan(&n)
	return n, err
}
