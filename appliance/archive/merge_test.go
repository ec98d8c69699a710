//go:build linux

package archive

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/testbed/harness"
)

// tree writes files (name -> content; a name ending in / is a folder, a
// content starting with -> is a symlink) under dir.
func tree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		var err error
		if to, ok := strings.CutPrefix(body, "->"); ok {
			err = os.Symlink(to, p)
		} else {
			err = os.WriteFile(p, []byte(body), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	if to, err := os.Readlink(p); err == nil {
		return "->" + to
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMergeIntoAMissingFolderMovesTheStageWhole(t *testing.T) {
	dir := t.TempDir()
	stage := filepath.Join(dir, ".stage")
	tree(t, stage, map[string]string{"a.txt": "a", "sub/b.txt": "b"})
	dst := filepath.Join(dir, "new", "deep")
	if err := Merge(stage, dst); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(dst, "sub", "b.txt")) != "b" || read(t, filepath.Join(dst, "a.txt")) != "a" {
		t.Fatal("merged tree differs")
	}
	if _, err := os.Stat(stage); !os.IsNotExist(err) {
		t.Fatalf("stage left: %v", err)
	}
}

func TestMergeIntoAFolderThatExists(t *testing.T) {
	dir := t.TempDir()
	stage, dst := filepath.Join(dir, "dst", ".stage"), filepath.Join(dir, "dst")
	tree(t, dst, map[string]string{"keep.txt": "k", "a.txt": "old", "sub/old.txt": "o", "link": "->keep.txt"})
	os.Chmod(filepath.Join(dst, "sub"), 0o750)
	tree(t, stage, map[string]string{"a.txt": "new", "sub/b.txt": "b", "link": "->a.txt", "fresh/c.txt": "c"})
	if err := Merge(stage, dst); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"keep.txt": "k", "a.txt": "new", "sub/old.txt": "o", "sub/b.txt": "b", "link": "->a.txt", "fresh/c.txt": "c"}
	for name, body := range want {
		if got := read(t, filepath.Join(dst, name)); got != body {
			t.Fatalf("%s: %q, want %q", name, got, body)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dst, "sub")); fi.Mode().Perm() != 0o750 {
		t.Fatalf("a folder merged into lost its mode: %v", fi.Mode())
	}
	if _, err := os.Stat(stage); !os.IsNotExist(err) {
		t.Fatalf("stage left: %v", err)
	}
}

func TestMergeNeverSwapsAFolderAndAFile(t *testing.T) {
	for _, c := range []struct{ have, staged map[string]string }{
		{map[string]string{"x": "file"}, map[string]string{"x/y": "in a folder"}},
		{map[string]string{"x/y": "in a folder"}, map[string]string{"x": "file"}},
	} {
		dir := t.TempDir()
		stage, dst := filepath.Join(dir, ".stage"), filepath.Join(dir, "dst")
		tree(t, dst, c.have)
		tree(t, stage, c.staged)
		if err := Merge(stage, dst); err == nil || !strings.Contains(err.Error(), "cannot overwrite") {
			t.Fatalf("%v over %v: %v", c.staged, c.have, err)
		}
		for name, body := range c.have {
			if got := read(t, filepath.Join(dst, name)); got != body {
				t.Fatalf("%s became %q", name, got)
			}
		}
	}
}

func TestUnpackWithKeepsTimesAndBounds(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	tree(t, src, map[string]string{"a.txt": strings.Repeat("a", 3000)})
	old := time.Unix(1000000000, 0)
	os.Chtimes(filepath.Join(src, "a.txt"), old, old)
	var b strings.Builder
	if err := Pack(&b, src); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := UnpackWith(strings.NewReader(b.String()), out, Checker{}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(out, "a.txt")); !fi.ModTime().Equal(old) {
		t.Fatalf("unpacked time %v, want %v", fi.ModTime(), old)
	}
	if err := UnpackWith(strings.NewReader(b.String()), filepath.Join(dir, "small"), Checker{Max: 2000}); err == nil {
		t.Fatal("an archive over the bound unpacked")
	}
}

// asUser runs fn on a thread of its own with uid and gid (as the box user's
// thread does); the thread ends after.
func asUser(t *testing.T, uid int, fn func()) {
	t.Helper()
	harness.NeedRoot(t, "a thread of another user is made for the test")
	done := make(chan struct{})
	var run func()
	run = func() {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends
			if unix.Gettid() == unix.Getpid() {
				run() // the first thread must not change: hold it, go elsewhere
				<-done
				runtime.UnlockOSThread()
				return
			}
			defer close(done)
			syscall.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0)
			if _, _, e := syscall.RawSyscall(unix.SYS_SETRESGID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
				t.Error(e)
				return
			}
			if _, _, e := syscall.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
				t.Error(e)
				return
			}
			fn()
		}()
	}
	run()
	<-done
}

func TestMergeBlockedNamesWhatTheUserMayNotWrite(t *testing.T) {
	const uid = 4242
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // the test's own folder
	os.Chmod(dir, 0o755)
	dst := filepath.Join(dir, "dst")
	tree(t, dst, map[string]string{"mine/": "", "roots/x": "x", "sticky/theirs": "t", "sticky/mine": "m"})
	stage := filepath.Join(dst, ".stage")
	tree(t, stage, map[string]string{"mine/a": "a", "top.txt": "t"})
	stickyStage := filepath.Join(dst, ".stage2")
	tree(t, stickyStage, map[string]string{"mine": "m2"})
	for _, p := range []string{dst, filepath.Join(dst, "mine"), stage, filepath.Join(stage, "mine"), stickyStage, filepath.Join(dst, "sticky/mine")} {
		os.Lchown(p, uid, uid)
	}
	os.Chmod(filepath.Join(dst, "sticky"), 0o777|os.ModeSticky)
	rootsStage := filepath.Join(dst, ".stage3")
	tree(t, rootsStage, map[string]string{"roots/y": "y"})
	os.Chown(rootsStage, uid, uid)
	os.Chown(filepath.Join(rootsStage, "roots"), uid, uid)

	got := map[string]string{}
	asUser(t, uid, func() {
		for _, c := range []struct{ src, dst string }{
			{stage, dst},      // all the user's
			{rootsStage, dst}, // roots/ is root's 0755
			{stickyStage, filepath.Join(dst, "sticky")},                    // replaces the user's own in a sticky folder
			{filepath.Join(dst, "roots"), filepath.Join(dir, "elsewhere")}, // a missing target in root's folder
		} {
			b, err := MergeBlocked(c.src, c.dst)
			if err != nil {
				b = "error: " + err.Error()
			}
			got[c.src+" -> "+c.dst] = b
		}
		// And the user's own case merges as the user.
		if err := Merge(stage, dst); err != nil {
			got["merge"] = err.Error()
		}
	})
	want := map[string]string{
		stage + " -> " + dst:                                                   "",
		rootsStage + " -> " + dst:                                              filepath.Join(dst, "roots"),
		stickyStage + " -> " + filepath.Join(dst, "sticky"):                    "",
		filepath.Join(dst, "roots") + " -> " + filepath.Join(dir, "elsewhere"): dir,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("MergeBlocked(%s) = %q, want %q", k, got[k], v)
		}
	}
	if got["merge"] != "" {
		t.Fatalf("the user's merge: %s", got["merge"])
	}
	if read(t, filepath.Join(dst, "mine", "a")) != "a" {
		t.Fatal("the user's merge did not land")
	}

	// Root's file in a sticky folder cannot be replaced by the user.
	stickyRoot := filepath.Join(dst, ".stage4")
	tree(t, stickyRoot, map[string]string{"theirs": "mine now"})
	os.Lchown(stickyRoot, uid, uid)
	os.Lchown(filepath.Join(stickyRoot, "theirs"), uid, uid)
	var b string
	asUser(t, uid, func() { b, _ = MergeBlocked(stickyRoot, filepath.Join(dst, "sticky")) })
	if b != filepath.Join(dst, "sticky") {
		t.Fatalf("replacing root's file in a sticky folder: blocked %q", b)
	}
}

func TestPackTreeNamesAsTheEngineDoes(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "proj")
	tree(t, src, map[string]string{"a.txt": "a", "sub/b.txt": "b", "out": "->/etc/passwd", "empty/": ""})
	names := func(p string) map[string]string {
		var b strings.Builder
		if err := PackTree(&b, p); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		eachEntry(b.String(), func(h *tar.Header, body string) { got[h.Name] = body + h.Linkname })
		return got
	}
	want := map[string]string{"proj/": "", "proj/a.txt": "a", "proj/sub/": "", "proj/sub/b.txt": "b", "proj/out": "/etc/passwd", "proj/empty/": ""}
	if got := names(src); !reflect.DeepEqual(got, want) {
		t.Fatalf("PackTree(dir) = %q, want %q", got, want)
	}
	if got := names(filepath.Join(src, "a.txt")); !reflect.DeepEqual(got, map[string]string{"a.txt": "a"}) {
		t.Fatalf("PackTree(file) = %q", got)
	}
	// Plain headers, as the engine's: the first 512 bytes name the file.
	var b strings.Builder
	PackTree(&b, filepath.Join(src, "a.txt"))
	if !strings.HasPrefix(b.String(), "a.txt\x00") {
		t.Fatalf("PackTree(file) starts %q, not with a plain header naming it", b.String()[:16])
	}
}

// eachEntry calls fn with each entry of the tar stream in s, up to its end
// or the first error.
func eachEntry(s string, fn func(h *tar.Header, body string)) {
	tr := tar.NewReader(strings.NewReader(s))
	for {
		h, err := tr.Next()
		if err != nil {
			return
		}
		body, _ := io.ReadAll(tr)
		fn(h, string(body))
	}
}

// A file with two names in the tree travels once, its second name as a
// hard link to the first (as the engine's copies write it), with every
// packer; unpacked, the two names are one file again.
func TestPackersKeepHardLinks(t *testing.T) {
	src := filepath.Join(t.TempDir(), "proj")
	tree(t, src, map[string]string{"a/big": "contents", "solo": "s"})
	if err := os.Link(filepath.Join(src, "a", "big"), filepath.Join(src, "same")); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		pack  func(io.Writer, string) error
		first string // the name the file is written under first (the walk is in lexical order)
		strip int    // what an unpack of it drops
	}{
		"Pack":         {Pack, "a/big", 0},
		"PackContents": {PackContents, "a/big", 0},
		"PackTree":     {PackTree, "proj/a/big", 1},
	} {
		var b strings.Builder
		if err := c.pack(&b, src); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		links, bodies := 0, 0
		eachEntry(b.String(), func(h *tar.Header, body string) {
			if body == "contents" {
				bodies++
			}
			if h.Typeflag == tar.TypeLink {
				links++
				if h.Linkname != c.first || h.Size != 0 {
					t.Fatalf("%s: %s links to %q (size %d), want %q", name, h.Name, h.Linkname, h.Size, c.first)
				}
			}
		})
		if links != 1 || bodies != 1 {
			t.Fatalf("%s: the contents were written %d times, with %d hard link entries; want once, and one", name, bodies, links)
		}
		dst := t.TempDir()
		if err := Unpack(strings.NewReader(b.String()), dst, c.strip); err != nil {
			t.Fatalf("%s: unpack: %v", name, err)
		}
		x, err1 := os.Stat(filepath.Join(dst, "a", "big"))
		y, err2 := os.Stat(filepath.Join(dst, "same"))
		if err1 != nil || err2 != nil || !os.SameFile(x, y) {
			t.Fatalf("%s: unpacked, a/big and same are not one file (%v, %v)", name, err1, err2)
		}
	}
}

// A file swapped for a pipe (or a symlink) after the walk looked at it is
// not read: no wait for a writer, no following.
func TestPackDoesNotReadWhatWasSwappedIn(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("x"), 0o644)
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, swap := range []func() error{
		func() error { return unix.Mkfifo(p, 0o666) },
		func() error { return os.Symlink(filepath.Join(dir, "other"), p) },
	} {
		os.Remove(p)
		os.WriteFile(filepath.Join(dir, "other"), []byte("other"), 0o644)
		if err := swap(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		pk := packer{tw: tar.NewWriter(io.Discard), names: map[fileKey]string{}}
		go func() { done <- pk.one(p, "f", fi) }()
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("packed what was swapped in")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("packing waited on a pipe swapped in for a file")
		}
	}
}

func TestUnpackOwnedKeepsOwnersAndModes(t *testing.T) {
	harness.NeedRoot(t, "files are given to other users")
	var b strings.Builder
	tw := tar.NewWriter(&b)
	add := func(h tar.Header, body string) {
		h.Size = int64(len(body))
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	add(tar.Header{Name: "ro/", Typeflag: tar.TypeDir, Mode: 0o555, Uid: 1234, Gid: 2345}, "")
	add(tar.Header{Name: "ro/secret", Typeflag: tar.TypeReg, Mode: 0o600, Uid: 1234, Gid: 2345}, "s")
	add(tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777}, "")
	add(tar.Header{Name: "suid", Typeflag: tar.TypeReg, Mode: 0o6755, Uid: 0, Gid: 0}, "x")
	add(tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "ro/secret", Uid: 1234, Gid: 2345}, "")
	tw.Close()
	old := syscall.Umask(0o077) // the unpack's own modes, not the umask's
	defer syscall.Umask(old)
	out := filepath.Join(t.TempDir(), "out")
	if err := UnpackOwned(strings.NewReader(b.String()), out, Checker{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ro": "1234 2345 20000000555", "ro/secret": "1234 2345 600", "tmp": "0 0 20004000777", "suid": "0 0 755", "link": "1234 2345 1000000777"}
	for name, w := range want {
		fi, err := os.Lstat(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if got := strconv.Itoa(int(st.Uid)) + " " + strconv.Itoa(int(st.Gid)) + " " + strconv.FormatUint(uint64(fi.Mode()), 8); got != w {
			t.Errorf("%s: uid gid mode %s, want %s", name, got, w)
		}
	}
}
