package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

// Drive is a declared drive. State is "ready" or "deleting" (a tombstone the
// reconciler clears once the volume is gone).
type Drive struct {
	Name    string
	State   string
	Created time.Time
	Project string
	Size    string
	Labels  map[string]string
	Owner   int64
	// Node is the server the drive's volume is on ("" for the control
	// plane's own): boxes that mount it are placed there.
	Node string
}

const driveCols = `name, state, created, project, size, labels, owner, node`

func scanDrive(r scanner) (Drive, error) {
	var d Drive
	var c int64
	var labels string
	err := r.Scan(&d.Name, &d.State, &c, &d.Project, &d.Size, &labels, &d.Owner, &d.Node)
	if errors.Is(err, sql.ErrNoRows) {
		return d, ErrNotFound
	}
	if err != nil {
		return d, err
	}
	d.Created = fromUnix(c)
	return d, json.Unmarshal([]byte(labels), &d.Labels)
}

// CreateDrive declares a drive; ErrConflict if it exists.
func (t *Tx) CreateDrive(d Drive) error {
	if d.Labels == nil {
		d.Labels = map[string]string{}
	}
	_, err := t.tx.Exec(`INSERT INTO drives (`+driveCols+`) VALUES (?,?,?,?,?,?,?,?)`, d.Name, d.State, unix(d.Created), d.Project, d.Size, mustJSON(d.Labels), d.Owner, d.Node)
	if err != nil && strings.Contains(err.Error(), "UNIQUE") {
		return ErrConflict
	}
	return err
}

// SetDriveState changes a drive's state.
func (t *Tx) SetDriveState(name, state string) error {
	res, err := t.tx.Exec(`UPDATE drives SET state=? WHERE name=?`, state, name)
	if err != nil {
		return err
	}
	return oneRow(res)
}

const getDrive = `SELECT ` + driveCols + ` FROM drives WHERE name=?`

// GetDrive reads one drive in the transaction.
func (t *Tx) GetDrive(name string) (Drive, error) { return scanDrive(t.tx.QueryRow(getDrive, name)) }

// UpdateDrive rewrites a drive's size and labels.
func (t *Tx) UpdateDrive(d Drive) error {
	if d.Labels == nil {
		d.Labels = map[string]string{}
	}
	res, err := t.tx.Exec(`UPDATE drives SET size=?, labels=? WHERE name=?`, d.Size, mustJSON(d.Labels), d.Name)
	if err != nil {
		return err
	}
	return oneRow(res)
}

// ForgetDrive deletes a drive's tombstone after its volume is gone.
func (s *Store) ForgetDrive(name string) error {
	return s.declare(func(tx *sql.Tx) error {
		_, err := tx.Exec(`DELETE FROM drives WHERE name=? AND state='deleting'`, name)
		return err
	})
}

// Snapshot is a declared filesystem snapshot of a box. State: "pending"
// (to be taken), "ready", "failed", or "deleting" (a tombstone).
type Snapshot struct {
	ID      string
	Box     string
	Reason  string
	State   string
	Error   string
	Created time.Time
	// Size is the bytes the snapshot adds to what it was made from (0:
	// not known).
	Size int64
	// Node is the server its image is on (its box's when it was taken).
	Node string
	// Shipped says where it stands with the object store: "" or "local"
	// (on its server only), "shipping", "shipped"; ShipError is why the
	// last shipping failed.
	Shipped   string
	ShipError string
}

// AddSnapshot declares a snapshot.
func (t *Tx) AddSnapshot(s Snapshot) error {
	_, err := t.tx.Exec(`INSERT INTO snapshots (id, box, reason, state, error, created, node)
		VALUES (?,?,?,?,?,?, coalesce((SELECT node FROM boxes WHERE name=?), ''))`,
		s.ID, s.Box, s.Reason, s.State, s.Error, unix(s.Created), s.Box)
	return err
}

// GetSnapshot reads one snapshot in the transaction.
func (t *Tx) GetSnapshot(id string) (Snapshot, error) {
	return scanSnapshot(t.tx.QueryRow(`SELECT id, box, reason, state, error, created, size, node, shipped, ship_error FROM snapshots WHERE id=?`, id))
}

// MarkSnapshotsDeleting turns every snapshot of a box into a tombstone.
func (t *Tx) MarkSnapshotsDeleting(box string) error {
	_, err := t.tx.Exec(`UPDATE snapshots SET state='deleting' WHERE box=?`, box)
	return err
}

// PruneSnapshots turns a box's snapshots beyond the newest keep into
// tombstones, except those a box's filesystem was made from (a restore or
// a fork may need to make that box again).
func (t *Tx) PruneSnapshots(box string, keep int) error {
	_, err := t.tx.Exec(`UPDATE snapshots SET state='deleting'
		WHERE box=? AND state IN ('ready','failed')
		AND id NOT IN (SELECT id FROM snapshots WHERE box=? AND state IN ('ready','pending','failed')
			ORDER BY created DESC, id DESC LIMIT ?)
		AND id NOT IN (SELECT from_snapshot FROM boxes)`, box, box, keep)
	return err
}

// NewestSnapshot returns a box's newest ready or pending snapshot, but
// for those taken of what a restore replaced (reason "restore"): a
// restore's default is the newest point the box was saved at, not the
// state the last restore left behind.
func (t *Tx) NewestSnapshot(box string) (Snapshot, error) {
	return scanSnapshot(t.tx.QueryRow(`SELECT id, box, reason, state, error, created, size, node, shipped, ship_error FROM snapshots
		WHERE box=? AND state IN ('ready','pending') AND reason != 'restore' ORDER BY created DESC, id DESC LIMIT 1`, box))
}

func scanSnapshot(r scanner) (Snapshot, error) {
	var s Snapshot
	var c int64
	err := r.Scan(&s.ID, &s.Box, &s.Reason, &s.State, &s.Error, &c, &s.Size, &s.Node, &s.Shipped, &s.ShipError)
	if errors.Is(err, sql.ErrNoRows) {
		return s, ErrNotFound
	}
	s.Created = fromUnix(c)
	return s, err
}

// ListSnapshots lists snapshots, of one box when box is not empty, oldest
// first.
func (s *Store) ListSnapshots(box string) ([]Snapshot, error) {
	q, args := listSnapshots(box)
	return listAll(s.q, q, scanSnapshot, args...)
}

// ListSnapshots lists snapshots in the transaction.
func (t *Tx) ListSnapshots(box string) ([]Snapshot, error) {
	q, args := listSnapshots(box)
	return listAll(t.tx, q, scanSnapshot, args...)
}

func listSnapshots(box string) (string, []any) {
	q := `SELECT id, box, reason, state, error, created, size, node, shipped, ship_error FROM snapshots`
	var args []any
	if box != "" {
		q += ` WHERE box=?`
		args = append(args, box)
	}
	return q + ` ORDER BY created, id`, args
}

// SetSnapshotState records the outcome of taking a snapshot.
func (s *Store) SetSnapshotState(id, state, errMsg string) error {
	_, err := s.q.Exec(`UPDATE snapshots SET state=?, error=? WHERE id=?`, state, errMsg, id)
	return err
}

// SetSnapshotSize records the bytes a snapshot adds (observed state: the
// serial does not move).
func (s *Store) SetSnapshotSize(id string, size int64) error {
	_, err := s.q.Exec(`UPDATE snapshots SET size=? WHERE id=?`, size, id)
	return err
}

// SetSnapshotShipped records where a snapshot stands with the object
// store (observed state: the serial does not move).
func (s *Store) SetSnapshotShipped(id, shipped, errMsg string) error {
	_, err := s.q.Exec(`UPDATE snapshots SET shipped=?, ship_error=? WHERE id=?`, shipped, errMsg, id)
	return err
}

// ForgetSnapshot deletes a snapshot tombstone once its image is gone.
func (s *Store) ForgetSnapshot(id string) error {
	return s.declare(func(tx *sql.Tx) error {
		_, err := tx.Exec(`DELETE FROM snapshots WHERE id=? AND state='deleting'`, id)
		return err
	})
}

// Job is a detached command.
type Job struct {
	ID       string
	Box      string
	Cmd      []string
	State    string // running, exited, killed, lost (see api.Job)
	ExitCode *int
	Started  time.Time
	Ended    *time.Time
}

// API is the snapshot as the API shows it.
func (sn Snapshot) API() api.Snapshot {
	return api.Snapshot{ID: sn.ID, Box: sn.Box, Reason: sn.Reason, State: sn.State, Error: sn.Error, Created: sn.Created, Size: sn.Size,
		Shipped: sn.Shipped, ShipError: sn.ShipError}
}

// API is the job as the API shows it.
func (j Job) API() api.Job {
	return api.Job{ID: j.ID, Box: j.Box, Cmd: j.Cmd, State: j.State, ExitCode: j.ExitCode, Started: j.Started, Ended: j.Ended}
}

// AddJob records a started job.
func (s *Store) AddJob(j Job) error {
	_, err := s.q.Exec(`INSERT INTO jobs (id, box, cmd, state, started) VALUES (?,?,?,?,?)`,
		j.ID, j.Box, mustJSON(j.Cmd), j.State, unix(j.Started))
	return err
}

// AddJobUnder records a started job in a box of owner's, in one step
// with counting the jobs running in owner's boxes: with max of them or
// more (max > 0) it records nothing, and says how many with
// ErrOverLimit.
func (s *Store) AddJobUnder(j Job, owner int64, max int) (int, error) {
	var n int
	err := s.write(func(tx *sql.Tx) error {
		if max > 0 {
			if err := tx.QueryRow(`SELECT count(*) FROM jobs JOIN boxes ON boxes.name = jobs.box
				WHERE jobs.state = 'running' AND boxes.owner = ?`, owner).Scan(&n); err != nil {
				return err
			}
			if n >= max {
				return ErrOverLimit
			}
		}
		_, err := tx.Exec(`INSERT INTO jobs (id, box, cmd, state, started) VALUES (?,?,?,?,?)`,
			j.ID, j.Box, mustJSON(j.Cmd), j.State, unix(j.Started))
		return err
	})
	return n, err
}

// EndJob records how a job ended.
func (s *Store) EndJob(id, state string, code *int, at time.Time) error {
	_, err := s.q.Exec(`UPDATE jobs SET state=?, exit_code=?, ended=? WHERE id=?`, state, code, unix(at), id)
	return err
}

func scanJob(r scanner) (Job, error) {
	var j Job
	var cmd string
	var code, ended sql.NullInt64
	var started int64
	err := r.Scan(&j.ID, &j.Box, &cmd, &j.State, &code, &started, &ended)
	if errors.Is(err, sql.ErrNoRows) {
		return j, ErrNotFound
	}
	if err != nil {
		return j, err
	}
	j.Started = fromUnix(started)
	if code.Valid {
		c := int(code.Int64)
		j.ExitCode = &c
	}
	if ended.Valid {
		t := fromUnix(ended.Int64)
		j.Ended = &t
	}
	return j, json.Unmarshal([]byte(cmd), &j.Cmd)
}

const jobCols = `id, box, cmd, state, exit_code, started, ended`

// GetJob reads one job.
func (s *Store) GetJob(id string) (Job, error) {
	return scanJob(s.q.QueryRow(`SELECT `+jobCols+` FROM jobs WHERE id=?`, id))
}

// ListJobs lists a box's jobs, oldest first; with state set, only those.
func (s *Store) ListJobs(box, state string) ([]Job, error) {
	q := `SELECT ` + jobCols + ` FROM jobs WHERE (box=? OR ?='') AND (state=? OR ?='') ORDER BY started, id`
	return listAll(s.q, q, scanJob, box, box, state, state)
}

const listDrives = `SELECT ` + driveCols + ` FROM drives ORDER BY name`

// ListDrives lists the declared drives by name.
func (s *Store) ListDrives() ([]Drive, error) { return listAll(s.q, listDrives, scanDrive) }

// ListDrives lists drives by name in the transaction.
func (t *Tx) ListDrives() ([]Drive, error) { return listAll(t.tx, listDrives, scanDrive) }

// GetDrive reads one drive.
func (s *Store) GetDrive(name string) (Drive, error) { return scanDrive(s.q.QueryRow(getDrive, name)) }
