package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
)

// Node is a server that joined the control plane. The control plane's own
// server is not a row: it is the node "" of every engine object.
type Node struct {
	Name string
	// Addr is where its agent answers (host:port).
	Addr string
	// Subnet is its box network, carved out by the control plane.
	Subnet string
	Labels map[string]string
	Joined time.Time
	// Cert is its agent's certificate (PEM), as issued at join.
	Cert string
	// Drained: no new box is placed on it ('paddock node drain').
	Drained bool
}

const nodeCols = `name, addr, subnet, labels, joined, cert, drained`

func scanNode(r scanner) (Node, error) {
	var n Node
	var labels string
	var joined int64
	err := r.Scan(&n.Name, &n.Addr, &n.Subnet, &labels, &joined, &n.Cert, &n.Drained)
	if errors.Is(err, sql.ErrNoRows) {
		return n, ErrNotFound
	}
	if err != nil {
		return n, err
	}
	n.Joined = fromUnix(joined)
	return n, json.Unmarshal([]byte(labels), &n.Labels)
}

// ListNodes lists the joined nodes by name.
func (s *Store) ListNodes() ([]Node, error) {
	return listAll(s.q, `SELECT `+nodeCols+` FROM nodes ORDER BY name`, scanNode)
}

// ListNodes lists the joined nodes in the transaction.
func (t *Tx) ListNodes() ([]Node, error) {
	return listAll(t.tx, `SELECT `+nodeCols+` FROM nodes ORDER BY name`, scanNode)
}

// GetNode reads one node.
func (s *Store) GetNode(name string) (Node, error) {
	return scanNode(s.q.QueryRow(`SELECT `+nodeCols+` FROM nodes WHERE name=?`, name))
}

// AddJoinToken records a one-time join token by its hash.
func (s *Store) AddJoinToken(hash string, expires time.Time) error {
	_, err := s.q.Exec(`INSERT INTO node_joins (hash, expires, created) VALUES (?,?,?)`, hash, unix(expires), unix(time.Now()))
	return err
}

// JoinTokenValid says whether a join token (by its hash) is known,
// unspent and unexpired, without spending it: what a join checks before
// it does anything else.
func (s *Store) JoinTokenValid(hash string) (bool, error) {
	var n int
	err := s.q.QueryRow(`SELECT count(*) FROM node_joins WHERE hash=? AND expires >= ?`, hash, unix(time.Now())).Scan(&n)
	return n > 0, err
}

// JoinNode spends a join token and adds the node it lets in, at once:
// ErrNotFound when the token is unknown, spent or expired (the three are
// not told apart), ErrConflict when the name or subnet is taken. A token
// that fails for a conflict is spent all the same.
func (s *Store) JoinNode(hash string, n Node) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var expires int64
	err = tx.QueryRow(`SELECT expires FROM node_joins WHERE hash=?`, hash).Scan(&expires)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	} else if err != nil {
		return err
	}
	if _, err := tx.Exec(`DELETE FROM node_joins WHERE hash=? OR expires < ?`, hash, unix(time.Now())); err != nil {
		return err
	}
	if expires < unix(time.Now()) {
		if err := tx.Commit(); err != nil {
			return err
		}
		return ErrNotFound
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	_, err = tx.Exec(`INSERT INTO nodes (`+nodeCols+`) VALUES (?,?,?,?,?,?,?)`, n.Name, n.Addr, n.Subnet, mustJSON(n.Labels), unix(n.Joined), n.Cert, n.Drained)
	if err != nil && strings.Contains(err.Error(), "UNIQUE") {
		// The failed insert leaves the transaction whole: the token is
		// spent all the same.
		if err := tx.Commit(); err != nil {
			return err
		}
		return ErrConflict
	}
	if err != nil {
		return err
	}
	return tx.Commit()
}

// SetNodeLabels replaces a node's labels.
func (s *Store) SetNodeLabels(name string, labels map[string]string) error {
	if labels == nil {
		labels = map[string]string{}
	}
	res, err := s.q.Exec(`UPDATE nodes SET labels=? WHERE name=?`, mustJSON(labels), name)
	if err != nil {
		return err
	}
	return oneRow(res)
}

// SetNodeDrained marks a node drained (no new box goes there) or not.
func (s *Store) SetNodeDrained(name string, drained bool) error {
	res, err := s.q.Exec(`UPDATE nodes SET drained=? WHERE name=?`, drained, name)
	if err != nil {
		return err
	}
	return oneRow(res)
}

// RemoveNode forgets a node. The caller checks first that nothing is left
// on it (NodeObjects).
func (s *Store) RemoveNode(name string) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.Exec(`DELETE FROM nodes WHERE name=?`, name)
	if err != nil {
		return err
	}
	if err := oneRow(res); err != nil {
		return err
	}
	if _, err := tx.Exec(`DELETE FROM node_pools WHERE node=?`, name); err != nil {
		return err
	}
	return tx.Commit()
}

// NodePools is every server's own warm pool: node, then type, then how
// many pool boxes of it are kept there.
func (s *Store) NodePools() (map[string]map[string]int, error) {
	rows, err := s.q.Query(`SELECT node, type, count FROM node_pools`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]map[string]int{}
	for rows.Next() {
		var node, typ string
		var n int
		if err := rows.Scan(&node, &typ, &n); err != nil {
			return nil, err
		}
		if out[node] == nil {
			out[node] = map[string]int{}
		}
		out[node][typ] = n
	}
	return out, rows.Err()
}

// SetNodePool replaces a server's own warm pool (types with 0 are left
// out: none kept there).
func (s *Store) SetNodePool(node string, pool map[string]int) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`DELETE FROM node_pools WHERE node=?`, node); err != nil {
		return err
	}
	for t, n := range pool {
		if n <= 0 {
			continue
		}
		if _, err := tx.Exec(`INSERT INTO node_pools (node, type, count) VALUES (?,?,?)`, node, t, n); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// NodeObjects counts the boxes, pool boxes, drives and snapshots declared
// on a node (tombstones included: their engine objects may still be there).
func (s *Store) NodeObjects(name string) (boxes, pool, drives, snapshots int, err error) {
	err = s.q.QueryRow(`SELECT
		(SELECT count(*) FROM boxes WHERE node=?) + (SELECT count(*) FROM tombstones WHERE node=?),
		(SELECT count(*) FROM pool WHERE node=?),
		(SELECT count(*) FROM drives WHERE node=?),
		(SELECT count(*) FROM snapshots WHERE node=?)`, name, name, name, name, name).Scan(&boxes, &pool, &drives, &snapshots)
	return
}

// NodeTombstones counts what is on a node only until the reconciler
// removes it: removed boxes, drives and snapshots whose engine objects
// are still there.
func (s *Store) NodeTombstones(name string) (n int, err error) {
	err = s.q.QueryRow(`SELECT
		(SELECT count(*) FROM tombstones WHERE node=?) + (SELECT count(*) FROM drives WHERE node=? AND state='deleting') +
		(SELECT count(*) FROM snapshots WHERE node=? AND state='deleting')`, name, name, name).Scan(&n)
	return
}

// Where names the node an engine object is on: kind "box" (and
// "boxdata", a box's own volume) by its engine name, "snapshot" by id,
// "drive" by name. ErrNotFound when the state has no such object: it is
// not one Paddock declared (or no longer is).
//
// It reads what is committed, on a connection of its own: the cluster's
// driver asks it of every object a node lists, and lists are taken within
// declared-state transactions too (which hold the store's connection).
func (s *Store) Where(kind, name string) (string, error) { return where(s.rd, kind, name) }

// Where is Store.Where in the transaction.
func (t *Tx) Where(kind, name string) (string, error) { return where(t.tx, kind, name) }

func where(q interface {
	QueryRow(query string, args ...any) *sql.Row
}, kind, name string) (string, error) {
	var query string
	args := []any{name}
	switch kind {
	case "box", "boxdata":
		query = `SELECT node FROM boxes WHERE (engine='' AND name=?1) OR engine=?1
			UNION ALL SELECT node FROM pool WHERE key=?1
			UNION ALL SELECT node FROM tombstones WHERE (engine='' AND name=?1) OR engine=?1`
	case "snapshot":
		query = `SELECT node FROM snapshots WHERE id=?`
	case "drive":
		query = `SELECT node FROM drives WHERE name=?`
	case "buildcache":
		return "", nil // users' images are built on the control plane
	default:
		return "", ErrNotFound
	}
	var node string
	err := q.QueryRow(query+` LIMIT 1`, args...).Scan(&node)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	return node, err
}

// MoveBox records that a box is now on node, at ip, to be made from the
// snapshot from, and that the images of the snapshots snaps (from among
// them) are on node now too.
func (t *Tx) MoveBox(name, node, ip, from string, snaps []string) error {
	res, err := t.tx.Exec(`UPDATE boxes SET node=?, ip=?, from_snapshot=? WHERE name=?`, node, ip, from, name)
	if err != nil {
		return err
	}
	if err := oneRow(res); err != nil {
		return err
	}
	for _, id := range snaps {
		res, err = t.tx.Exec(`UPDATE snapshots SET node=? WHERE id=?`, node, id)
		if err != nil {
			return err
		}
		if err := oneRow(res); err != nil {
			return err
		}
	}
	return nil
}

// SetDriveNode records that a drive's volume is on node now.
func (t *Tx) SetDriveNode(name, node string) error {
	res, err := t.tx.Exec(`UPDATE drives SET node=? WHERE name=?`, node, name)
	if err != nil {
		return err
	}
	return oneRow(res)
}

// Move is a move between servers under way (journal): boxes and drives
// going from Source to Target, the boxes of them that ran before it
// (Running), and the snapshots it ships (Snaps).
type Move struct {
	ID             int64
	Source, Target string
	Boxes, Drives  []string
	Running, Snaps []string
	Started        time.Time
}

// AddMove records a move before anything of it is shipped.
func (s *Store) AddMove(m Move) (int64, error) {
	res, err := s.q.Exec(`INSERT INTO moves (source, target, boxes, drives, running, snaps, started) VALUES (?,?,?,?,?,?,?)`,
		m.Source, m.Target, mustJSON(m.Boxes), mustJSON(m.Drives), mustJSON(m.Running), mustJSON(m.Snaps), unix(m.Started))
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// SetMoveSnaps records the snapshots a move ships (known once the boxes
// are stopped and snapshotted).
func (s *Store) SetMoveSnaps(id int64, snaps []string) error {
	_, err := s.q.Exec(`UPDATE moves SET snaps=? WHERE id=?`, mustJSON(snaps), id)
	return err
}

// DoneMove forgets a move that ended (done or undone).
func (s *Store) DoneMove(id int64) error {
	_, err := s.q.Exec(`DELETE FROM moves WHERE id=?`, id)
	return err
}

// InTransit says whether a move under way ships object kind/name (a box
// by its engine name, its /var/lib/docker, a snapshot or a drive) to or
// from node: a copy there is the move's. It reads what is committed, as
// Where does.
func (s *Store) InTransit(node, kind, name string) (bool, error) {
	mvs, err := listAll(s.rd, `SELECT boxes, drives, snaps FROM moves WHERE source=?1 OR target=?1`, func(r scanner) ([3]string, error) {
		var m [3]string
		return m, r.Scan(&m[0], &m[1], &m[2])
	}, node)
	if err != nil || len(mvs) == 0 {
		return false, err
	}
	for _, m := range mvs {
		var boxes, drives, snaps []string
		for i, v := range []*[]string{&boxes, &drives, &snaps} {
			if err := json.Unmarshal([]byte(m[i]), v); err != nil {
				return false, err
			}
		}
		var in []string
		switch kind {
		case "snapshot":
			in = snaps
		case "drive":
			in = drives
		case "box", "boxdata":
			for _, b := range boxes {
				var engine string
				if err := s.rd.QueryRow(`SELECT engine FROM boxes WHERE name=?`, b).Scan(&engine); err == nil && engine != "" {
					b = engine
				}
				in = append(in, b)
			}
		}
		if slices.Contains(in, name) {
			return true, nil
		}
	}
	return false, nil
}

// Moves lists the moves under way, oldest first.
func (s *Store) Moves() ([]Move, error) {
	return listAll(s.q, `SELECT id, source, target, boxes, drives, running, snaps, started FROM moves ORDER BY id`, func(r scanner) (Move, error) {
		var m Move
		var boxes, drives, running, snaps string
		var started int64
		if err := r.Scan(&m.ID, &m.Source, &m.Target, &boxes, &drives, &running, &snaps, &started); err != nil {
			return m, err
		}
		m.Started = fromUnix(started)
		for _, f := range []struct {
			s string
			v *[]string
		}{{boxes, &m.Boxes}, {drives, &m.Drives}, {running, &m.Running}, {snaps, &m.Snaps}} {
			if err := json.Unmarshal([]byte(f.s), f.v); err != nil {
				return m, err
			}
		}
		return m, nil
	})
}

// HasLabels says whether server name, one of ns, has all of labels (the
// control plane's own server, which is not in ns, has none).
func HasLabels(ns []Node, name string, labels map[string]string) bool {
	if len(labels) == 0 {
		return true
	}
	for _, n := range ns {
		if n.Name != name {
			continue
		}
		for k, v := range labels {
			if n.Labels[k] != v {
				return false
			}
		}
		return true
	}
	return false
}

// LoseNode forgets what a server the owner says is gone held that was
// only there, once its boxes and drives are declared elsewhere (MoveBox,
// SetDriveNode): its snapshots that never reached the object store
// (their ids are returned: they are lost), those being removed, its
// removed boxes' tombstones (and their jobs) and its pool boxes. Its
// shipped snapshots that no moved box took with it stay, on the control
// plane's server ("": fetched from the store where a box needs one).
func (t *Tx) LoseNode(name string) (lost []string, err error) {
	lost, err = listAll(t.tx, `SELECT id FROM snapshots WHERE node=? AND state!='deleting' AND shipped!='shipped' ORDER BY created`, func(r scanner) (string, error) {
		var id string
		return id, r.Scan(&id)
	}, name)
	if err != nil {
		return nil, err
	}
	for _, q := range []string{
		`DELETE FROM snapshots WHERE node=?1 AND (state='deleting' OR shipped!='shipped')`,
		`UPDATE snapshots SET node='' WHERE node=?1`,
		`DELETE FROM jobs WHERE box IN (SELECT name FROM tombstones WHERE node=?1)`,
		`DELETE FROM tombstones WHERE node=?1`,
		`DELETE FROM pool WHERE node=?1`,
	} {
		if _, err := t.tx.Exec(q, name); err != nil {
			return nil, err
		}
	}
	return lost, nil
}
