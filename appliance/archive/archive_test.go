package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

type entry struct {
	name, link string
	typ        byte
	body       string
}

func mk(entries ...entry) *bytes.Buffer {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		tw.WriteHeader(h)
		tw.Write([]byte(e.body))
	}
	tw.Close()
	return &b
}

func TestCheck(t *testing.T) {
	bad := map[string][]entry{
		"dotdot":          {{name: "../x", body: "x"}},
		"dotdot inside":   {{name: "a/../../x", body: "x"}},
		"absolute":        {{name: "/etc/passwd", body: "x"}},
		"symlink abs":     {{name: "l", link: "/etc", typ: tar.TypeSymlink}},
		"symlink up":      {{name: "a/l", link: "../../etc", typ: tar.TypeSymlink}},
		"hardlink out":    {{name: "h", link: "../x", typ: tar.TypeLink}},
		"through symlink": {{name: "l", link: "d", typ: tar.TypeSymlink}, {name: "l/x", body: "x"}},
		"char device":     {{name: "dev", typ: tar.TypeChar}},
		"block device":    {{name: "blk", typ: tar.TypeBlock}},
	}
	for name, es := range bad {
		if err := Check(mk(es...)); !errors.Is(err, ErrUnsafe) {
			t.Errorf("%s: Check = %v, want ErrUnsafe", name, err)
		}
	}
	good := []entry{
		{name: "./", typ: tar.TypeDir},
		{name: "a/", typ: tar.TypeDir},
		{name: "a/b.txt", body: "b"},
		{name: "a/l", link: "b.txt", typ: tar.TypeSymlink},
		{name: "up", link: "a/../a/b.txt", typ: tar.TypeSymlink},
		{name: "h", link: "a/b.txt", typ: tar.TypeLink},
	}
	if err := Check(mk(good...)); err != nil {
		t.Errorf("good archive refused: %v", err)
	}
}

func TestSpoolRefusesWholeAndRewrites(t *testing.T) {
	dir := t.TempDir()
	if _, err := Spool(mk(entry{name: "ok", body: "1"}, entry{name: "../no", body: "2"}), dir, 0, nil); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("Spool = %v, want ErrUnsafe", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("spool left %d files behind", len(left))
	}
	sp, err := Spool(mk(entry{name: "./a/b", body: "hello"}), dir, 0, func(h *tar.Header) { h.Uid = 1000 })
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	tr := tar.NewReader(sp)
	h, err := tr.Next()
	if err != nil || h.Name != "a/b" || h.Uid != 1000 {
		t.Fatalf("spooled header %+v, %v", h, err)
	}
}

func TestUnpackDoesNotFollowExistingSymlinks(t *testing.T) {
	outside := t.TempDir()
	dest := t.TempDir()
	// The destination already has a link pointing out (made by someone else).
	if err := os.Symlink(outside, filepath.Join(dest, "evil")); err != nil {
		t.Fatal(err)
	}
	err := Unpack(mk(entry{name: "evil/pwned.txt", body: "x"}), dest, 0)
	if err == nil {
		t.Fatal("write through an existing symlink succeeded")
	}
	if _, err := os.Stat(filepath.Join(outside, "pwned.txt")); err == nil {
		t.Fatal("a file was written outside the target")
	}
	// Replacing a file that is a symlink replaces the link, not its target.
	target := filepath.Join(outside, "keep.txt")
	os.WriteFile(target, []byte("original"), 0o644)
	os.Symlink(target, filepath.Join(dest, "f.txt"))
	if err := Unpack(mk(entry{name: "f.txt", body: "new"}), dest, 0); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "original" {
		t.Fatalf("symlink target overwritten: %q", b)
	}
}

func TestPackUnpackRoundTrip(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "d", "e"), 0o755)
	os.WriteFile(filepath.Join(src, "d", "e", "f.txt"), []byte("deep"), 0o600)
	os.WriteFile(filepath.Join(src, "top.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("d/e/f.txt", filepath.Join(src, "link"))
	var b bytes.Buffer
	if err := Pack(&b, src); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "out")
	if err := Unpack(&b, dest, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dest, "link")); string(got) != "deep" {
		t.Fatalf("through link: %q", got)
	}
	if fi, _ := os.Stat(filepath.Join(dest, "top.sh")); fi == nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode not kept: %v", fi)
	}
}

func TestPackRefusesEscapingSymlink(t *testing.T) {
	src := t.TempDir()
	os.Symlink("../../etc", filepath.Join(src, "escape"))
	err := Pack(&bytes.Buffer{}, src)
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "points outside") {
		t.Fatalf("Pack = %v", err)
	}
}

func TestStripComponents(t *testing.T) {
	for in, want := range map[string]string{"a/b/c": "b/c", "a": "", "a/b": "b"} {
		if got := stripComponents(in, 1); got != want {
			t.Errorf("strip(%q) = %q, want %q", in, got, want)
		}
	}
}

// A link is judged from where it lands once the leading components are
// stripped: project/evil -> ../.ssh is inside the archive, but written as
// evil in the destination it would point at the destination's parent.
func TestLinksAreCheckedWhereTheyLand(t *testing.T) {
	arch := func() *bytes.Buffer {
		return mk(entry{name: "project/", typ: tar.TypeDir}, entry{name: "project/a.txt", body: "a"},
			entry{name: "project/evil", link: "../.ssh", typ: tar.TypeSymlink})
	}
	if err := CheckStrip(arch(), 0); err != nil {
		t.Fatalf("unstripped, the link is inside: %v", err)
	}
	if err := CheckStrip(arch(), 1); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("stripped, the link points out: %v", err)
	}
	dest := filepath.Join(t.TempDir(), "out")
	if err := Unpack(arch(), dest, 1); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("Unpack with strip: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dest, "evil")); err == nil {
		t.Fatal("the escaping link was written")
	}
	hard := mk(entry{name: "project/", typ: tar.TypeDir}, entry{name: "project/h", link: "project", typ: tar.TypeLink})
	if err := CheckStrip(hard, 1); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("a hard link to the stripped root: %v", err)
	}
	ok := mk(entry{name: "project/", typ: tar.TypeDir}, entry{name: "project/a.txt", body: "a"},
		entry{name: "project/good", link: "a.txt", typ: tar.TypeSymlink})
	if err := Unpack(ok, dest, 1); err != nil {
		t.Fatalf("a link inside: %v", err)
	}
}

// A sparse entry (a few bytes in the archive, gigabytes on disk) is
// refused, in both of its forms; an archive past the bound is refused with
// the bound named, and the spool leaves nothing behind.
func TestSparseAndSizeBounds(t *testing.T) {
	// Sparse archives as GNU tar makes them: 10 KB for a 2 GiB file.
	src := t.TempDir()
	if err := os.Truncate(filepath.Join(src, "big"), 0); err != nil {
		f, _ := os.Create(filepath.Join(src, "big"))
		f.Close()
	}
	os.Truncate(filepath.Join(src, "big"), 2<<30)
	for _, format := range []string{"pax", "gnu"} {
		out := filepath.Join(src, format+".tar")
		if b, err := exec.Command("tar", "--sparse", "--format="+format, "-C", src, "-cf", out, "big").CombinedOutput(); err != nil {
			t.Fatalf("tar: %v %s", err, b)
		}
		f, _ := os.Open(out)
		err := Check(f)
		f.Close()
		if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "sparse") {
			t.Errorf("a %s sparse entry: %v", format, err)
		}
	}
	dir := t.TempDir()
	big := mk(entry{name: "a", body: strings.Repeat("x", 600<<10)}, entry{name: "b", body: strings.Repeat("y", 600<<10)})
	if _, err := Spool(big, dir, 1<<20, nil); !errors.Is(err, ErrTooBig) || !strings.Contains(err.Error(), "more than 1 MiB") {
		t.Errorf("1.2 MiB past a bound of 1 MiB: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("a refused spool left %d files", len(left))
	}
	if sp, err := Spool(mk(entry{name: "a", body: "small"}), dir, 1<<20, nil); err != nil {
		t.Errorf("within the bound: %v", err)
	} else {
		sp.Close()
	}
}

// pausing reads r and calls hook once, just before anything at or past
// offset at is read: a tar reader reads the next header only when its
// caller asks for the next entry, so with at the offset of an entry's
// header, hook runs after the entries before it were written.
type pausing struct {
	r    *bytes.Reader
	at   int64
	hook func()
}

func (p *pausing) Read(b []byte) (int, error) {
	pos := p.r.Size() - int64(p.r.Len())
	if p.hook != nil && pos >= p.at {
		p.hook()
		p.hook = nil
	}
	if p.hook != nil && pos+int64(len(b)) > p.at {
		b = b[:p.at-pos]
	}
	return p.r.Read(b)
}

// entryOffset is where the header of the entry named name starts in the
// archive b.
func entryOffset(t *testing.T, b []byte, name string) int64 {
	t.Helper()
	for off := 0; off+512 <= len(b); off += 512 {
		h, err := tar.NewReader(bytes.NewReader(b[off : off+512])).Next()
		if err == nil && h.Name == name {
			return int64(off)
		}
	}
	t.Fatalf("no entry %s", name)
	return 0
}

// TestUnpackFolderSwappedDuringTheUnpack: a folder the unpack is writing
// into is swapped, between two of its entries, for a symlink out of the
// target (what a box could do to a push's stage as it is written). No
// later entry lands outside, whether the unpack keeps its folders open or
// (owned) looks each name up from the target, and whether the folder is
// still kept open at the swap or was let go (entries in other folders
// came between) and is opened again.
func TestUnpackFolderSwappedDuringTheUnpack(t *testing.T) {
	for _, c := range []struct{ owned, evict bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		owned := c.owned
		outside, dest := t.TempDir(), t.TempDir()
		es := []entry{{name: "p/q/a", body: "a"}}
		if c.evict {
			for i := 0; i <= keptFolders; i++ {
				es = append(es, entry{name: fmt.Sprintf("o%d/f", i), body: "o"})
			}
		}
		es = append(es, entry{name: "p/q/b", body: "b"}, entry{name: "p/q/r/c", body: "c"})
		b := mk(es...).Bytes()
		r := &pausing{r: bytes.NewReader(b), at: entryOffset(t, b, "p/q/b"), hook: func() {
			if err := os.Rename(filepath.Join(dest, "p", "q"), filepath.Join(dest, "moved")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(dest, "p", "q")); err != nil {
				t.Fatal(err)
			}
		}}
		unpack := UnpackWith
		if owned {
			unpack = UnpackOwned
		}
		err := unpack(r, dest, Checker{})
		if r.hook != nil {
			t.Fatalf("owned %v: the unpack ended before the swap: %v", owned, err)
		}
		if left, _ := os.ReadDir(outside); len(left) > 0 {
			t.Fatalf("%+v: the unpack wrote %s outside its target through a folder swapped for a symlink (err %v)", c, left[0].Name(), err)
		}
		if !owned && !c.evict {
			// The folder kept open is the one moved: the entries follow it.
			if got, _ := os.ReadFile(filepath.Join(dest, "moved", "b")); string(got) != "b" {
				t.Fatalf("the entry after the swap is not in the folder moved: %q", got)
			}
		}
	}
}

// TestUnpackOwnedDoesNotFollowAFolderMovedOut: an owned unpack (which may
// give files away) looks every name up from its target: a folder moved
// out of the target between two of its entries is not written into
// again.
func TestUnpackOwnedDoesNotFollowAFolderMovedOut(t *testing.T) {
	base := t.TempDir()
	dest, outside := filepath.Join(base, "dest"), filepath.Join(base, "outside")
	os.Mkdir(dest, 0o755)
	os.Mkdir(outside, 0o755)
	b := mk(entry{name: "p/q/a", body: "a"}, entry{name: "p/q/b", body: "b"}).Bytes()
	r := &pausing{r: bytes.NewReader(b), at: entryOffset(t, b, "p/q/b"), hook: func() {
		if err := os.Rename(filepath.Join(dest, "p", "q"), filepath.Join(outside, "q")); err != nil {
			t.Fatal(err)
		}
	}}
	UnpackOwned(r, dest, Checker{})
	if r.hook != nil {
		t.Fatal("the unpack ended before the move")
	}
	if _, err := os.Lstat(filepath.Join(outside, "q", "b")); err == nil {
		t.Fatal("an owned unpack wrote into a folder moved out of its target")
	}
}

// TestUnpackKeepsFoldersRight: an archive that comes back to folders
// after their subfolders, with more folders than the unpack keeps open,
// and an entry that replaces an empty folder with a file, lands as the
// same archive unpacked by an owned unpack (which keeps none open).
func TestUnpackKeepsFoldersRight(t *testing.T) {
	var es []entry
	for i := 0; i < 3*keptFolders; i++ {
		d := fmt.Sprintf("d%02d", i%(2*keptFolders))
		es = append(es, entry{name: d + "/sub/deeper/f", body: fmt.Sprint(i)}, entry{name: d + "/f", body: fmt.Sprint(i)})
	}
	es = append(es, entry{name: "e/", typ: tar.TypeDir}, entry{name: "e/empty/", typ: tar.TypeDir}, entry{name: "e/x", body: "x"},
		entry{name: "e/empty", body: "now a file"}, entry{name: "e/y", body: "y"})
	b := mk(es...).Bytes()
	kept, looked := t.TempDir(), t.TempDir()
	if err := UnpackWith(bytes.NewReader(b), kept, Checker{}); err != nil {
		t.Fatal(err)
	}
	if err := UnpackOwned(bytes.NewReader(b), looked, Checker{}); err != nil {
		t.Fatal(err)
	}
	list := func(dir string) string {
		var s strings.Builder
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			rel, _ := filepath.Rel(dir, p)
			body, _ := os.ReadFile(p)
			fmt.Fprintf(&s, "%s %v %q\n", rel, d.IsDir(), body)
			return nil
		})
		return s.String()
	}
	if a, b := list(kept), list(looked); a != b {
		t.Fatalf("kept folders open:\n%s\nlooked each name up:\n%s", a, b)
	}
	if got, _ := os.ReadFile(filepath.Join(kept, "e", "empty")); string(got) != "now a file" {
		t.Fatalf("e/empty: %q", got)
	}
}
