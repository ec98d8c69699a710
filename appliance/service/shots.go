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
)

// KeptScreenshots is how many screenshots of each box the server keeps
// for its gallery; older ones go as new ones come.
const KeptScreenshots = 12

func (s *Service) shotsDir(box string) string {
	return filepath.Join(s.Cfg.StateDir, "screenshots", box)
}

// TakeScreenshot takes a screenshot of a box's desktop and keeps it in
// the box's gallery (the newest KeptScreenshots).
func (s *Service) TakeScreenshot(ctx context.Context, name string) (api.Screenshot, error) {
	png, err := s.Screenshot(ctx, name)
	if err != nil {
		return api.Screenshot{}, err
	}
	dir := s.shotsDir(name)
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
	ents, err := os.ReadDir(s.shotsDir(name))
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
	p := filepath.Join(s.shotsDir(name), id+".png")
	if _, err := os.Stat(p); err != nil {
		return "", &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("box %q has no screenshot %q", name, id)}
	}
	return p, nil
}

// forgetScreenshots drops a removed box's gallery.
func (s *Service) forgetScreenshots(name string) {
	if name != "" && !strings.ContainsAny(name, "/.") {
		os.RemoveAll(s.shotsDir(name))
	}
}
