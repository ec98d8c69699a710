package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"time"
)

// Image is a user's own image: NAME:TAG under its owner, the engine's ID
// for it now, and what it was built from.
type Image struct {
	Owner         int64
	Name          string
	Tag           string
	ID            string
	Size          int64
	Dockerfile    string // its path in the context
	ContextDigest string
	Inputs        string // images.InputsDigest
	Bases         []string
	Project       string // the Boxfile project that declares it, if any
	Built         time.Time
	BuildTime     time.Duration
}

// ImageShare is who else may use an owner's image NAME (all its tags):
// Kind "user" (Who a user id), "group" (a group name) or "all".
type ImageShare struct {
	Owner int64
	Name  string
	Kind  string
	Who   string
}

// Build is a build under way: its builder box and, once the image is in
// the engine but not yet named, its ID. What a crash leaves is found here.
type Build struct {
	ID      string
	Owner   int64
	Name    string
	Tag     string
	Box     string
	ImageID string
	Started time.Time
}

const imageCols = `owner, name, tag, image_id, size, dockerfile, context_digest, inputs, bases, project, built, build_ms`

func scanImage(r scanner) (Image, error) {
	var im Image
	var bases string
	var built, ms int64
	err := r.Scan(&im.Owner, &im.Name, &im.Tag, &im.ID, &im.Size, &im.Dockerfile, &im.ContextDigest, &im.Inputs, &bases, &im.Project, &built, &ms)
	if errors.Is(err, sql.ErrNoRows) {
		return im, ErrNotFound
	}
	if err != nil {
		return im, err
	}
	im.Built = fromUnix(built)
	im.BuildTime = time.Duration(ms) * time.Millisecond
	return im, json.Unmarshal([]byte(bases), &im.Bases)
}

// PutImage records an image under its owner, name and tag (replacing the
// one there was).
func (s *Store) PutImage(im Image) error {
	_, err := s.PutImageUnder(im, 0)
	return err
}

// PutImageUnder is PutImage in one step with counting owner's other
// images: a new name:tag when they have max or more (max > 0) records
// nothing, and says how many with ErrOverLimit. A name:tag they have
// already is replaced whatever the count.
func (s *Store) PutImageUnder(im Image, max int) (int, error) {
	if im.Bases == nil {
		im.Bases = []string{}
	}
	var n int
	err := s.write(func(tx *sql.Tx) error {
		if max > 0 {
			var have int
			if err := tx.QueryRow(`SELECT count(*), coalesce(sum(name = ? AND tag = ?), 0) FROM images WHERE owner = ?`, im.Name, im.Tag, im.Owner).Scan(&n, &have); err != nil {
				return err
			}
			if have == 0 && n >= max {
				return ErrOverLimit
			}
		}
		_, err := tx.Exec(`INSERT INTO images (`+imageCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(owner, name, tag) DO UPDATE SET image_id=excluded.image_id, size=excluded.size, dockerfile=excluded.dockerfile,
		context_digest=excluded.context_digest, inputs=excluded.inputs, bases=excluded.bases, project=excluded.project,
		built=excluded.built, build_ms=excluded.build_ms`,
			im.Owner, im.Name, im.Tag, im.ID, im.Size, im.Dockerfile, im.ContextDigest, im.Inputs, mustJSON(im.Bases), im.Project,
			unix(im.Built), im.BuildTime.Milliseconds())
		return err
	})
	return n, err
}

// GetImage reads one of owner's images.
func (s *Store) GetImage(owner int64, name, tag string) (Image, error) {
	return scanImage(s.q.QueryRow(`SELECT `+imageCols+` FROM images WHERE owner=? AND name=? AND tag=?`, owner, name, tag))
}

// ListImages lists every user's images, by owner, name and tag.
func (s *Store) ListImages() ([]Image, error) {
	return listAll(s.q, `SELECT `+imageCols+` FROM images ORDER BY owner, name, tag`, scanImage)
}

// ImageIDUsed says whether any image record names the engine image id.
func (s *Store) ImageIDUsed(id string) (bool, error) {
	var n int
	err := s.q.QueryRow(`SELECT count(*) FROM images WHERE image_id=?`, id).Scan(&n)
	return n > 0, err
}

// DeleteImage forgets one of owner's images; the last tag of a name takes
// the name's shares with it.
func (s *Store) DeleteImage(owner int64, name, tag string) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.Exec(`DELETE FROM images WHERE owner=? AND name=? AND tag=?`, owner, name, tag)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	if _, err := tx.Exec(`DELETE FROM image_shares WHERE owner=? AND name=? AND NOT EXISTS (SELECT 1 FROM images WHERE owner=? AND name=?)`,
		owner, name, owner, name); err != nil {
		return err
	}
	return tx.Commit()
}

// ImageShares lists who else may use owner's images (owner 0: everyone's).
func (s *Store) ImageShares(owner int64) ([]ImageShare, error) {
	return listAll(s.q, `SELECT owner, name, kind, who FROM image_shares WHERE owner=? OR ?=0 ORDER BY owner, name, kind, who`,
		func(r scanner) (ImageShare, error) {
			var sh ImageShare
			return sh, r.Scan(&sh.Owner, &sh.Name, &sh.Kind, &sh.Who)
		}, owner, owner)
}

// ShareImage lets sh.Who use sh.Owner's image sh.Name (add) or no longer.
func (s *Store) ShareImage(sh ImageShare, add bool) error {
	q := `DELETE FROM image_shares WHERE owner=? AND name=? AND kind=? AND who=?`
	if add {
		q = `INSERT OR IGNORE INTO image_shares (owner, name, kind, who) VALUES (?,?,?,?)`
	}
	_, err := s.q.Exec(q, sh.Owner, sh.Name, sh.Kind, sh.Who)
	return err
}

// StartBuild records a build under way.
func (s *Store) StartBuild(b Build) error {
	_, err := s.q.Exec(`INSERT INTO builds (id, owner, name, tag, box, image_id, started) VALUES (?,?,?,?,?,?,?)`,
		b.ID, b.Owner, b.Name, b.Tag, b.Box, b.ImageID, unix(b.Started))
	return err
}

// SetBuildImage records the ID of the image a build loaded, before it is
// named.
func (s *Store) SetBuildImage(id, imageID string) error {
	_, err := s.q.Exec(`UPDATE builds SET image_id=? WHERE id=?`, imageID, id)
	return err
}

// EndBuild forgets a build.
func (s *Store) EndBuild(id string) error {
	_, err := s.q.Exec(`DELETE FROM builds WHERE id=?`, id)
	return err
}

// Builds lists the builds under way (after a crash: those it cut off).
func (s *Store) Builds() ([]Build, error) {
	return listAll(s.q, `SELECT id, owner, name, tag, box, image_id, started FROM builds ORDER BY started`,
		func(r scanner) (Build, error) {
			var b Build
			var at int64
			err := r.Scan(&b.ID, &b.Owner, &b.Name, &b.Tag, &b.Box, &b.ImageID, &at)
			b.Started = fromUnix(at)
			return b, err
		})
}
