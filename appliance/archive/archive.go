// Package archive moves file trees as tar streams between a laptop and a box
// without ever writing outside the target: entries with "..", absolute names,
// or links that point out of the archive's root are refused by Check, Pack
// refuses to send such links, and Unpack writes through an os.Root so that
// not even a symlink already on disk can redirect a write.
//
// A bad archive is refused whole: callers spool the stream, Check it, and
// only then write anything (see Spool); or unpack it into a staging folder
// (UnpackWith checks each entry before writing it) and Merge that into
// place only once all of it passed, as paddockd does for a push.
package archive

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// ErrUnsafe is wrapped by every refusal of an entry.
var ErrUnsafe = errors.New("unsafe archive entry")

// ErrMalformed is wrapped by every failure to read a stream as tar.
var ErrMalformed = errors.New("malformed archive")

type readError struct{ err error }

func (e readError) Error() string   { return "reading archive: " + e.err.Error() }
func (e readError) Unwrap() []error { return []error{ErrMalformed, e.err} }

func malformed(err error) error { return readError{err} }

func unsafe(name, why string) error {
	return fmt.Errorf("%w %q: %s", ErrUnsafe, name, why)
}

// cleanName turns a tar entry name into a clean relative slash path, or
// refuses it. "." (the root itself) is returned as "".
func cleanName(name string) (string, error) {
	if name == "" {
		return "", unsafe(name, "empty name")
	}
	if strings.Contains(name, "\\") && filepath.Separator == '\\' {
		name = strings.ReplaceAll(name, "\\", "/")
	}
	if path.IsAbs(name) || (len(name) >= 2 && name[1] == ':') {
		return "", unsafe(name, "absolute name")
	}
	for _, part := range strings.Split(strings.TrimSuffix(name, "/"), "/") {
		if part == ".." {
			return "", unsafe(name, "name contains ..")
		}
	}
	c := path.Clean(name)
	if c == "." {
		return "", nil
	}
	return c, nil
}

// linkInside reports whether a symlink at entry name with the given target
// resolves, lexically, inside the root.
func linkInside(name, target string) bool {
	if target == "" || path.IsAbs(target) {
		return false
	}
	joined := path.Join(path.Dir(name), target)
	return joined != ".." && !strings.HasPrefix(joined, "../")
}

// Checker validates entries one at a time; the zero value is ready.
type Checker struct {
	// Strip is how many leading path components the entries lose when
	// they are written (as Unpack's strip): links are judged from where
	// they land, not from where the archive names them.
	Strip int
	// Max bounds the bytes the entries hold, all together (0: DefaultMax).
	Max   int64
	total int64
	links map[string]bool // where symlinks land
}

// DefaultMax bounds an archive's contents when nobody says otherwise.
const DefaultMax = 64 << 30

// ErrTooBig is the error of an archive whose contents pass the bound.
var ErrTooBig = errors.New("archive too big")

// Refused reports whether err is an archive's refusal (an unsafe entry,
// not tar, or too big): the client's fault, and nothing written.
func Refused(err error) bool {
	return errors.Is(err, ErrUnsafe) || errors.Is(err, ErrMalformed) || errors.Is(err, ErrTooBig)
}

// Entry checks one header and returns its clean name.
func (c *Checker) Entry(h *tar.Header) (string, error) {
	name, err := cleanName(h.Name)
	if err != nil {
		return "", err
	}
	landed := stripComponents(name, c.Strip)
	if c.links == nil {
		c.links = map[string]bool{}
	}
	// A write through a symlink that the same archive made could land
	// anywhere the link points; refuse paths under an earlier symlink.
	for p := path.Dir(landed); p != "." && p != "/"; p = path.Dir(p) {
		if c.links[p] {
			return "", unsafe(h.Name, "path goes through symlink "+p)
		}
	}
	if landed == "" && c.Strip > 0 {
		return name, nil // not written
	}
	// A sparse entry is small in the archive and as big as it says on
	// disk: a few KB could fill the disk. Its real size is not known until
	// it is written, so it is refused rather than counted.
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return "", unsafe(h.Name, "sparse files are not copied")
		}
	}
	max := c.Max
	if max <= 0 {
		max = DefaultMax
	}
	if c.total += h.Size; h.Size < 0 || c.total > max {
		return "", fmt.Errorf("%w: its files hold more than %d MiB", ErrTooBig, max>>20)
	}
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeDir, tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		if h.Typeflag == tar.TypeChar || h.Typeflag == tar.TypeBlock {
			return "", unsafe(h.Name, "device files are not copied")
		}
	case tar.TypeGNUSparse:
		return "", unsafe(h.Name, "sparse files are not copied")
	case tar.TypeSymlink:
		if !linkInside(landed, h.Linkname) {
			return "", unsafe(h.Name, fmt.Sprintf("symlink to %q points outside the target", h.Linkname))
		}
		c.links[landed] = true
	case tar.TypeLink:
		t, err := cleanName(h.Linkname)
		if err != nil || stripComponents(t, c.Strip) == "" {
			return "", unsafe(h.Name, fmt.Sprintf("hard link to %q points outside the target", h.Linkname))
		}
	case tar.TypeXGlobalHeader, tar.TypeXHeader:
	default:
		return "", unsafe(h.Name, fmt.Sprintf("unsupported entry type %q", h.Typeflag))
	}
	return name, nil
}

// Check reads a whole tar stream and returns the first unsafe entry as an
// error.
func Check(r io.Reader) error { return CheckStrip(r, 0) }

// CheckStrip is Check of an archive that will be unpacked with strip.
func CheckStrip(r io.Reader, strip int) error {
	tr := tar.NewReader(r)
	c := Checker{Strip: strip}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return malformed(err)
		}
		if _, err := c.Entry(h); err != nil {
			return err
		}
	}
}

// Spool copies r into a temporary file in dir, checking every entry as it
// goes, and returns the file rewound to its start. On any error nothing is
// kept. The caller closes and removes the file (see Spooled.Close).
// max bounds the bytes of its entries (0: DefaultMax).
func Spool(r io.Reader, dir string, max int64, rewrite func(*tar.Header)) (*Spooled, error) {
	f, err := os.CreateTemp(dir, "spool-*.tar")
	if err != nil {
		return nil, err
	}
	s := &Spooled{File: f}
	if err := s.fill(r, max, rewrite); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Spooled is a checked archive in a temporary file.
type Spooled struct {
	*os.File
	Size int64
}

func (s *Spooled) fill(r io.Reader, max int64, rewrite func(*tar.Header)) error {
	if err := Filter(s.File, r, max, rewrite); err != nil {
		return err
	}
	n, err := s.File.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	s.Size = n
	_, err = s.File.Seek(0, io.SeekStart)
	return err
}

// Filter copies the tar stream r to w entry by entry, checking each as it
// passes (names made clean, each header given to rewrite): the first
// unsafe entry stops it with an error before anything of that entry is
// written, so a reader of w sees a cut archive. max bounds the bytes of
// the entries (0: DefaultMax).
func Filter(w io.Writer, r io.Reader, max int64, rewrite func(*tar.Header)) error {
	tr := tar.NewReader(r)
	tw := tar.NewWriter(w)
	c := Checker{Max: max}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return malformed(err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name, err := c.Entry(h)
		if err != nil {
			return err
		}
		if name == "" {
			continue
		}
		h.Name = name
		if h.Typeflag == tar.TypeDir {
			h.Name += "/"
		}
		if rewrite != nil {
			rewrite(h)
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, readOnly{tr}); err != nil {
			return err // malformed when reading failed; else writing did
		}
	}
	return tw.Close()
}

// readOnly marks errors from reading the archive, so that they are told
// from errors of writing it on.
type readOnly struct{ r io.Reader }

func (r readOnly) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		err = malformed(err)
	}
	return n, err
}

// Close closes and removes the spool file.
func (s *Spooled) Close() error {
	err := s.File.Close()
	os.Remove(s.File.Name())
	return err
}

// Pack writes the tree at src as a tar stream. A directory's contents are
// packed relative to it; a single file is packed under its base name.
// Symlinks are packed as links, and one that points outside src is an error
// (the receiving side would refuse it anyway). Every packer writes a file
// with more names in the tree (hard links) once: its later names are hard
// link entries to the first, as the engine's copies write them.
func Pack(w io.Writer, src string) error {
	return pack(w, src, false, true, nil, nil)
}

// Skip says whether to leave out the entry rel (a slash path under the
// folder packed); a folder left out is left out whole.
type Skip func(rel string, dir bool) bool

// Stats counts what a pack wrote.
type Stats struct {
	Files int
	Bytes int64
}

// PackSome is Pack that leaves out what skip says (see Ignore), and
// counts what it wrote in st.
func PackSome(w io.Writer, src string, skip Skip, st *Stats) error {
	return pack(w, src, false, true, skip, st)
}

// PackContents writes what the folder src holds, names relative to it, as
// they are: symlinks out of src included (for the reader to judge), and
// sockets, devices and pipes left out.
func PackContents(w io.Writer, src string) error {
	return pack(w, src, false, false, nil, nil)
}

// PackTree writes the tree at src as the engine's copy out of a container
// does: every name starts with src's base name (a single file is just its
// base name), and symlinks go as they are, src itself included: where they
// point is for the receiving side to judge. Sockets, devices and pipes are
// left out.
func PackTree(w io.Writer, src string) error {
	return pack(w, src, true, false, nil, nil)
}

// pack writes src: a file under its base name; a folder's entries under
// its base name (named) or relative to it. judge refuses symlinks out.
// It writes to w in large pieces (a pipe or a socket: fewer hand-offs).
func pack(w io.Writer, src string, named, judge bool, skip Skip, st *Stats) error {
	info, err := os.Lstat(src)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	if st == nil {
		st = &Stats{}
	}
	p := packer{tw: tar.NewWriter(bw), judge: judge, names: map[fileKey]string{}, skip: skip, st: st}
	if !info.IsDir() {
		err = p.one(src, info.Name(), info)
	} else if named {
		err = p.walk(src, filepath.Base(src))
	} else {
		err = p.walk(src, "")
	}
	if err == nil {
		err = p.tw.Close()
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

// packer writes entries to tw; judge refuses a symlink out of the tree.
type packer struct {
	tw    *tar.Writer
	judge bool
	names map[fileKey]string // the first name of each file with more than one
	skip  Skip
	st    *Stats
}

// fileKey is a file's identity on this machine: its device and inode.
type fileKey struct{ dev, ino uint64 }

// walk writes the tree under the folder src, each entry named under
// under (src itself as under/), or relative to src when under is "" (src
// itself left out).
func (pk *packer) walk(src, under string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		name := path.Join(under, filepath.ToSlash(rel))
		if name == "." {
			return nil
		}
		if pk.skip != nil && pk.skip(filepath.ToSlash(rel), d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return pk.one(p, name, fi)
	})
}

// one writes one entry: a regular file whose other name came first as a
// hard link to that name.
func (pk *packer) one(p, name string, fi fs.FileInfo) error {
	tw, judge := pk.tw, pk.judge
	link := ""
	if fi.Mode()&fs.ModeSymlink != 0 {
		l, err := os.Readlink(p)
		if err != nil {
			return err
		}
		link = filepath.ToSlash(l)
		if judge && !linkInside(name, link) {
			return unsafe(name, fmt.Sprintf("symlink to %q points outside %s", l, "the pushed tree"))
		}
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() && link == "" {
		return nil // sockets, devices and pipes are not copied
	}
	h, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	h.Name = name
	if fi.IsDir() {
		h.Name += "/"
	}
	h.Uname, h.Gname = "", ""
	if judge {
		h.Format = tar.FormatPAX
	} else {
		// As the engine writes a container's files: plain USTAR headers
		// (times to the second) unless a name or size needs more, so
		// that simple readers of a pull's tar see each name first.
		h.AccessTime, h.ChangeTime = time.Time{}, time.Time{}
	}
	if key, ok := hardLinked(fi); ok {
		if first, ok := pk.names[key]; ok {
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, first, 0
			return tw.WriteHeader(h)
		}
		pk.names[key] = name
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	// Not through a symlink, nor blocking on a pipe, and only the file
	// that was looked at: a tree that changes under the walk (a box's)
	// could have swapped in something else since.
	f, err := os.OpenFile(p, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil || !now.Mode().IsRegular() || !os.SameFile(fi, now) {
		return fmt.Errorf("%s changed while being read", p)
	}
	n, err := io.Copy(tw, f)
	if err == nil && n != h.Size {
		err = fmt.Errorf("%s changed size while being read", p)
	}
	pk.st.Files++
	pk.st.Bytes += n
	return err
}

// Unpack extracts a checked archive into dir (created if missing), dropping
// the first strip path components of every name. It writes only through an
// os.Root opened on dir, so no entry and no existing symlink can take a
// write outside it.
func Unpack(r io.Reader, dir string, strip int) error {
	return UnpackWith(r, dir, Checker{Strip: strip})
}

// UnpackWith is Unpack with a Checker of the caller's (its Strip and Max).
// Each entry is checked before it is written, so an archive that is
// refused part way has written only entries that passed, all inside dir:
// a caller that must change nothing unpacks into a staging folder.
func UnpackWith(r io.Reader, dir string, c Checker) error {
	return unpack(r, dir, c, false)
}

// UnpackOwned is UnpackWith for a caller that may give files away
// (CAP_CHOWN and CAP_FOWNER): each entry gets the owner its header names,
// numbers as they are, and exactly its mode (the sticky bit too, but
// never set-uid or set-gid), as the engine's own copy into a container
// writes them, so a tree packed and unpacked again keeps who owns what.
func UnpackOwned(r io.Reader, dir string, c Checker) error {
	return unpack(r, dir, c, true)
}

func unpack(r io.Reader, dir string, c Checker, owned bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	u := unpacker{root: root, strip: c.Strip, owned: owned, made: map[string]bool{}, buf: make([]byte, 256<<10)}
	defer u.closeFolders()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return malformed(err)
		}
		name, err := c.Entry(h)
		if err != nil {
			return err
		}
		name = stripComponents(name, c.Strip)
		if name == "" {
			continue
		}
		if err := u.one(tr, h, name); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
}

func stripComponents(name string, n int) string {
	for i := 0; i < n && name != ""; i++ {
		j := strings.IndexByte(name, '/')
		if j < 0 {
			return ""
		}
		name = name[j+1:]
	}
	return name
}

// unpacker writes entries under root. It remembers the folders it made
// (so that a file's folder is made once, not looked up for each file) and
// copies through one buffer.
//
// An os.Root looks up every folder of a name for each operation on it (an
// open and a close each): a file six folders down cost seven opens. Unless
// it gives files away (owned), the unpacker keeps the last folders it
// wrote into open, each as an os.Root of its own opened through root, and
// works on an entry through its folder's: one open a file. A folder kept
// open stays the folder it was when opened, inside the target: if
// something else renames it meanwhile, entries follow it. That is why an
// owned unpack (which runs with the rights to give files away) does not
// keep folders: it looks each name up from the target, every time. An
// unpack that does not own runs with no more rights than whoever could
// rename its folders (a push into a box runs as the box's user, in the
// box), so where the folder went it could write itself.
type unpacker struct {
	root  *os.Root
	strip int
	owned bool // UnpackOwned
	made  map[string]bool
	buf   []byte
	open  []openFolder // most recently used last; at most keptFolders
}

// openFolder is a folder of the target kept open: its slash path under
// the target and its root.
type openFolder struct {
	name string
	root *os.Root
}

// keptFolders bounds the folders an unpacker keeps open. An archive
// written by a walk comes folder by folder, coming back to a folder after
// each of its subfolders: a few kept catch nearly every entry.
const keptFolders = 8

// at gives the root to work on name through and name relative to it.
func (u *unpacker) at(name string) (*os.Root, string, error) {
	dir := path.Dir(name)
	if u.owned || dir == "." {
		return u.root, name, nil
	}
	base := path.Base(name)
	if i := u.find(dir); i >= 0 {
		f := u.open[i]
		copy(u.open[i:], u.open[i+1:])
		u.open[len(u.open)-1] = f
		return f.root, base, nil
	}
	// Through the parent's root when it is kept (one open, not one per
	// folder of the path), from the target when that fails: a symlink
	// inside the target may lead out of the parent.
	var r *os.Root
	if p := u.kept(path.Dir(dir)); p != nil {
		r, _ = p.OpenRoot(path.Base(dir))
	}
	if r == nil {
		var err error
		if r, err = u.root.OpenRoot(dir); err != nil {
			return nil, "", err
		}
	}
	if len(u.open) == keptFolders {
		u.open[0].root.Close()
		u.open = append(u.open[:0], u.open[1:]...)
	}
	u.open = append(u.open, openFolder{dir, r})
	return r, base, nil
}

// find is where the folder dir is in open, or -1.
func (u *unpacker) find(dir string) int {
	for i := len(u.open) - 1; i >= 0; i-- {
		if u.open[i].name == dir {
			return i
		}
	}
	return -1
}

// kept is the folder dir's root if it is kept open ("." is the target).
func (u *unpacker) kept(dir string) *os.Root {
	if dir == "." {
		return u.root
	}
	if i := u.find(dir); i >= 0 {
		return u.open[i].root
	}
	return nil
}

func (u *unpacker) closeFolders() {
	for _, f := range u.open {
		f.root.Close()
	}
	u.open = nil
}

// mkdirAll makes d (and its parents) unless this unpacker made it: in
// its parent's folder kept open when this unpacker made the parent, and
// from the target otherwise (and when something is already there).
func (u *unpacker) mkdirAll(d string) error {
	if d == "." || u.made[d] {
		return nil
	}
	if p := path.Dir(d); !u.owned && (p == "." || u.made[p]) {
		root, base, err := u.at(d)
		if err == nil && root.Mkdir(base, 0o755) == nil {
			u.made[d] = true
			return nil
		}
	}
	if err := u.root.MkdirAll(d, 0o755); err != nil {
		return err
	}
	for p := d; p != "." && !u.made[p]; p = path.Dir(p) {
		u.made[p] = true
	}
	return nil
}

// writeOnly hides a file's ReadFrom, so that copies use the unpacker's
// buffer rather than one of their own per file.
type writeOnly struct{ w io.Writer }

func (w writeOnly) Write(p []byte) (int, error) { return w.w.Write(p) }

func (u *unpacker) one(tr *tar.Reader, h *tar.Header, full string) error {
	name := full
	if err := u.mkdirAll(path.Dir(name)); err != nil {
		return err
	}
	root, name, err := u.at(name)
	if err != nil {
		return err
	}
	mode := fs.FileMode(h.Mode) & fs.ModePerm
	switch h.Typeflag {
	case tar.TypeDir:
		if err := u.mkdirAll(full); err != nil {
			return err
		}
		if u.owned {
			if err := root.Lchown(name, h.Uid, h.Gid); err != nil {
				return err
			}
			return root.Chmod(name, ownedMode(h))
		}
		return root.Chmod(name, mode|0o700)
	case tar.TypeReg, tar.TypeGNUSparse:
		// A new file: what was there (a file or a link: never written
		// through) goes first.
		f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
		if errors.Is(err, fs.ErrExist) {
			root.Remove(name)
			f, err = root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
		}
		if err != nil {
			return err
		}
		if _, err := io.CopyBuffer(writeOnly{f}, readOnly{tr}, u.buf); err != nil {
			f.Close()
			return err
		}
		// As cp -p and the engine's copy do: a build that goes by file
		// times sees the pushed files as old as they are.
		if !h.ModTime.IsZero() {
			if err := setTimes(root, f, name, h.ModTime); err != nil {
				f.Close()
				return err
			}
		}
		if u.owned {
			// The mode after the owner: the file was made under the
			// umask, and a change of owner may clear bits.
			if err := f.Chown(h.Uid, h.Gid); err != nil {
				f.Close()
				return err
			}
			if err := f.Chmod(ownedMode(h)); err != nil {
				f.Close()
				return err
			}
		}
		return f.Close()
	case tar.TypeSymlink:
		root.Remove(name)
		if err := root.Symlink(h.Linkname, name); err != nil || !u.owned {
			return err
		}
		return root.Lchown(name, h.Uid, h.Gid)
	case tar.TypeLink:
		target := stripComponents(path.Clean(h.Linkname), u.strip)
		if target == "" {
			return unsafe(h.Name, "hard link target outside the target")
		}
		root.Remove(name)
		return u.root.Link(target, full)
	case tar.TypeFifo:
		return nil
	}
	return nil
}

// ownedMode is the mode UnpackOwned gives an entry: its permission bits
// and its sticky bit.
func ownedMode(h *tar.Header) fs.FileMode {
	m := fs.FileMode(h.Mode) & fs.ModePerm
	if h.Mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// Merge moves what the folder src holds into the folder dst, and removes
// src. dst is made if missing (with its missing parents); a folder that is
// in both is merged into and keeps its own owner and mode; any other entry
// replaces what dst had under its name, except that a folder and a
// non-folder never replace each other (an error, as cp says). Entries move
// by rename: src and dst must be on one filesystem, and no file is copied.
func Merge(src, dst string) error {
	if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.Rename(src, dst)
	}
	if err := mergeInto(src, dst); err != nil {
		return err
	}
	return os.RemoveAll(src)
}

func mergeInto(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		fi, err := os.Lstat(to)
		switch {
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return err
		case err != nil: // not there: the entry moves whole
		case e.IsDir() && isDir(to):
			if err := mergeInto(from, to); err != nil {
				return err
			}
			continue
		case e.IsDir():
			return fmt.Errorf("cannot overwrite non-directory %s with a directory", to)
		case fi.IsDir():
			return fmt.Errorf("cannot overwrite directory %s with a non-directory", to)
		}
		if err := os.Rename(from, to); err != nil {
			return err
		}
	}
	return nil
}

// isDir reports whether p is a folder, or a symlink to one.
func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
