package archive

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func ignoreTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func packedNames(t *testing.T, root string, ig *Ignore) ([]string, Stats) {
	t.Helper()
	var buf bytes.Buffer
	var st Stats
	if err := PackSome(&buf, root, ig.Skip, &st); err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(h.Name, "/") {
			names = append(names, h.Name)
		}
	}
	slices.Sort(names)
	return names, st
}

// A push leaves out what the folder's .gitignore files say, each for its
// own folder (negations included), and what --exclude says on top; the
// ignore files and .git are sent. A .paddockignore takes the place of
// them all.
func TestIgnore(t *testing.T) {
	files := map[string]string{
		".gitignore":               "node_modules/\n*.log\n!keep.log\n",
		"node_modules/a/b.js":      "x",
		"app.log":                  "x",
		"keep.log":                 "kept",
		"src/.gitignore":           "gen/\n",
		"src/gen/x.go":             "x",
		"src/main.go":              "package main",
		"dist/out":                 "x",
		".git/HEAD":                "ref",
		"docs/gen/not-src-gen.txt": "kept",
	}
	root := ignoreTree(t, files)
	ig, err := LoadIgnore(root, true, []string{"dist/"})
	if err != nil {
		t.Fatal(err)
	}
	names, st := packedNames(t, root, ig)
	want := []string{".git/HEAD", ".gitignore", "docs/gen/not-src-gen.txt", "keep.log", "src/.gitignore", "src/main.go"}
	if !slices.Equal(names, want) {
		t.Fatalf("packed %v, want %v", names, want)
	}
	if st.Files != len(want) {
		t.Fatalf("counted %d files", st.Files)
	}
	skipped := slices.Sorted(slices.Values(ig.Skipped))
	if !slices.Equal(skipped, []string{"app.log", "dist/", "node_modules/", "src/gen/"}) {
		t.Fatalf("skipped %v", skipped)
	}
	if !strings.Contains(ig.Source, ".gitignore") || !strings.Contains(ig.Source, "--exclude") {
		t.Fatalf("source %q", ig.Source)
	}

	// --exclude is not undone by a later negation.
	root = ignoreTree(t, map[string]string{".gitignore": "!secret.txt\n", "secret.txt": "x", "a": "x"})
	ig, _ = LoadIgnore(root, true, []string{"secret.txt"})
	if names, _ := packedNames(t, root, ig); !slices.Equal(names, []string{".gitignore", "a"}) {
		t.Fatalf("with a negation after --exclude: %v", names)
	}

	// .paddockignore alone.
	files[".paddockignore"] = "src/\n"
	root = ignoreTree(t, files)
	ig, _ = LoadIgnore(root, true, nil)
	names, _ = packedNames(t, root, ig)
	if slices.Contains(names, "src/main.go") || !slices.Contains(names, "app.log") || !slices.Contains(names, "node_modules/a/b.js") {
		t.Fatalf("with a .paddockignore: %v", names)
	}
	// No files read: everything.
	ig, _ = LoadIgnore(root, false, nil)
	if names, _ = packedNames(t, root, ig); len(names) != len(files) {
		t.Fatalf("with no ignore files read: %d of %d", len(names), len(files))
	}
}
