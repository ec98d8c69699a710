package desktop

import (
	"bytes"
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
	"github.com/paddock-dev/paddock/appliance/capped"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// MaxScreenshots bounds the screenshots taken at once, server-wide.
const MaxScreenshots = 2

// KeptScreenshots is how many screenshots of each box the server keeps
// for its gallery; older ones go as new ones come.
const KeptScreenshots = 12

// maxScreenshot bounds a screenshot's size.
const maxScreenshot = 64 << 20

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// Screenshot returns a PNG of a box's whole display. It waits a few seconds
// for a desktop that is still starting.
func (d *Desktop) Screenshot(ctx context.Context, name string) ([]byte, error) {
	used, _, err := d.Core.Use(ctx, name)
	if err != nil {
		return nil, err
	}
	defer used()
	b, err := d.Core.DesktopBox(name)
	if err != nil {
		return nil, err
	}
	// Each screenshot is an X client and an encoder in a box: a few at a
	// time, server-wide, and more are refused rather than queued.
	select {
	case d.slots <- struct{}{}:
		defer func() { <-d.slots }()
	default:
		return nil, &api.Error{Code: api.CodeTooMany, Message: fmt.Sprintf("%d screenshots are being taken; try again in a moment", MaxScreenshots)}
	}
	env := []string{"DISPLAY=" + driver.Display}
	deadline := time.Now().Add(15 * time.Second)
	var out *capped.Buffer
	for {
		out = &capped.Buffer{Max: maxScreenshot}
		var errb bytes.Buffer
		code, err := d.Core.RunIn(ctx, b, driver.ExecSpec{
			Cmd: []string{"import", "-window", "root", "png:-"}, Env: env, Stdout: out, Stderr: &errb,
		})
		if err != nil {
			return nil, err
		}
		// A desktop that is still starting has no X server yet: wait for it.
		if code == 0 || !strings.Contains(errb.String(), "unable to open X server") {
			if code != 0 {
				return nil, fmt.Errorf("screenshot of box %q failed (exit %d): %s", name, code, strings.TrimSpace(errb.String()))
			}
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the desktop of box %q is not up: %s", name, strings.TrimSpace(errb.String()))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	switch {
	case out.Over:
		return nil, fmt.Errorf("screenshot of box %q is larger than %d MiB", name, maxScreenshot>>20)
	case !bytes.HasPrefix(out.Bytes(), pngMagic):
		return nil, fmt.Errorf("screenshot of box %q is not a PNG", name)
	}
	return out.Bytes(), nil
}

// galleryOf is where the screenshots of the box with id uid (name, for a
// box made before ids) are kept: by its id, so that a later box of the
// same name never sees them.
func (d *Desktop) galleryOf(uid, name string) string {
	key := "id-" + uid
	if uid == "" {
		key = "name-" + name
	}
	return filepath.Join(d.Dir, key)
}

// gallery is the gallery of the box named name now.
func (d *Desktop) gallery(name string) (string, error) {
	b, ok, err := d.Core.LookBox(name)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no box named %q", name)}
	}
	return d.galleryOf(b.UID, b.Name), nil
}

// forget removes a removed box's gallery.
func (d *Desktop) forget(t store.Tombstone, _ []string) {
	if !strings.ContainsAny(t.UID+t.Name, "/.") {
		os.RemoveAll(d.galleryOf(t.UID, t.Name))
	}
}

// TakeScreenshot takes a screenshot of a box's desktop and keeps it in
// the box's gallery (the newest KeptScreenshots).
func (d *Desktop) TakeScreenshot(ctx context.Context, name string) (api.Screenshot, error) {
	png, err := d.Screenshot(ctx, name)
	if err != nil {
		return api.Screenshot{}, err
	}
	dir, err := d.gallery(name)
	if err != nil {
		return api.Screenshot{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return api.Screenshot{}, err
	}
	now := time.Now().UTC()
	id := strconv.FormatInt(now.UnixNano(), 10)
	tmp := filepath.Join(dir, "."+id+".tmp")
	if err := os.WriteFile(tmp, png, 0o600); err != nil {
		os.Remove(tmp)
		return api.Screenshot{}, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, id+".png")); err != nil {
		return api.Screenshot{}, err
	}
	shots, err := d.Screenshots(name)
	if err == nil {
		for _, old := range shots[min(len(shots), KeptScreenshots):] {
			os.Remove(filepath.Join(dir, old.ID+".png"))
		}
	}
	return api.Screenshot{ID: id, Taken: now, Size: int64(len(png))}, nil
}

// Screenshots lists a box's kept screenshots, newest first.
func (d *Desktop) Screenshots(name string) ([]api.Screenshot, error) {
	dir, err := d.gallery(name)
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
func (d *Desktop) ScreenshotFile(name, id string) (string, error) {
	dir, err := d.gallery(name)
	if err != nil {
		return "", err
	}
	if _, err := strconv.ParseInt(id, 10, 64); err != nil {
		return "", &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no screenshot named %q", id)}
	}
	p := filepath.Join(dir, id+".png")
	if _, err := os.Stat(p); err != nil {
		return "", &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("box %q has no screenshot %q", name, id)}
	}
	return p, nil
}
