package store

import (
	"database/sql"
	"errors"
	"strings"
	"time"
)

// PoolBox is a box of the warm pool: declared like any box, so that the
// reconciler makes and keeps it, but nobody's, in no list, and on no
// policy that reaches anything. A claim turns it into a user's box in one
// transaction (TakePool, then CreateBox with Engine = Key): after a crash
// there is either the pool box or the user's box, never both nor neither.
type PoolBox struct {
	// Key names its engine objects; it becomes the claimed box's Engine.
	Key   string
	UID   string
	Type  string
	Image string
	// ImageID is what Image was on the engine when the box was declared:
	// a pool box made from an image that has since moved is swept.
	ImageID string
	Desktop bool
	IP      string
	Created time.Time
	// Ready: its container was seen running and answered a command (and
	// its desktop came up, if it has one). Only ready boxes are claimed.
	Ready bool
	// Node is the server the pool box is on ("" for the control plane's);
	// a box claimed from it is there too.
	Node string
}

const poolCols = `key, uid, type, image, image_id, desktop, ip, created, ready, node`

func scanPool(r scanner) (PoolBox, error) {
	var p PoolBox
	var created int64
	if err := r.Scan(&p.Key, &p.UID, &p.Type, &p.Image, &p.ImageID, &p.Desktop, &p.IP, &created, &p.Ready, &p.Node); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return p, ErrNotFound
		}
		return p, err
	}
	p.Created = fromUnix(created)
	return p, nil
}

const listPool = `SELECT ` + poolCols + ` FROM pool ORDER BY created, key`

// ListPool lists the pool's boxes, oldest first.
func (s *Store) ListPool() ([]PoolBox, error) { return listAll(s.q, listPool, scanPool) }

// ListPool lists the pool's boxes in the transaction, oldest first.
func (t *Tx) ListPool() ([]PoolBox, error) { return listAll(t.tx, listPool, scanPool) }

// AddPool declares a pool box; ErrConflict if its key names another
// box's engine objects.
func (t *Tx) AddPool(p PoolBox) error {
	var n int
	if err := t.tx.QueryRow(`SELECT (SELECT count(*) FROM boxes WHERE name=? OR engine=?) + (SELECT count(*) FROM tombstones WHERE name=? OR engine=?)`,
		p.Key, p.Key, p.Key, p.Key).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return ErrConflict
	}
	_, err := t.tx.Exec(`INSERT INTO pool (`+poolCols+`) VALUES (?,?,?,?,?,?,?,?,?,?)`,
		p.Key, p.UID, p.Type, p.Image, p.ImageID, p.Desktop, p.IP, unix(p.Created), p.Ready, p.Node)
	if err != nil && strings.Contains(err.Error(), "UNIQUE") {
		return ErrConflict
	}
	return err
}

// RemovePool forgets a pool box (the reconciler then removes its
// container and volume).
func (t *Tx) RemovePool(key string) error {
	res, err := t.tx.Exec(`DELETE FROM pool WHERE key=?`, key)
	if err != nil {
		return err
	}
	return oneRow(res)
}

// TakePool removes and returns the oldest ready pool box of that type,
// image and desktop; ErrNotFound if there is none.
func (t *Tx) TakePool(typ, image string, desktop bool) (PoolBox, error) {
	return t.TakePoolOn(typ, image, desktop, nil)
}

// TakePoolOn is TakePool among the pool boxes on the servers named in
// nodes ("" the control plane's own); nil is every server.
func (t *Tx) TakePoolOn(typ, image string, desktop bool, nodes []string) (PoolBox, error) {
	q := `SELECT ` + poolCols + ` FROM pool WHERE ready=1 AND type=? AND image=? AND desktop=?`
	args := []any{typ, image, desktop}
	if nodes != nil {
		if len(nodes) == 0 {
			return PoolBox{}, ErrNotFound
		}
		q += ` AND node IN (?` + strings.Repeat(",?", len(nodes)-1) + `)`
		for _, n := range nodes {
			args = append(args, n)
		}
	}
	p, err := scanPool(t.tx.QueryRow(q+` ORDER BY created, key LIMIT 1`, args...))
	if err != nil {
		return p, err
	}
	return p, t.RemovePool(p.Key)
}

// SetPoolReady records that a pool box answered (it may be claimed), or
// that its container stopped or went (it may not, until it answers
// again). Not a change of declared state.
func (s *Store) SetPoolReady(key string, ready bool) error {
	_, err := s.q.Exec(`UPDATE pool SET ready=? WHERE key=?`, ready, key)
	return err
}
