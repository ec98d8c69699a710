package main

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
)

// makeModules writes a tree shaped like a real npm project's node_modules:
// 480 packages, some nested a level down in their parent's own
// node_modules, each with a manifest, a readme, a licence, a bin script and
// sources in nested folders; about 12k files, 85 MB, most under 4 KB and a
// few up to 70 KB; and a .bin folder of relative symlinks to the packages'
// scripts. It is the same tree on every run (a fixed seed).
func makeModules(dir string) (string, int, int64) {
	root := filepath.Join(dir, "node_modules")
	rng := rand.New(rand.NewSource(14))
	buf := make([]byte, 70<<10)
	for i := range buf {
		buf[i] = byte('a' + i%26)
		if i%61 == 60 {
			buf[i] = '\n'
		}
	}
	files, bytes := 0, int64(0)
	write := func(path string, size int) {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, buf[:size], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		files++
		bytes += int64(size)
	}
	size := func() int {
		if rng.Intn(100) < 83 {
			return 100 + rng.Intn(3900)
		}
		return 4096 + rng.Intn(66<<10)
	}
	os.MkdirAll(filepath.Join(root, ".bin"), 0o755)
	for p := 0; p < 480; p++ {
		pkg := filepath.Join(root, fmt.Sprintf("pkg-%03d", p))
		rel := fmt.Sprintf("../pkg-%03d/bin/cli.js", p)
		if p%8 == 7 {
			// A nested copy under the previous package, as npm does for a
			// second version.
			pkg = filepath.Join(root, fmt.Sprintf("pkg-%03d", p-1), "node_modules", fmt.Sprintf("dep-%03d", p))
			rel = ""
		}
		write(filepath.Join(pkg, "package.json"), 300+rng.Intn(1200))
		write(filepath.Join(pkg, "README.md"), size())
		write(filepath.Join(pkg, "LICENSE"), 1070)
		write(filepath.Join(pkg, "bin", "cli.js"), 200+rng.Intn(800))
		for f := 0; f < 21; f++ {
			write(filepath.Join(pkg, "lib", fmt.Sprintf("sub%d", f%3), fmt.Sprintf("m%02d.js", f)), size())
		}
		if rel != "" && p%4 == 0 {
			os.Symlink(rel, filepath.Join(root, ".bin", fmt.Sprintf("cli-%03d", p)))
		}
	}
	return root, files, bytes
}
