package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/archive"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Push extracts a tar stream into dir in a box (created if missing). The
// archive streams, checked entry by entry as it passes, into a staging
// folder on the target's filesystem (dir/.paddock-push-ID, or in dir's
// nearest existing parent while dir does not exist); only once all of it
// arrived and passed is it merged into dir (hard links, no copy) and the
// staging folder removed. An entry with
// "..", an absolute name or a link out of the target refuses the whole
// archive, and dir is as it was. Files belong to the box user.
//
// Where the box's user may write the folder the staging folder goes in,
// paddockd does all of it itself, on the box's files with the box user's
// rights (pushAsUser): no copy through the engine and no process in the
// box, and the staged entries move into place by renames. Elsewhere (a
// target under root's /opt, say) the engine copies the archive in and one
// command in the box merges it as root.
func (f *Files) Push(ctx context.Context, name, dir string, body io.Reader) error {
	used, _, err := f.core.Use(ctx, name)
	if err != nil {
		return err
	}
	defer used()
	b, err := f.core.RunningBox(name)
	if err != nil {
		return err
	}
	key := b.Key()
	if !path.IsAbs(dir) {
		return api.Invalid("path", "target %q must be an absolute path in the box", dir)
	}
	dir = path.Clean(dir)
	if uf, ok := f.drv.(driver.UserFiles); ok {
		if done, err := f.pushAsUser(ctx, uf, name, key, dir, body); done {
			return err
		}
	}
	// The steps in the box run to their end even if the client goes: a
	// step cut off could not be undone.
	stay := context.WithoutCancel(ctx)
	// The staging folder goes in the target or, while the target does not
	// exist, in its nearest folder that does: the same filesystem, and
	// nothing of the target is made before the archive passed. It is the
	// archive's first entry (owned by the box user), so that making it
	// costs no exec; the folder it goes in is found by asking the engine.
	// (A crash's leftovers are listed in the store and go after the next
	// start.)
	t0 := time.Now()
	parent, err := f.pushParent(ctx, name, key, dir)
	if err != nil {
		return err
	}
	t1 := time.Now()
	stageName := pushStagePrefix + auth.RandomHex(6)
	stage := path.Join(parent, stageName)
	left := store.Leftover{Kind: "box", Target: name, Path: stage}
	if err = f.core.AddLeftover(left); err == nil {
		err = f.core.Checked(body, stageName, func(tar io.Reader) error { return f.drv.CopyTo(ctx, key, parent, tar) })
	}
	if err == nil {
		t2 := time.Now()
		if err = f.engineMerge(stay, key, stage, dir); err == nil {
			f.core.DoneLeftover(left)
			f.log.Debug("push", "box", name, "dir", dir, "find_folder", t1.Sub(t0), "stream", t2.Sub(t1), "merge", time.Since(t2))
			return nil
		}
	}
	if rerr := f.rootRun(stay, key, "rm", "-rf", "--", stage); rerr != nil {
		f.log.Warn("removing a push's staging folder", "box", name, "dir", stage, "err", rerr)
	} else {
		f.core.DoneLeftover(left)
	}
	return err
}

// pushAsUser is Push done by paddockd itself (or, for a box on another
// server, by that server's agent) on the box's files, with the box user's
// rights (driver.UserFiles): the archive is checked entry by entry as it
// is written into the staging folder, which then moves into place by
// renames. Nothing runs in the box and the engine copies nothing. Where
// the box's user may not write the folder the staging folder would go
// in, it is not done (done false, the body unread): the push is the
// engine's, as root. Where it may not write a folder of the target that
// the archive merges into, the staged files are merged as root
// (engineMerge).
func (f *Files) pushAsUser(ctx context.Context, uf driver.UserFiles, name, key, dir string, body io.Reader) (done bool, err error) {
	uid := f.cfg.BoxUID
	t0 := time.Now()
	parent, notFolder, writable, err := uf.PushFolder(ctx, key, uid, dir)
	switch {
	case notFolder != "":
		return true, api.Invalid("path", "cannot push into %s in box %q: %s is not a folder", dir, name, notFolder)
	case errors.Is(err, errors.ErrUnsupported):
		return false, nil // a driver without it
	case err != nil:
		f.log.Warn("push by the engine: the box's files could not be opened as its user", "box", name, "dir", dir, "err", err)
		return false, nil
	case !writable:
		f.log.Debug("push by the engine: the box user may not write there", "box", name, "dir", dir)
		return false, nil
	}
	t1 := time.Now()
	stage := path.Join(parent, pushStagePrefix+auth.RandomHex(6))
	left := store.Leftover{Kind: "box", Target: name, Path: stage}
	if err := f.core.AddLeftover(left); err != nil {
		return true, err
	}
	// The steps in the box run to their end even if the client goes: a
	// step cut off could not be undone.
	stay := context.WithoutCancel(ctx)
	blocked, staged, err := uf.UnpackAsUser(stay, key, uid, stage, dir, f.cfg.ArchiveMaxMiB<<20, body)
	t2 := time.Now()
	if err == nil && blocked != "" {
		// A folder of the target is not the box user's to write in: the
		// staged files are merged as root, as the engine's path does.
		f.log.Debug("push merged by the engine", "box", name, "dir", dir, "blocked", blocked)
		err = f.engineMerge(stay, key, stage, dir)
		staged = err != nil
	}
	if !staged {
		f.core.DoneLeftover(left) // else listed: the next start removes it
	}
	switch {
	case archive.Refused(err):
		return true, api.Invalid("archive", "%v; nothing was written", err)
	case err != nil:
		return true, fmt.Errorf("pushing into %s: %w", dir, err)
	}
	f.log.Debug("push", "box", name, "dir", dir, "find_folder", t1.Sub(t0), "stream", t2.Sub(t1), "merge", time.Since(t2))
	return true, nil
}

// engineMerge merges a staging folder into dir as root, in one exec: the
// target's missing folders, given to the box user; then GNU cp merges the
// staged entries into it by hard links (folders that exist are merged
// into, files replaced; the target's own owner and mode stay); then the
// staging folder goes.
func (f *Files) engineMerge(ctx context.Context, key, stage, dir string) error {
	const merge = `set -e
stage=$1 dir=$2 uid=$3
if [ ! -e "$dir" ]; then
  top=$dir p=$(dirname -- "$dir")
  while [ ! -e "$p" ]; do top=$p p=$(dirname -- "$p"); done
  mkdir -p -- "$dir"
  chown -R "$uid:$uid" -- "$top"
fi
find "$stage" -mindepth 1 -maxdepth 1 -exec cp -a -l --remove-destination -t "$dir/" -- {} +
rm -rf -- "$stage"`
	if err := f.rootRun(ctx, key, "sh", "-c", merge, "merge", stage, dir, fmt.Sprint(f.cfg.BoxUID)); err != nil {
		return fmt.Errorf("moving the pushed files into %s: %w", dir, err)
	}
	return nil
}

// rootRun runs cmd in the box as root; a non-zero exit is an error that
// says what the command wrote to stderr.
func (f *Files) rootRun(ctx context.Context, key string, cmd ...string) error {
	var stderr bytes.Buffer
	code, err := f.drv.Exec(ctx, key, driver.ExecSpec{Cmd: cmd, User: "root", Stderr: &stderr})
	if err == nil && code != 0 {
		err = errors.New(strings.TrimSpace(stderr.String()))
	}
	return err
}

// pushParent is the folder a push into dir stages in: dir, or its
// nearest existing parent, which must be a folder.
func (f *Files) pushParent(ctx context.Context, box, key, dir string) (string, error) {
	if !driver.StatPath.Has(f.drv) {
		return "", errors.New("this engine driver cannot tell what a box's files are")
	}
	for p := dir; ; p = path.Dir(p) {
		isDir, err := driver.StatPath.Do(ctx, f.drv, driver.BoxPath{Box: key, Path: p})
		// Not there, or under a file (engines answer that one as a
		// server error): look at the parent, which says which.
		if err != nil && p != "/" {
			continue
		}
		if err != nil {
			return "", err
		}
		if !isDir {
			return "", api.Invalid("path", "cannot push into %s in box %q: %s is not a folder", dir, box, p)
		}
		return p, nil
	}
}

// pushStagePrefix names a push's staging folder in its target.
const pushStagePrefix = ".paddock-push-"
