package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
)

// Pull returns a tar stream of path in a box; the first component of every
// name is path's base name. Where the box's user may read all of it,
// paddockd packs it itself, on the box's files with the box user's rights
// (pullAsUser); elsewhere the engine copies it out, as root.
func (f *Files) Pull(ctx context.Context, name, p string) (rc io.ReadCloser, err error) {
	used, _, err := f.core.Use(ctx, name)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			used()
		} else {
			rc = &usedReader{ReadCloser: rc, done: used}
		}
	}()
	b, err := f.core.RunningBox(name)
	if err != nil {
		return nil, err
	}
	if !path.IsAbs(p) {
		return nil, api.Invalid("path", "path %q must be absolute", p)
	}
	if uf, ok := f.drv.(driver.UserFiles); ok {
		if rc, done, err := f.pullAsUser(ctx, uf, name, b.Key(), path.Clean(p)); done {
			return rc, err
		}
	}
	rc, err = f.drv.CopyFrom(ctx, b.Key(), path.Clean(p))
	if errors.Is(err, driver.ErrNotFound) {
		return nil, noSuchPath(name, p)
	}
	return rc, err
}

// pullAsUser is Pull packed by paddockd (or the agent of the box's
// server) on the box's files as the box's user (driver.UserFiles). It is
// not done (done false) when the user may not read all of p: those pulls
// are the engine's, as root.
func (f *Files) pullAsUser(ctx context.Context, uf driver.UserFiles, name, key, p string) (rc io.ReadCloser, done bool, err error) {
	uid := f.cfg.BoxUID
	unreadable, err := uf.Unreadable(ctx, key, uid, p)
	switch {
	case errors.Is(err, driver.ErrNotFound):
		return nil, true, noSuchPath(name, p)
	case errors.Is(err, errors.ErrUnsupported):
		return nil, false, nil // a driver without it
	case err != nil:
		f.log.Warn("pull by the engine: the box's files could not be opened as its user", "box", name, "path", p, "err", err)
		return nil, false, nil
	case unreadable != "":
		f.log.Debug("pull by the engine: the box user may not read all of it", "box", name, "path", p, "unreadable", unreadable)
		return nil, false, nil
	}
	rc, err = uf.PackAsUser(ctx, key, uid, p)
	return rc, true, err
}

// noSuchPath is Pull's answer for a path that is not in the box.
func noSuchPath(box, p string) error {
	return &api.Error{Code: api.CodeNotFound, Field: "path", Message: fmt.Sprintf("no such file or directory in box %q: %s", box, p)}
}

// MaxDirEntries bounds a directory listing.
const MaxDirEntries = 5000

// ListDir lists a directory in a running box as the box user sees it:
// directories first, then by name. It runs find(1) in the box, so what
// the box user may not read is an error, as it would be in a shell.
func (f *Files) ListDir(ctx context.Context, name, dir string) (api.Dir, error) {
	b, err := f.core.RunningBox(name)
	if err != nil {
		return api.Dir{}, err
	}
	if !path.IsAbs(dir) {
		return api.Dir{}, api.Invalid("path", "path %q must be absolute", dir)
	}
	dir = path.Clean(dir)
	// One record per entry: "type/size/mtime/name" NUL "link target" NUL
	// (a name holds neither "/" nor NUL; a link target holds no NUL).
	script := `cd -- "$1" || exit 3; find . -mindepth 1 -maxdepth 1 -printf '%y/%s/%T@/%f\0%l\0' | head -z -n ` + strconv.Itoa(2*MaxDirEntries+2)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var out, stderr bytes.Buffer
	code, err := f.drv.Exec(ctx, b.Key(), driver.ExecSpec{Cmd: []string{"sh", "-c", script, "ls", dir}, Stdout: &out, Stderr: &stderr})
	if err != nil {
		return api.Dir{}, err
	}
	if code != 0 {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		if strings.Contains(msg, "No such file") || strings.Contains(msg, "Not a directory") {
			return api.Dir{}, &api.Error{Code: api.CodeNotFound, Field: "path", Message: fmt.Sprintf("no directory %s in box %q", dir, name)}
		}
		return api.Dir{}, api.Invalid("path", "cannot list %s in box %q: %s", dir, name, msg)
	}
	res := api.Dir{Path: dir, Entries: []api.DirEntry{}}
	parts := strings.Split(out.String(), "\x00")
	for i := 0; i+1 < len(parts); i += 2 {
		fs := strings.SplitN(parts[i], "/", 4)
		if len(fs) != 4 {
			continue
		}
		if len(res.Entries) == MaxDirEntries {
			res.Truncated = true
			break
		}
		size, _ := strconv.ParseInt(fs[1], 10, 64)
		secs, _ := strconv.ParseFloat(fs[2], 64)
		e := api.DirEntry{Name: fs[3], Type: entryType(fs[0]), Size: size, Modified: time.Unix(int64(secs), 0).UTC(), Target: parts[i+1]}
		res.Entries = append(res.Entries, e)
	}
	sort.Slice(res.Entries, func(i, j int) bool {
		a, b := res.Entries[i], res.Entries[j]
		if (a.Type == "dir") != (b.Type == "dir") {
			return a.Type == "dir"
		}
		return a.Name < b.Name
	})
	return res, nil
}

func entryType(y string) string {
	switch y {
	case "d":
		return "dir"
	case "f":
		return "file"
	case "l":
		return "link"
	}
	return "other"
}

// usedReader ends a use of its box (Core.Use) when it is closed.
type usedReader struct {
	io.ReadCloser
	done func()
}

func (u *usedReader) Close() error {
	err := u.ReadCloser.Close()
	u.done()
	return err
}
