package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/paddock-dev/paddock/appliance/archive"
	"github.com/paddock-dev/paddock/appliance/driver"
	"golang.org/x/sys/unix"
)

var _ driver.UserFiles = (*Driver)(nil)

// PushFolder is where a push into dir stages, looked at as the box's
// user (AsBoxUser).
func (d *Driver) PushFolder(ctx context.Context, box string, uid int, dir string) (folder, notFolder string, writable bool, err error) {
	err = d.AsBoxUser(ctx, box, uid, func() error {
		for p := dir; ; p = path.Dir(p) {
			fi, err := os.Stat(p)
			if noSuchFile(err) && p != "/" {
				continue
			}
			if err != nil {
				return err
			}
			if !fi.IsDir() {
				notFolder = p
				return nil
			}
			folder, writable = p, unix.Access(p, unix.W_OK|unix.X_OK) == nil
			return nil
		}
	})
	return folder, notFolder, writable, err
}

// UnpackAsUser unpacks and merges a push as the box's user (AsBoxUser).
func (d *Driver) UnpackAsUser(ctx context.Context, box string, uid int, stage, dir string, max int64, tar io.Reader) (blocked string, left bool, err error) {
	err = d.AsBoxUser(ctx, box, uid, func() error {
		err := archive.UnpackWith(tar, stage, archive.Checker{Max: max})
		if err == nil {
			if blocked, err = archive.MergeBlocked(stage, dir); err == nil && blocked == "" {
				err = archive.Merge(stage, dir)
			}
		}
		if err != nil {
			left = os.RemoveAll(stage) != nil
		} else {
			left = blocked != ""
		}
		return err
	})
	return blocked, left, err
}

// Unreadable finds what of p the box's user may not read (AsBoxUser).
func (d *Driver) Unreadable(ctx context.Context, box string, uid int, p string) (string, error) {
	var unreadable string
	err := d.AsBoxUser(ctx, box, uid, func() error {
		_, err := os.Lstat(p)
		if noSuchFile(err) {
			return fmt.Errorf("%s: %w", p, driver.ErrNotFound)
		}
		if err != nil {
			return err
		}
		unreadable, err = archive.Unreadable(p)
		return err
	})
	return unreadable, err
}

// PackAsUser streams p as a tar packed as the box's user (AsBoxUser). The
// packing ends when the whole tree was written or the reader closed.
func (d *Driver) PackAsUser(ctx context.Context, box string, uid int, p string) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() {
		err := d.AsBoxUser(context.WithoutCancel(ctx), box, uid, func() error { return archive.PackTree(pw, p) })
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// noSuchFile reports whether a lookup failed because nothing is there
// (or a file stands where a folder of the path would be).
func noSuchFile(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
