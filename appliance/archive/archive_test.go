package archive

import (
	"archive/tar"
	"bytes"
	"errors"
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
