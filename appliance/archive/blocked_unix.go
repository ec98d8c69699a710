//go:build unix

package archive

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// MergeBlocked names a folder that Merge(src, dst) would write in and the
// calling thread's user may not (so that a caller can merge some other way before
// anything moved): a folder of dst that src's entries go into and whose
// write permission the user lacks, or a sticky one where an entry would
// replace another user's. "" when none.
func MergeBlocked(src, dst string) (string, error) {
	if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
		p := filepath.Dir(dst)
		for !exists(p) {
			p = filepath.Dir(p)
		}
		return blockedDir(p), nil
	}
	if b := blockedDir(dst); b != "" {
		return b, nil
	}
	sticky := false
	if fi, err := os.Stat(dst); err == nil {
		sticky = fi.Mode()&fs.ModeSticky != 0
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		fi, err := os.Lstat(to)
		if err != nil {
			continue // moves whole, or Merge says why not
		}
		if sticky && !ownedByMe(fi) {
			return dst, nil
		}
		if e.IsDir() && isDir(to) {
			if b, err := MergeBlocked(from, to); b != "" || err != nil {
				return b, err
			}
		}
	}
	return "", nil
}

// openFlags open a file to be packed: not through a final symlink, and
// without waiting for a writer should it have become a pipe.
const openFlags = unix.O_NOFOLLOW | unix.O_NONBLOCK

// hardLinked gives the identity of a regular file that has more than one
// name, so that pack writes its later names as links to its first.
func hardLinked(fi fs.FileInfo) (fileKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() || st.Nlink < 2 {
		return fileKey{}, false
	}
	return fileKey{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// blockedDir is p when the calling thread's user may not make or remove
// entries in it ("" when it may).
func blockedDir(p string) string {
	if unix.Access(p, unix.W_OK|unix.X_OK) != nil {
		return p
	}
	return ""
}

// ownedByMe reports whether the calling thread's user owns fi (the thread's
// own: ids are per thread where a thread took a box user's).
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == unix.Geteuid()
}

// Unreadable names the first file or folder under src (src included) that
// the calling thread's user may not read ("" when it may read all): a
// folder needs read and search, a file read; a symlink is read as itself.
func Unreadable(src string) (string, error) {
	var bad string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrPermission) {
			bad = p
			return filepath.SkipAll
		}
		if err != nil {
			return err
		}
		mode := uint32(0)
		switch {
		case d.IsDir():
			mode = unix.R_OK | unix.X_OK
		case d.Type().IsRegular():
			mode = unix.R_OK
		}
		if mode != 0 && unix.Access(p, mode) != nil {
			bad = p
			return filepath.SkipAll
		}
		return nil
	})
	return bad, err
}
