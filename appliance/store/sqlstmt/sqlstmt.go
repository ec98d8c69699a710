// Package sqlstmt runs each query text from a statement prepared once
// (Cache), for a database/sql handle whose queries come from a small set
// of texts: the store's, outside transactions and, through TxQueryRow and
// TxExec, inside them.
package sqlstmt

import (
	"database/sql"
	"sync"
)

// Max bounds how many query texts Cache keeps prepared.
const Max = 256

// Cache runs each query text from a statement prepared once, so that
// SQLite does not parse it again at each call. Under the bench's mixed
// load, parsing was a quarter of paddockd's CPU time (perf: sqlite3_prepare
// 7.7% of the machine's, paddockd 30.6%), most of it for the few reads
// every request makes (its box, its token, its user). Its methods are
// those of *sql.DB that the store uses outside transactions.
//
// A prepared SQLite statement holds no read transaction between calls:
// the driver resets it when its rows are closed (a QueryRow's Scan closes
// them), so the WAL checkpoints as before. Texts past Max (queries
// built from a filter come in many shapes) and texts that fail to
// prepare run unprepared, as before, and say their error there.
type Cache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// New is a cache of db's prepared statements.
func New(db *sql.DB) *Cache {
	return &Cache{db: db, m: map[string]*sql.Stmt{}}
}

// Stmt is q prepared, or nil when it is not to be.
func (c *Cache) Stmt(q string) *sql.Stmt {
	c.mu.Lock()
	st, ok := c.m[q]
	full := len(c.m) >= Max
	c.mu.Unlock()
	if ok || full {
		return st
	}
	// Prepared without the lock: it waits for the database's one
	// connection, which another caller may hold.
	st, err := c.db.Prepare(q)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.m[q]; ok {
		st.Close()
		return prev
	}
	if len(c.m) >= Max {
		st.Close()
		return nil
	}
	c.m[q] = st
	return st
}

func (c *Cache) QueryRow(q string, args ...any) *sql.Row {
	if st := c.Stmt(q); st != nil {
		return st.QueryRow(args...)
	}
	return c.db.QueryRow(q, args...)
}

func (c *Cache) Query(q string, args ...any) (*sql.Rows, error) {
	if st := c.Stmt(q); st != nil {
		return st.Query(args...)
	}
	return c.db.Query(q, args...)
}

func (c *Cache) Exec(q string, args ...any) (sql.Result, error) {
	if st := c.Stmt(q); st != nil {
		return st.Exec(args...)
	}
	return c.db.Exec(q, args...)
}

// Close closes the prepared statements.
func (c *Cache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.m {
		st.Close()
		delete(c.m, q)
	}
}

// TxQueryRow runs q in tx, from st (q as Cache prepared it, taken
// before the transaction began: preparing waits for the one connection,
// which the transaction holds) when there is one.
func TxQueryRow(tx *sql.Tx, st *sql.Stmt, q string, args ...any) *sql.Row {
	if st != nil {
		return tx.Stmt(st).QueryRow(args...)
	}
	return tx.QueryRow(q, args...)
}

// TxExec is TxQueryRow's Exec.
func TxExec(tx *sql.Tx, st *sql.Stmt, q string, args ...any) (sql.Result, error) {
	if st != nil {
		return tx.Stmt(st).Exec(args...)
	}
	return tx.Exec(q, args...)
}

// Prepared is q's statement if it is kept prepared (nil otherwise),
// without preparing it.
func (c *Cache) Prepared(q string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[q]
}

// Len is how many texts are kept prepared.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
