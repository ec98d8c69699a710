package service

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/archive"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// MarkRestoring marks a drive as being restored (the reconciler starts
// no box that mounts it meanwhile), or says it is already; done ends it.
func (s *Service) MarkRestoring(name string) (done func(), err error) {
	s.memMu.Lock()
	defer s.memMu.Unlock()
	if s.restoring[name] {
		return nil, api.Conflict("drive %q is being restored already", name)
	}
	if s.restoring == nil {
		s.restoring = map[string]bool{}
	}
	s.restoring[name] = true
	return func() {
		s.memMu.Lock()
		delete(s.restoring, name)
		s.memMu.Unlock()
	}, nil
}

// DriveRestoring says whether a restore of the drive is under way (the
// reconciler starts no box that mounts it meanwhile).
func (s *Service) DriveRestoring(name string) bool {
	s.memMu.Lock()
	defer s.memMu.Unlock()
	return s.restoring[name]
}

// errAbandoned ends the checking of an archive whose consumer stopped.
var errAbandoned = errors.New("the archive's consumer stopped")

// Checked streams an uploaded archive through the archive checks (every
// entry given to the box user) into use, which must write nothing where
// it belongs unless its reader ends cleanly: a refused entry cuts the
// stream, and its error is the answer (nothing was written), whatever use
// made of the cut stream. Nothing is spooled on the server. With under
// set, every entry goes under that folder, made by the archive's first
// entry and owned by the box user.
func (s *Service) Checked(body io.Reader, under string, use func(io.Reader) error) error {
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		var err error
		if under != "" {
			lead := tar.NewWriter(pw)
			err = lead.WriteHeader(&tar.Header{Name: under + "/", Typeflag: tar.TypeDir, Mode: 0o755,
				Uid: s.Cfg.BoxUID, Gid: s.Cfg.BoxUID, ModTime: time.Now()})
			if err == nil {
				err = lead.Flush() // no end of archive: the entries follow
			}
		}
		if err == nil {
			err = archive.Filter(pw, body, s.Cfg.ArchiveMaxMiB<<20, func(h *tar.Header) {
				h.Uid, h.Gid, h.Uname, h.Gname = s.Cfg.BoxUID, s.Cfg.BoxUID, "", ""
				if under != "" {
					h.Name = under + "/" + h.Name
					if h.Typeflag == tar.TypeLink {
						h.Linkname = under + "/" + h.Linkname
					}
				}
			})
		}
		pw.CloseWithError(err)
		errc <- err
	}()
	err := use(pr)
	pr.CloseWithError(errAbandoned)
	ferr := <-errc
	switch {
	case errors.Is(ferr, errAbandoned):
		if err == nil {
			err = errors.New("the archive was not read to its end")
		}
		return err
	case archive.Refused(ferr):
		return api.Invalid("archive", "%v; nothing was written", ferr)
	case ferr != nil:
		return ferr
	}
	return err
}

// AddLeftover lists a staging folder, in the store (for the next start,
// should this process die) and as in use by this process.
func (s *Service) AddLeftover(l store.Leftover) error {
	s.memMu.Lock()
	if s.live == nil {
		s.live = map[store.Leftover]bool{}
	}
	s.live[l] = true
	s.memMu.Unlock()
	return s.Store.AddLeftover(l)
}

// DoneLeftover forgets a staging folder that its upload removed.
func (s *Service) DoneLeftover(l store.Leftover) {
	s.Store.DoneLeftover(l)
	s.memMu.Lock()
	delete(s.live, l)
	s.memMu.Unlock()
}

// CleanLeftovers removes the staging folders that uploads cut off by a
// crash left: in running boxes (a push) and in drives (a restore). Those
// of uploads this process is carrying out are not touched; those it
// cannot reach yet (a stopped box) stay listed for a later run.
func (s *Service) CleanLeftovers(ctx context.Context) error {
	ls, err := s.Store.Leftovers()
	if err != nil || len(ls) == 0 {
		return err
	}
	var errs []error
	for _, l := range ls {
		s.memMu.Lock()
		live := s.live[l]
		for o := range s.live {
			// A drive's staging folders are cleaned all at once: not
			// while a restore of it runs.
			live = live || (l.Kind == "volume" && o.Kind == l.Kind && o.Target == l.Target)
		}
		s.memMu.Unlock()
		if live {
			continue
		}
		switch l.Kind {
		case "box":
			b, err := s.Store.GetBox(l.Target)
			if errors.Is(err, store.ErrNotFound) {
				s.Store.DoneLeftover(l) // the box, and its files, are gone
				continue
			}
			if err != nil || b.Observed != "running" {
				continue
			}
			code, err := s.Driver.Exec(ctx, b.Key(), driver.ExecSpec{Cmd: []string{"rm", "-rf", "--", l.Path}, User: "root"})
			if err != nil || code != 0 {
				errs = append(errs, fmt.Errorf("removing %s in box %s: exit %d, %v", l.Path, l.Target, code, err))
				continue
			}
		case "volume":
			err := s.Driver.CleanVolume(ctx, driver.VolumeRef{Kind: driver.KindDrive, Name: l.Target}, s.Cfg.Image)
			if err != nil && !errors.Is(err, driver.ErrNotFound) {
				errs = append(errs, fmt.Errorf("cleaning drive %s: %w", l.Target, err))
				continue
			}
		}
		s.Log.Info("removed what an upload cut off by a crash left", "kind", l.Kind, "target", l.Target, "path", l.Path)
		s.Store.DoneLeftover(l)
	}
	return errors.Join(errs...)
}
