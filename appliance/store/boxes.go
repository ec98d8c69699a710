package store

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"
)

// Box is a declared box and what was last observed of it.
type Box struct {
	Name       string
	Type       string
	Image      string
	TTL        time.Duration
	ExpiresAt  *time.Time
	Mounts     []Mount
	Env        map[string]string
	Desired    string // running | stopped
	From       string // snapshot id the filesystem came from
	Created    time.Time
	Observed   string
	ObservedEr string
	// Project is the Boxfile project that declares the box; "" for boxes
	// made with 'paddock new'.
	Project string
	Policy  string
	Agent   string
	Desktop bool
	// Setup is the state of the one-time push and setup steps: "" (none),
	// "pending", "done" or "failed".
	Setup      string
	SetupError string
	// Generation goes up when the box must be made again although nothing
	// else in its spec changed (a replacement asked for by a plan).
	Generation int
	// IP is the box's address on the box network.
	IP string
	// Owner is the id of the user the box belongs to.
	Owner int64
	// UID is the box's own id, given at creation and never reused: its
	// engine objects carry it, so that a later box of the same name never
	// reaches them. "" for boxes made before ids.
	UID string
	// Note says why the box was stopped when its user did not stop it
	// (its disk passed its type's bound); cleared when it starts.
	Note string
	// Engine is the name of the box's engine objects when it is not the
	// box's own: a box claimed from the warm pool keeps the pool's. Never
	// changes.
	Engine string
	// Node is the server the box is on ("" for the control plane's own);
	// its container, volumes and snapshots are there.
	Node string
	// NodeLabels are the labels the server a new box goes on must have
	// (a Boxfile's placement, 'new --node-label'); they choose a server
	// when the box is made, and move nothing after.
	NodeLabels map[string]string
	// Labels are the box's own labels (what it is for).
	Labels map[string]string
	// IdleStop is how long the box may go unused before it is stopped (0:
	// its type's idle_stop; negative: never).
	IdleStop time.Duration
	// Slept says that its idle stop stopped it (Desired is "stopped"): it
	// wakes on use. Cleared when it starts.
	Slept bool
	// DiskStopped says that its disk (or its owner's drives) passing a
	// bound stopped it: its next start gets a grace to free space.
	// Cleared when it starts.
	DiskStopped bool
	// OOMKills counts the processes the kernel killed for the box's
	// memory bound, as the metrics saw them; OOMAt is when the last was
	// seen (nil: never). OOMSeen is the box's own count (since its
	// container started) at the last look.
	OOMKills int64
	OOMAt    *time.Time
	OOMSeen  int64
	// Builder marks a box that runs one image build (package images): its
	// /var/lib/docker is its owner's build cache, kept after it goes, in
	// place of its own.
	Builder bool
	// Buckets are the buckets (or prefixes of them) the box mounts, from
	// S3-compatible stores, with its owner's keys (package buckets).
	Buckets []BucketMount
}

// BucketMount is a bucket, or a prefix of one, mounted in a box by its
// server (api.BucketMount).
type BucketMount struct {
	URL      string `json:"url"`
	To       string `json:"to"`
	ReadOnly bool   `json:"read_only,omitempty"`
	Secret   string `json:"secret"`
	Endpoint string `json:"endpoint,omitempty"`
	Region   string `json:"region,omitempty"`
}

// Asleep says that the box's idle stop stopped it, and its next use
// starts it.
func (b Box) Asleep() bool { return b.Slept && b.Desired == "stopped" }

// Key is the name the box's engine objects have.
func (b Box) Key() string {
	if b.Engine != "" {
		return b.Engine
	}
	return b.Name
}

// Mount is a drive mounted in a box.
type Mount struct {
	Drive    string `json:"drive"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"readonly,omitempty"`
}

const boxCols = `name, type, image, ttl_seconds, expires_at, mounts, env, desired, from_snapshot, created, observed, observed_error, project, policy, agent, desktop, setup, setup_error, generation, ip, owner, uid, note, engine, node, node_labels, labels, idle_stop_seconds, slept, oom_kills, oom_at, oom_seen, builder, disk_stopped, buckets`

type scanner interface{ Scan(...any) error }

func scanBox(r scanner) (Box, error) {
	var b Box
	var ttl, idle int64
	var exp, oomAt sql.NullInt64
	var mounts, env, nodeLabels, labels, buckets string
	var created int64
	err := r.Scan(&b.Name, &b.Type, &b.Image, &ttl, &exp, &mounts, &env, &b.Desired, &b.From, &created, &b.Observed, &b.ObservedEr,
		&b.Project, &b.Policy, &b.Agent, &b.Desktop, &b.Setup, &b.SetupError, &b.Generation, &b.IP, &b.Owner, &b.UID, &b.Note, &b.Engine, &b.Node, &nodeLabels, &labels, &idle, &b.Slept, &b.OOMKills, &oomAt, &b.OOMSeen, &b.Builder, &b.DiskStopped, &buckets)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return b, ErrNotFound
		}
		return b, err
	}
	b.TTL = time.Duration(ttl) * time.Second
	b.IdleStop = time.Duration(idle) * time.Second
	if exp.Valid {
		t := fromUnix(exp.Int64)
		b.ExpiresAt = &t
	}
	b.Created = fromUnix(created)
	if oomAt.Valid {
		t := fromUnix(oomAt.Int64)
		b.OOMAt = &t
	}
	if err := json.Unmarshal([]byte(mounts), &b.Mounts); err != nil {
		return b, err
	}
	if err := json.Unmarshal([]byte(env), &b.Env); err != nil {
		return b, err
	}
	if err := json.Unmarshal([]byte(nodeLabels), &b.NodeLabels); err != nil {
		return b, err
	}
	if err := json.Unmarshal([]byte(labels), &b.Labels); err != nil {
		return b, err
	}
	if err := json.Unmarshal([]byte(buckets), &b.Buckets); err != nil {
		return b, err
	}
	return b, nil
}

// bucketsJSON is a box's buckets as stored (none: an empty list).
func bucketsJSON(bs []BucketMount) string {
	if bs == nil {
		bs = []BucketMount{}
	}
	return mustJSON(bs)
}

func expiresArg(t *time.Time) any {
	if t == nil {
		return nil
	}
	return unix(*t)
}

// CreateBox declares a new box with a new id; ErrConflict if the name is
// taken, ErrRemoving if a removed box still holds it.
func (t *Tx) CreateBox(b Box) error {
	var n int
	if err := t.tx.QueryRow(`SELECT count(*) FROM tombstones WHERE name=?`, b.Name).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return ErrRemoving
	}
	// No two boxes, nor a box and a pool box, share engine names.
	if err := t.tx.QueryRow(`SELECT (SELECT count(*) FROM pool WHERE key=?) + (SELECT count(*) FROM boxes WHERE engine=?) + (SELECT count(*) FROM tombstones WHERE engine=?)`,
		b.Key(), b.Key(), b.Key()).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return ErrConflict
	}
	if b.UID == "" {
		b.UID = NewUID()
	}
	if b.Mounts == nil {
		b.Mounts = []Mount{}
	}
	if b.Env == nil {
		b.Env = map[string]string{}
	}
	if b.Policy == "" {
		b.Policy = "allow-all"
	}
	if b.NodeLabels == nil {
		b.NodeLabels = map[string]string{}
	}
	if b.Labels == nil {
		b.Labels = map[string]string{}
	}
	_, err := t.tx.Exec(`INSERT INTO boxes (`+boxCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,0,NULL,0,?,?,?)`,
		b.Name, b.Type, b.Image, int64(b.TTL/time.Second), expiresArg(b.ExpiresAt), mustJSON(b.Mounts), mustJSON(b.Env),
		b.Desired, b.From, unix(b.Created), "pending", "", b.Project, b.Policy, b.Agent, b.Desktop, b.Setup, b.SetupError, b.Generation, b.IP, b.Owner, b.UID, b.Note, b.Engine, b.Node, mustJSON(b.NodeLabels), mustJSON(b.Labels),
		int64(b.IdleStop/time.Second), b.Slept, b.Builder, b.DiskStopped, bucketsJSON(b.Buckets))
	if err != nil && strings.Contains(err.Error(), "UNIQUE") {
		return ErrConflict
	}
	return err
}

// GetBox reads one box in the transaction.
func (t *Tx) GetBox(name string) (Box, error) {
	return scanBox(t.tx.QueryRow(`SELECT `+boxCols+` FROM boxes WHERE name = ?`, name))
}

// UpdateBox rewrites the declared fields of a box.
func (t *Tx) UpdateBox(b Box) error {
	if b.Mounts == nil {
		b.Mounts = []Mount{}
	}
	if b.Env == nil {
		b.Env = map[string]string{}
	}
	if b.NodeLabels == nil {
		b.NodeLabels = map[string]string{}
	}
	if b.Labels == nil {
		b.Labels = map[string]string{}
	}
	res, err := t.tx.Exec(`UPDATE boxes SET type=?, image=?, ttl_seconds=?, expires_at=?, mounts=?, env=?, desired=?, from_snapshot=?,
		policy=?, agent=?, desktop=?, setup=?, setup_error=?, generation=?, ip=?, note=?, node_labels=?, labels=?, idle_stop_seconds=?, slept=?, disk_stopped=?, buckets=? WHERE name=?`,
		b.Type, b.Image, int64(b.TTL/time.Second), expiresArg(b.ExpiresAt), mustJSON(b.Mounts), mustJSON(b.Env), b.Desired, b.From,
		b.Policy, b.Agent, b.Desktop, b.Setup, b.SetupError, b.Generation, b.IP, b.Note, mustJSON(b.NodeLabels), mustJSON(b.Labels),
		int64(b.IdleStop/time.Second), b.Slept, b.DiskStopped, bucketsJSON(b.Buckets), b.Name)
	if err != nil {
		return err
	}
	return oneRow(res)
}

// CountOwned counts the boxes and the drives (not being removed) of a user.
func (t *Tx) CountOwned(owner int64) (boxes, drives int, err error) { return countOwned(t.tx, owner) }

// CountOwned is Tx.CountOwned outside a transaction (for reading).
func (s *Store) CountOwned(owner int64) (boxes, drives int, err error) {
	return countOwned(s.db, owner)
}

func countOwned(q querier, owner int64) (boxes, drives int, err error) {
	if err = q.QueryRow(`SELECT count(*) FROM boxes WHERE owner=?`, owner).Scan(&boxes); err != nil {
		return
	}
	err = q.QueryRow(`SELECT count(*) FROM drives WHERE owner=? AND state != 'deleting'`, owner).Scan(&drives)
	return
}

// NewUID makes a box id.
func NewUID() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// DeleteBox removes a box's declaration and leaves a tombstone that holds
// its name until ForgetTombstone.
func (t *Tx) DeleteBox(name string) error {
	b, err := t.GetBox(name)
	if err != nil {
		return err
	}
	if _, err := t.tx.Exec(`DELETE FROM boxes WHERE name=?`, name); err != nil {
		return err
	}
	if _, err := t.tx.Exec(`DELETE FROM metrics WHERE box=?`, name); err != nil {
		return err
	}
	if _, err := t.tx.Exec(`DELETE FROM grants WHERE box=?`, name); err != nil {
		return err
	}
	if _, err := t.tx.Exec(`DELETE FROM group_grants WHERE box=?`, name); err != nil {
		return err
	}
	if _, err := t.tx.Exec(`DELETE FROM broker_use WHERE box=?`, name); err != nil {
		return err
	}
	_, err = t.tx.Exec(`INSERT OR REPLACE INTO tombstones (name, uid, removed, engine, node) VALUES (?,?,?,?,?)`, name, b.UID, unix(time.Now()), b.Engine, b.Node)
	return err
}

// Tombstone is a removed box whose engine objects may still exist.
type Tombstone struct {
	Name, UID string
	// Engine names its engine objects when not Name (see Box.Engine).
	Engine string
	// Node is the server they are on.
	Node string
}

// Key is the name the removed box's engine objects have.
func (t Tombstone) Key() string {
	if t.Engine != "" {
		return t.Engine
	}
	return t.Name
}

// ListTombstones lists the removed boxes that still hold their names.
func (s *Store) ListTombstones() ([]Tombstone, error) {
	return listAll(s.q, `SELECT name, uid, engine, node FROM tombstones ORDER BY name`, func(r scanner) (Tombstone, error) {
		var t Tombstone
		return t, r.Scan(&t.Name, &t.UID, &t.Engine, &t.Node)
	})
}

// ForgetTombstone frees a removed box's name once its engine objects are
// gone: its jobs go with it (their ids are returned, for their logs). The
// declared state does not change, so the serial does not move.
func (s *Store) ForgetTombstone(name string) ([]string, error) {
	tx, err := s.db.Begin()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	ids, err := listAll(tx, `SELECT id FROM jobs WHERE box=?`, func(r scanner) (string, error) {
		var id string
		return id, r.Scan(&id)
	}, name)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(`DELETE FROM jobs WHERE box=?`, name); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(`DELETE FROM tombstones WHERE name=?`, name); err != nil {
		return nil, err
	}
	return ids, tx.Commit()
}

func oneRow(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// GetBox reads one box.
func (s *Store) GetBox(name string) (Box, error) {
	s.boxReads.Add(1)
	return scanBox(s.q.QueryRow(`SELECT `+boxCols+` FROM boxes WHERE name = ?`, name))
}

// BoxReads is how many times GetBox has read a box since the store was
// opened: a request reads its box once (a read is a query; six an exec
// were 15.6% of paddockd's time under the bench's full load).
func (s *Store) BoxReads() int64 { return s.boxReads.Load() }

// BoxAt reads the box of this server (not a node's) that has an address
// on the box network.
func (s *Store) BoxAt(ip string) (Box, error) {
	return scanBox(s.q.QueryRow(`SELECT `+boxCols+` FROM boxes WHERE ip = ? AND node = ''`, ip))
}

// SetObserved records what the reconciler saw of a box. It is not a change
// of declared state and does not bump the serial.
func (s *Store) SetObserved(name, state, errMsg string) error {
	_, err := s.q.Exec(`UPDATE boxes SET observed=?, observed_error=? WHERE name=?`, state, errMsg, name)
	return err
}

// SetupAgain puts a box whose push and setup had run back to waiting for
// them: its container was made again from the image, without what they
// did. A box with no setup, or one still waiting, is left as it is, and
// the serial with it: this runs for every container made from an image.
func (s *Store) SetupAgain(name string) error {
	if b, err := s.GetBox(name); errors.Is(err, ErrNotFound) || (err == nil && b.Setup != "done") {
		return nil
	} else if err != nil {
		return err
	}
	return s.declare(func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE boxes SET setup='pending', setup_error='' WHERE name=? AND setup='done'`, name)
		return err
	})
}

// FreeIP returns the lowest address of subnet that no box has, skipping the
// network address, the gateway and the broadcast address.
func (t *Tx) FreeIP(subnet netip.Prefix, gateway netip.Addr) (netip.Addr, error) {
	boxes, err := t.ListBoxes()
	if err != nil {
		return netip.Addr{}, err
	}
	pool, err := t.ListPool()
	if err != nil {
		return netip.Addr{}, err
	}
	used := map[netip.Addr]bool{gateway: true}
	for _, b := range boxes {
		if a, err := netip.ParseAddr(b.IP); err == nil {
			used[a] = true
		}
	}
	for _, p := range pool {
		if a, err := netip.ParseAddr(p.IP); err == nil {
			used[a] = true
		}
	}
	for a := subnet.Masked().Addr().Next(); subnet.Contains(a); a = a.Next() {
		if !subnet.Contains(a.Next()) {
			break // the broadcast address
		}
		if !used[a] {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no free address left in the box network %s", subnet)
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	Query(query string, args ...any) (*sql.Rows, error)
	QueryRow(query string, args ...any) *sql.Row
}

// listAll runs a query and scans every row.
func listAll[T any](q querier, query string, scan func(scanner) (T, error), args ...any) ([]T, error) {
	rows, err := q.Query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

const listBoxes = `SELECT ` + boxCols + ` FROM boxes ORDER BY name`

// ListBoxes lists every declared box by name.
func (s *Store) ListBoxes() ([]Box, error) { return listAll(s.q, listBoxes, scanBox) }

// ListBoxes lists every declared box in the transaction.
func (t *Tx) ListBoxes() ([]Box, error) { return listAll(t.tx, listBoxes, scanBox) }

// UsedBy lists the boxes that mount a drive.
func UsedBy(boxes []Box, drive string) []string {
	var out []string
	for _, b := range boxes {
		for _, m := range b.Mounts {
			if m.Drive == drive {
				out = append(out, b.Name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}
