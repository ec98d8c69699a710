package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/objstore"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Place is where scheduled backups go: the object store's backups/
// (Bucket) or a folder (Folder). Names are the backups' own
// (paddock-20261207T195300Z.age), newest last in name order.
type Place interface {
	// Put stores the backup in the file at path as name.
	Put(ctx context.Context, name, path string, size int64) error
	List(ctx context.Context) ([]string, error)
	Open(ctx context.Context, name string) (io.ReadCloser, error)
	Remove(ctx context.Context, name string) error
	// String says where, in logs and errors.
	String() string
}

// Schedule writes a backup of the server's state to a Place (Once, run by
// paddockd every backup_every) and keeps the newest Keep there.
type Schedule struct {
	Place      Place
	Key        Key
	Store      *store.Store
	StateDir   string
	ConfigPath string
	Keep       int
	Log        *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Prefix and Suffix frame a scheduled backup's name.
const (
	Prefix = "paddock-"
	Suffix = ".age"
)

// Once writes one backup (through a file in the state directory, removed
// after), then removes the oldest beyond Keep. A backup that fails
// leaves nothing in the place, and removes none.
func (s *Schedule) Once(ctx context.Context) error {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	start := now().UTC()
	name := Prefix + start.Format("20060102T150405Z") + Suffix
	f, err := os.CreateTemp(s.StateDir, ".backup-*.age")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if err := Write(f, s.Key, s.Store, s.StateDir, s.ConfigPath); err != nil {
		return fmt.Errorf("writing the backup: %w", err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if err := s.Place.Put(ctx, name, f.Name(), size); err != nil {
		return fmt.Errorf("storing backup %s in %s: %w", name, s.Place, err)
	}
	s.Log.Info("backup written", "name", name, "to", s.Place.String(), "bytes", size, "took", time.Since(start).Round(time.Millisecond))
	names, err := s.Place.List(ctx)
	if err != nil {
		return fmt.Errorf("listing the backups in %s: %w", s.Place, err)
	}
	slices.Sort(names)
	for len(names) > max(s.Keep, 1) {
		if err := s.Place.Remove(ctx, names[0]); err != nil {
			return fmt.Errorf("removing old backup %s from %s: %w", names[0], s.Place, err)
		}
		names = names[1:]
	}
	return nil
}

// Latest is the newest backup in place ("" and no error: none).
func Latest(ctx context.Context, p Place) (string, error) {
	names, err := p.List(ctx)
	if err != nil || len(names) == 0 {
		return "", err
	}
	slices.Sort(names)
	return names[len(names)-1], nil
}

// IsName says whether name is a scheduled backup's.
func IsName(name string) bool {
	return strings.HasPrefix(name, Prefix) && strings.HasSuffix(name, Suffix) && !strings.ContainsAny(name, "/\\") && name != Prefix+Suffix
}

// Folder is a Place on this server's disk (another disk's mount, say).
type Folder string

func (d Folder) String() string { return string(d) }

// Put copies the file into the folder, through a temporary file, so that
// a copy cut short is never a backup.
func (d Folder) Put(ctx context.Context, name, path string, size int64) error {
	if !IsName(name) {
		return fmt.Errorf("%q is not a backup's name", name)
	}
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return err
	}
	out, err := os.CreateTemp(string(d), ".part-*")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name())
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(out.Name(), filepath.Join(string(d), name))
}

func (d Folder) List(ctx context.Context) ([]string, error) {
	es, err := os.ReadDir(string(d))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var out []string
	for _, e := range es {
		if e.Type().IsRegular() && IsName(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, err
}

func (d Folder) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if !IsName(name) {
		return nil, fmt.Errorf("%q is not a backup's name", name)
	}
	return os.Open(filepath.Join(string(d), name))
}

func (d Folder) Remove(ctx context.Context, name string) error {
	if !IsName(name) {
		return fmt.Errorf("%q is not a backup's name", name)
	}
	return os.Remove(filepath.Join(string(d), name))
}

// Bucket is a Place in the object store, under backups/ (beside the
// shipped snapshots; the snapshots' sweep leaves it alone).
type Bucket struct{ Store *objstore.Store }

const bucketDir = "backups/"

func (b Bucket) String() string { return "the object store (" + bucketDir + ")" }

func (b Bucket) Put(ctx context.Context, name, path string, size int64) error {
	if !IsName(name) {
		return fmt.Errorf("%q is not a backup's name", name)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return b.Store.Put(ctx, bucketDir+name, f, size)
}

func (b Bucket) List(ctx context.Context) ([]string, error) {
	objs, err := b.Store.List(ctx, bucketDir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range objs {
		if n := strings.TrimPrefix(o.Key, bucketDir); IsName(n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func (b Bucket) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if !IsName(name) {
		return nil, fmt.Errorf("%q is not a backup's name", name)
	}
	data, err := b.Store.Get(ctx, bucketDir+name)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (b Bucket) Remove(ctx context.Context, name string) error {
	if !IsName(name) {
		return fmt.Errorf("%q is not a backup's name", name)
	}
	return b.Store.Delete(ctx, bucketDir+name)
}

// Run writes a backup every every until ctx ends: the first once the
// newest in the place is every old (at once when there is none), so that
// restarts neither skip nor pile up backups. A failure is logged and
// tried again a minute later (or every, when shorter).
func (s *Schedule) Run(ctx context.Context, every time.Duration) {
	retry := min(every, time.Minute)
	for {
		wait := retry
		latest, err := Latest(ctx, s.Place)
		switch {
		case err != nil:
			s.Log.Error("scheduled backup: listing the backups", "to", s.Place.String(), "err", err)
		case latest == "":
			wait = 0
		default:
			wait = every
			if t, err := time.Parse("20060102T150405Z", strings.TrimSuffix(strings.TrimPrefix(latest, Prefix), Suffix)); err == nil {
				wait = time.Until(t.Add(every))
			}
		}
		if err == nil && wait <= 0 {
			if err := s.Once(ctx); err != nil && ctx.Err() == nil {
				s.Log.Error("scheduled backup", "to", s.Place.String(), "err", err)
			} else {
				continue
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(wait, retry)):
		}
	}
}
