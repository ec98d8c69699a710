package service

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
)

// MaxDirEntries bounds a directory listing.
const MaxDirEntries = 5000

// ListDir lists a directory in a running box as the box user sees it:
// directories first, then by name. It runs find(1) in the box, so what
// the box user may not read is an error, as it would be in a shell.
func (s *Service) ListDir(ctx context.Context, name, dir string) (api.Dir, error) {
	if _, err := s.RunningBox(name); err != nil {
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
	code, err := s.Driver.Exec(ctx, s.engineName(name), driver.ExecSpec{Cmd: []string{"sh", "-c", script, "ls", dir}, Stdout: &out, Stderr: &stderr})
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
		f := strings.SplitN(parts[i], "/", 4)
		if len(f) != 4 {
			continue
		}
		if len(res.Entries) == MaxDirEntries {
			res.Truncated = true
			break
		}
		size, _ := strconv.ParseInt(f[1], 10, 64)
		secs, _ := strconv.ParseFloat(f[2], 64)
		e := api.DirEntry{Name: f[3], Type: entryType(f[0]), Size: size, Modified: time.Unix(int64(secs), 0).UTC(), Target: parts[i+1]}
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
