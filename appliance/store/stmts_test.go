package store

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/store/sqlstmt"
)

// The reads a request makes are parsed once: the same text twice is one
// prepared statement, and it sees what was written between its calls.
func TestQueriesArePreparedOnce(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.GetBox("web"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a box not made: %v", err)
	}
	q := `SELECT ` + boxCols + ` FROM boxes WHERE name = ?`
	st := s.q.Prepared(q)
	if st == nil {
		t.Fatal("GetBox's query was not kept prepared")
	}
	if err := s.Declare(func(tx *Tx) error {
		return tx.CreateBox(Box{Name: "web", Type: "small", Image: "img", Desired: "running", Created: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	if b, err := s.GetBox("web"); err != nil || b.Name != "web" {
		t.Fatalf("the prepared read after a write: %+v %v", b, err)
	}
	if s.q.Prepared(q) != st {
		t.Fatal("the same text was prepared again")
	}
}

// Prepared statements leave no read transaction open between calls: a
// checkpoint empties the WAL after reads that found rows, found none,
// and after the audit's appends (statements used in a transaction).
func TestPreparedReadsLetTheWALCheckpoint(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Declare(func(tx *Tx) error {
		return tx.CreateBox(Box{Name: "web", Type: "small", Image: "img", Desired: "running", Created: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	seal := func(e audit.Entry, prev string) string { return fmt.Sprint(e.Seq, prev) }
	for i := range 20 {
		if _, err := s.GetBox("web"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetBox("nope"); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		if _, err := s.ListBoxes(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendAudit(audit.Entry{At: time.Now(), Action: "box.exec", Box: "web", Result: fmt.Sprint(i)}, seal); err != nil {
			t.Fatal(err)
		}
	}
	var busy, log, done int
	if err := s.db.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &log, &done); err != nil {
		t.Fatal(err)
	}
	if busy != 0 || log != 0 {
		t.Fatalf("checkpoint: busy %d, %d frames left in the WAL", busy, log)
	}
	es, err := s.Audit(AuditFilter{})
	if err != nil || len(es) != 20 {
		t.Fatalf("the audit through prepared statements: %d entries, %v", len(es), err)
	}
	for i, e := range es {
		if e.Seq != int64(i+1) || (i > 0 && e.Prev != es[i-1].Hash) {
			t.Fatalf("entry %d: seq %d, prev %q after %q", i, e.Seq, e.Prev, es[max(i-1, 0)].Hash)
		}
	}
}

// Past sqlstmt.Max texts, queries run unprepared, and still run.
func TestPreparedTextsAreBounded(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range sqlstmt.Max + 10 {
		var n int
		if err := s.q.QueryRow(fmt.Sprintf(`SELECT %d`, i)).Scan(&n); err != nil || n != i {
			t.Fatalf("query %d: %d %v", i, n, err)
		}
	}
	if s.q.Len() > sqlstmt.Max {
		t.Fatalf("%d texts kept prepared, bound %d", s.q.Len(), sqlstmt.Max)
	}
	if _, err := s.q.Exec(`NOT SQL`); err == nil {
		t.Fatal("a text that does not prepare ran")
	}
}
