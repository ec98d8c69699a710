package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/store"
)

// KeptScreenshots is how many screenshots of each box the server keeps
// for its gallery; older ones go as new ones come.
const KeptScreenshots = 12

// galleryOf is where the screenshots of the box with id uid (name, for a
// box made before ids) are kept: by its id, so that a later box of the
// same name never sees them.
func (s *Service) galleryOf(uid, name string) string {
	key := "id-" + uid
	if uid == "" {
		key = "name-" + name
	}
	return filepath.Join(s.Cfg.StateDir, "screenshots", key)
}

// shotsDir is the gallery of the box named name now.
func (s *Service) shotsDir(name string) (string, error) {
	b, err := s.Store.GetBox(name)
	if errors.Is(err, store.ErrNotFound) {
		return "", notFound("box", name)
	}
	return s.galleryOf(b.UID, b.Name), err
}

// TakeScreenshot takes a screenshot of a box's desktop and keeps it in
// the box's gallery (the newest KeptScreenshots).
func (s *Service) TakeScreenshot(ctx context.Context, name string) (api.Screenshot, error) {
	png, err := s.Screenshot(ctx, name)
	if err != nil {
		return api.Screenshot{}, err
	}
	dir, err := s.shotsDir(name)
	if err != nil {
		return api.Screenshot{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return api.Screenshot{}, err
	}
	now := s.now()
	id := strconv.FormatInt(now.UnixNano(), 10)
	tmp := filepath.Join(dir, "."+id+".tmp")
	if err := os.WriteFile(tmp, png, 0o600); err != nil {
		os.Remove(tmp)
		return api.Screenshot{}, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, id+".png")); err != nil {
		return api.Screenshot{}, err
	}
	shots, err := s.Screenshots(name)
	if err == nil {
		for _, old := range shots[min(len(shots), KeptScreenshots):] {
			os.Remove(filepath.Join(dir, old.ID+".png"))
		}
	}
	return api.Screenshot{ID: id, Taken: now, Size: int64(len(png))}, nil
}

// Screenshots lists a box's kept screenshots, newest first.
func (s *Service) Screenshots(name string) ([]api.Screenshot, error) {
	if _, err := s.GetBox(name); err != nil {
		return nil, err
	}
	dir, err := s.shotsDir(name)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return []api.Screenshot{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := []api.Screenshot{}
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".png")
		ns, err := strconv.ParseInt(id, 10, 64)
		if !ok || err != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, api.Screenshot{ID: id, Taken: time.Unix(0, ns).UTC(), Size: info.Size()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, nil
}

// ScreenshotFile is the path of one kept screenshot of a box.
func (s *Service) ScreenshotFile(name, id string) (string, error) {
	if _, err := s.GetBox(name); err != nil {
		return "", err
	}
	if _, err := strconv.ParseInt(id, 10, 64); err != nil {
		return "", notFound("screenshot", id)
	}
	dir, err := s.shotsDir(name)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, id+".png")
	if _, err := os.Stat(p); err != nil {
		return "", &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("box %q has no screenshot %q", name, id)}
	}
	return p, nil
}

// boxState is everything the server keeps of a box outside the engine
// and the declared state, by the box's id or name. ForgetBox removes each
// when the box's tombstone goes, whatever removed the box (rm, a
// Boxfile's apply or destroy); a test removes a box every way and checks
// every item.
var boxState = []struct {
	What   string
	forget func(s *Service, t store.Tombstone, jobs []string)
}{
	{"job logs", func(s *Service, _ store.Tombstone, jobs []string) { s.ForgetJobLogs(jobs) }},
	{"staging leftovers", func(s *Service, t store.Tombstone, _ []string) {
		// The box's files went with it; a push to a later box of the same
		// name that is under way keeps its own.
		ls, _ := s.Store.Leftovers()
		for _, l := range ls {
			s.memMu.Lock()
			live := s.live[l]
			s.memMu.Unlock()
			if l.Kind == "box" && l.Target == t.Name && !live {
				s.Store.DoneLeftover(l)
			}
		}
	}},
	{"screenshots", func(s *Service, t store.Tombstone, _ []string) {
		if !strings.ContainsAny(t.UID+t.Name, "/.") {
			os.RemoveAll(s.galleryOf(t.UID, t.Name))
		}
	}},
}

// ForgetBox removes what the server kept of a removed box (boxState),
// once its tombstone went (the reconciler's Forget).
func (s *Service) ForgetBox(t store.Tombstone, jobs []string) {
	for _, st := range boxState {
		st.forget(s, t, jobs)
	}
}
