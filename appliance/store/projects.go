package store

import "time"

// Project is the record of a Boxfile project's last apply: the request as
// applied (JSON), when, by whom and the serial it left.
type Project struct {
	Name      string
	Owner     int64
	Request   string
	Applied   time.Time
	AppliedBy string
	Serial    int64
}

// PutProject records an apply of a project.
func (t *Tx) PutProject(p Project) error {
	_, err := t.tx.Exec(`INSERT INTO projects (name, owner, request, applied, applied_by, serial) VALUES (?,?,?,?,?,?)
		ON CONFLICT(name) DO UPDATE SET owner=excluded.owner, request=excluded.request, applied=excluded.applied,
		applied_by=excluded.applied_by, serial=excluded.serial`,
		p.Name, p.Owner, p.Request, unix(p.Applied), p.AppliedBy, p.Serial)
	return err
}

// DeleteProject forgets a project (it was destroyed).
func (t *Tx) DeleteProject(name string) error {
	_, err := t.tx.Exec(`DELETE FROM projects WHERE name=?`, name)
	return err
}

// ListProjects lists the recorded projects by name.
func (s *Store) ListProjects() ([]Project, error) {
	return listAll(s.q, `SELECT name, owner, request, applied, applied_by, serial FROM projects ORDER BY name`, func(r scanner) (Project, error) {
		var p Project
		var at int64
		err := r.Scan(&p.Name, &p.Owner, &p.Request, &at, &p.AppliedBy, &p.Serial)
		p.Applied = fromUnix(at)
		return p, err
	})
}
