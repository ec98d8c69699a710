package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// push and pull reach only what is under the root, through no symlink:
// not the user's home by an absolute path or by "..", not through a link
// in the root that points out of it (as the folder itself or on the way);
// folders a pull needs are made inside the root.
func TestLocalPathsStayUnderTheRoot(t *testing.T) {
	base := t.TempDir()
	root, home := filepath.Join(base, "project"), filepath.Join(base, "home")
	for _, d := range []string{filepath.Join(root, "src"), filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("key"), 0o600)
	os.Symlink(home, filepath.Join(root, "h"))
	os.Symlink(filepath.Join(home, ".ssh", "id_ed25519"), filepath.Join(root, "key"))
	s, err := New(nil, "test", root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"src", ".", "", filepath.Join(root, "src")} {
		if got, err := s.Local(p, false); err != nil || !strings.HasPrefix(got, s.root) {
			t.Errorf("%q (inside): %q %v", p, got, err)
		}
	}
	for _, p := range []string{filepath.Join(home, ".ssh"), "../home/.ssh", "/", "h/.ssh", "h", "key", "src/../../home", "~", "~/.ssh"} {
		if got, err := s.Local(p, false); err == nil {
			t.Errorf("%q (outside, or through a link): %q, no error", p, got)
		}
		if got, err := s.Local(p, true); err == nil {
			t.Errorf("%q (outside, or through a link), to write: %q, no error", p, got)
		}
	}
	got, err := s.Local("out/new", true)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(got); err != nil || !fi.IsDir() || filepath.Dir(filepath.Dir(got)) != s.root {
		t.Fatalf("a pull's new folder: %q %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(home, "new")); err == nil {
		t.Fatal("a folder was made outside the root")
	}
}
