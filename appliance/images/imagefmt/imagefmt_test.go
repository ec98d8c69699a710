package imagefmt

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestBases(t *testing.T) {
	for _, c := range []struct {
		df   string
		want []string
		err  string
	}{
		{"FROM paddock/box:1\nRUN true\n", []string{"paddock/box:1"}, ""},
		{"# comment\nFROM --platform=linux/amd64 a:1 AS build\nRUN x\nFROM build\nCOPY --from=build /a /b\nCOPY --from=0 /a /b\nCOPY --from=other:2 /x /y\n", []string{"a:1", "other:2"}, ""},
		{"FROM scratch\nCOPY x /\n", nil, ""},
		{"FROM a:1 \\\n  AS b\nFROM b\n", []string{"a:1"}, ""},
		{"ARG V=1\nFROM a:$V\n", nil, "Dockerfile:2: \"a:$V\": a base image cannot come from a build argument"},
		{"RUN true\n", nil, "no FROM line"},
		{"FROM a b c d\n", nil, "Dockerfile:1: FROM takes an image"},
		{"FROM a\nRUN --mount=type=bind,from=evil,target=/x true\n", nil, "Dockerfile:2: RUN --mount is not supported"},
		{"# escape=`\nFROM a:1 `\n  AS s\nFROM s\n", []string{"a:1"}, ""},
		{"FROM a:1\nFROM a:1\n", []string{"a:1"}, ""},
	} {
		got, err := Bases([]byte(c.df))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want %q", c.df, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.df, err)
			continue
		}
		var refs []string
		for _, b := range got {
			refs = append(refs, b.Ref)
		}
		if strings.Join(refs, ",") != strings.Join(c.want, ",") {
			t.Errorf("%q: bases %v, want %v", c.df, refs, c.want)
		}
	}
}

func TestSplitRefAndTags(t *testing.T) {
	for in, want := range map[string][3]string{
		"tools": {"", "tools", "latest"}, "tools:1": {"", "tools", "1"}, "sam/tools:1.2": {"sam", "tools", "1.2"}, "sam/tools": {"sam", "tools", "latest"},
	} {
		u, n, tg := SplitRef(in)
		if [3]string{u, n, tg} != want {
			t.Errorf("SplitRef(%q) = %v, want %v", in, [3]string{u, n, tg}, want)
		}
	}
	for _, bad := range []string{"", ".x", "-x", "a/b", "a b", strings.Repeat("a", 129)} {
		if ValidTag(bad) == nil {
			t.Errorf("tag %q passed", bad)
		}
	}
}

func tarOf(t *testing.T, files map[string]string, order ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, n := range order {
		body := files[n]
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	return b.Bytes()
}

// The context's digest is of what a build sees: the same files in
// another order or with other times give the same digest; a changed byte
// gives another.
func TestContextDigest(t *testing.T) {
	a := tarOf(t, map[string]string{"Dockerfile": "FROM x\n", "a.txt": "a"}, "Dockerfile", "a.txt")
	b := tarOf(t, map[string]string{"Dockerfile": "FROM x\n", "a.txt": "a"}, "a.txt", "Dockerfile")
	c := tarOf(t, map[string]string{"Dockerfile": "FROM x\n", "a.txt": "b"}, "a.txt", "Dockerfile")
	da, df, err := ContextDigest(bytes.NewReader(a), "Dockerfile")
	if err != nil || string(df) != "FROM x\n" {
		t.Fatalf("%v %q", err, df)
	}
	db, _, _ := ContextDigest(bytes.NewReader(b), "./Dockerfile")
	dc, _, _ := ContextDigest(bytes.NewReader(c), "Dockerfile")
	if da != db || da == dc {
		t.Errorf("digests: %s %s %s", da, db, dc)
	}
	if _, df, _ := ContextDigest(bytes.NewReader(a), "other/Dockerfile"); df != nil {
		t.Errorf("a Dockerfile that is not there: %q", df)
	}
}

// layerTar is a layer: a tar stream of files.
func layerTar(t *testing.T, files map[string]string) []byte {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	return tarOf(t, files, names...)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// testImage is an image as docker save writes it in the OCI layout: its
// config (named by its digest, naming its layers' digests) and layers.
type testImage struct {
	cfgName string
	files   map[string][]byte
	layers  []string
}

func newImage(t *testing.T, layers ...[]byte) testImage {
	t.Helper()
	im := testImage{files: map[string][]byte{}}
	var diffs []string
	for _, l := range layers {
		name := "blobs/sha256/" + sha(l)
		im.files[name] = l
		im.layers = append(im.layers, name)
		diffs = append(diffs, "sha256:"+sha(l))
	}
	cfg, _ := json.Marshal(map[string]any{"config": map[string]any{}, "rootfs": map[string]any{"type": "layers", "diff_ids": diffs}})
	im.cfgName = "blobs/sha256/" + sha(cfg)
	im.files[im.cfgName] = cfg
	return im
}

func (im testImage) id() string { return "sha256:" + strings.TrimPrefix(im.cfgName, "blobs/sha256/") }

func (im testImage) entry(tags ...string) map[string]any {
	return map[string]any{"Config": im.cfgName, "RepoTags": tags, "Layers": im.layers}
}

// archiveOf is an archive of images with manifest m (nil: each image's
// entry, tagged paddock/box:latest), extra files after them.
func archiveOf(t *testing.T, ims []testImage, m any, extra map[string]string) []byte {
	t.Helper()
	if m == nil {
		var es []map[string]any
		for _, im := range ims {
			es = append(es, im.entry("paddock/box:latest"))
		}
		m = es
	}
	mb, _ := json.Marshal(m)
	files := map[string]string{"manifest.json": string(mb), "repositories": `{"paddock/box":{"latest":"x"}}`,
		"index.json": `{"manifests":[{"annotations":{"io.containerd.image.name":"paddock/box:latest"}}]}`}
	var order []string
	for _, im := range ims {
		for n, b := range im.files {
			if _, ok := files[n]; !ok {
				files[n] = string(b)
				order = append(order, n)
			}
		}
	}
	sort.Strings(order)
	order = append(order, "index.json", "manifest.json", "repositories")
	for k, v := range extra {
		files[k] = v
		order = append(order, k)
	}
	return tarOf(t, files, order...)
}

func entries(t *testing.T, r io.Reader) map[string]string {
	t.Helper()
	tr := tar.NewReader(r)
	seen := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return seen
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		seen[h.Name] = string(b)
	}
}

// A builder's archive loads with no name: whatever names it gives itself
// (one of the server's images here) are gone, and its ID is its config's.
func TestSanitizeTakesNamesOff(t *testing.T) {
	layer := layerTar(t, map[string]string{"etc/x": "x"})
	im := newImage(t, layer)
	in := archiveOf(t, []testImage{im}, nil, nil)
	var out bytes.Buffer
	id, err := Sanitize(&out, bytes.NewReader(in), 1<<20)
	if err != nil || id != im.id() {
		t.Fatalf("Sanitize: %q %v", id, err)
	}
	seen := entries(t, &out)
	if _, ok := seen["repositories"]; ok {
		t.Error("repositories is still there")
	}
	if _, ok := seen["index.json"]; ok {
		t.Error("index.json is still there")
	}
	if strings.Contains(seen["manifest.json"], "paddock/box") || !strings.Contains(seen["manifest.json"], `"RepoTags":null`) {
		t.Errorf("manifest.json: %s", seen["manifest.json"])
	}
	if seen[im.layers[0]] != string(layer) {
		t.Errorf("the layer: %q", seen[im.layers[0]])
	}
}

// An archive of several images (a move's snapshots) keeps the layers its
// images share once, linked as docker save links them, and says each
// image's ID and the names it gave it.
func TestSanitizeAll(t *testing.T) {
	base := layerTar(t, map[string]string{"etc/base": "base"})
	a := newImage(t, base, layerTar(t, map[string]string{"config/a": "a"}))
	b := newImage(t, base, layerTar(t, map[string]string{"config/b": "b"}))
	// docker save's legacy layout: b's first layer is a link to a's.
	files := map[string]string{"l1/layer.tar": string(base), "l2/layer.tar": string(a.files[a.layers[1]]), "l3/layer.tar": string(b.files[b.layers[1]]),
		a.cfgName: string(a.files[a.cfgName]), b.cfgName: string(b.files[b.cfgName])}
	m := []map[string]any{
		{"Config": a.cfgName, "RepoTags": []string{"x-snapshot:s1"}, "Layers": []string{"l1/layer.tar", "l2/layer.tar"}},
		{"Config": b.cfgName, "RepoTags": []string{"x-snapshot:s2", "paddock/box:latest"}, "Layers": []string{"l0/layer.tar", "l3/layer.tar"}},
	}
	mb, _ := json.Marshal(m)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "l0/layer.tar", Typeflag: tar.TypeSymlink, Linkname: "../l1/layer.tar"})
	for _, n := range []string{"l1/layer.tar", "l2/layer.tar", "l3/layer.tar", a.cfgName, b.cfgName} {
		tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[n]))})
		tw.Write([]byte(files[n]))
	}
	tw.WriteHeader(&tar.Header{Name: "manifest.json", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(mb))})
	tw.Write(mb)
	tw.Close()
	var out bytes.Buffer
	ims, err := SanitizeAll(&out, bytes.NewReader(buf.Bytes()), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(ims) != 2 || ims[0].ID != a.id() || ims[1].ID != b.id() || !slices.Equal(ims[0].Tags, []string{"x-snapshot:s1"}) || !slices.Equal(ims[1].Tags, []string{"x-snapshot:s2", "paddock/box:latest"}) {
		t.Fatalf("images: %+v", ims)
	}
	if seen := entries(t, &out); strings.Contains(seen["manifest.json"], "snapshot") {
		t.Errorf("manifest.json kept names: %s", seen["manifest.json"])
	}
	if _, err := Sanitize(io.Discard, bytes.NewReader(buf.Bytes()), 1<<20); err == nil || !strings.Contains(err.Error(), "holds 2 images, not one") {
		t.Errorf("Sanitize of two images: %v", err)
	}
}

func gzipped(b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b)
	zw.Close()
	return out.Bytes()
}

// A layer that inflates (a decompression bomb) is refused, whatever its
// compressed size; so is a layer whose files are past the bound once
// unpacked (a sparse file, at its full size), as soon as its header is
// read, though the archive is well under it.
func TestAttackImageBomb(t *testing.T) {
	big := layerTar(t, map[string]string{"zeros": strings.Repeat("\x00", 4<<20)})
	bomb := gzipped(big)
	if len(bomb) > 64<<10 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	im := newImage(t, bomb)
	_, err := Sanitize(io.Discard, bytes.NewReader(archiveOf(t, []testImage{im}, nil, nil)), 1<<20)
	if err == nil || !strings.Contains(err.Error(), "not a plain tar stream") {
		t.Errorf("a gzipped layer of 4 MiB under a 1 MiB bound: %v", err)
	}
	// A sparse file of 256 MiB in 10 KiB (GNU tar --sparse --format=pax).
	sp, err := os.ReadFile("testdata/sparse.tar")
	if err != nil {
		t.Fatal(err)
	}
	for name, layer := range map[string][]byte{"sparse": sp} {
		im := newImage(t, layer)
		// The archive is under the bound; what it unpacks to is not.
		_, err = Sanitize(io.Discard, bytes.NewReader(archiveOf(t, []testImage{im}, nil, nil)), int64(len(layer))+64<<10)
		if !errors.Is(err, ErrTooBig) {
			t.Errorf("a %s layer that unpacks past the bound: %v", name, err)
		}
	}
}

// An archive cannot claim an image by an ID it does not hold: a config
// whose name is another image's ID (one the engine has), or whose layers
// are not those it names, is refused.
func TestAttackImageClaimsAnID(t *testing.T) {
	victim := newImage(t, layerTar(t, map[string]string{"secret": "the victim's"}))
	mine := newImage(t, layerTar(t, map[string]string{"x": "mine"}))
	// My config under the victim's name.
	forged := testImage{cfgName: victim.cfgName, layers: mine.layers, files: map[string][]byte{victim.cfgName: mine.files[mine.cfgName]}}
	for n, b := range mine.files {
		if n != mine.cfgName {
			forged.files[n] = b
		}
	}
	if _, err := Sanitize(io.Discard, bytes.NewReader(archiveOf(t, []testImage{forged}, nil, nil)), 1<<20); err == nil || !strings.Contains(err.Error(), "is not what its name says") {
		t.Errorf("a config named as another image: %v", err)
	}
	// The victim's config, with my layers in place of its own.
	swapped := testImage{cfgName: victim.cfgName, layers: mine.layers, files: map[string][]byte{victim.cfgName: victim.files[victim.cfgName]}}
	for n, b := range mine.files {
		if n != mine.cfgName {
			swapped.files[n] = b
		}
	}
	if _, err := Sanitize(io.Discard, bytes.NewReader(archiveOf(t, []testImage{swapped}, nil, nil)), 1<<20); err == nil || !strings.Contains(err.Error(), "not the one its config names") {
		t.Errorf("another image's config over my layers: %v", err)
	}
	// The victim's config with no layers.
	if _, err := Sanitize(io.Discard, bytes.NewReader(archiveOf(t, []testImage{victim}, []map[string]any{{"Config": victim.cfgName}}, nil)), 1<<20); err == nil || !strings.Contains(err.Error(), "has 0 layers, and its config names 1") {
		t.Errorf("a config without its layers: %v", err)
	}
}

func TestSanitizeRefuses(t *testing.T) {
	im := newImage(t, layerTar(t, map[string]string{"a": "a"}))
	one := func(cfg string, layers ...string) []map[string]any {
		return []map[string]any{{"Config": cfg, "Layers": layers}}
	}
	for name, c := range map[string]struct {
		in  []byte
		max int64
		err string
	}{
		"missing layer":  {archiveOf(t, []testImage{im}, one(im.cfgName, "blobs/sha256/nope"), nil), 1 << 20, "layer \"blobs/sha256/nope\" is not in it"},
		"missing config": {archiveOf(t, []testImage{im}, one("blobs/sha256/aa"), nil), 1 << 20, "config \"blobs/sha256/aa\" is not in it"},
		"config a layer": {archiveOf(t, []testImage{im}, one(im.layers[0]), nil), 1 << 20, "is not an image's config"},
		"config no hash": {archiveOf(t, []testImage{im}, one("blobs/sha256/x"), map[string]string{"blobs/sha256/x": "{}"}), 1 << 20, "not named by its digest"},
		"too big":        {archiveOf(t, []testImage{im}, nil, nil), 10, "over its size bound"},
		"escape":         {archiveOf(t, []testImage{im}, nil, map[string]string{"../x": "x"}), 1 << 20, "out of it"},
		"no manifest":    {tarOf(t, map[string]string{"a": "b"}, "a"), 1 << 20, "no manifest.json"},
		"no images":      {archiveOf(t, []testImage{im}, []map[string]any{}, nil), 1 << 20, "holds 0 images"},
		"not a config":   {archiveOf(t, []testImage{im}, one("blobs/sha256/"+sha([]byte("[]"))), map[string]string{"blobs/sha256/" + sha([]byte("[]")): "[]"}), 1 << 20, "not an image's config"},
	} {
		_, err := Sanitize(io.Discard, bytes.NewReader(c.in), c.max)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", name, err, c.err)
		}
		if name == "too big" && !errors.Is(err, ErrTooBig) {
			t.Errorf("too big: %v is not ErrTooBig", err)
		}
	}
	// A link out of the archive.
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "l/layer.tar", Typeflag: tar.TypeSymlink, Linkname: "../../etc/passwd"})
	tw.Close()
	if _, err := Sanitize(io.Discard, &b, 1<<20); err == nil || !strings.Contains(err.Error(), "link out of it") {
		t.Errorf("a link out: %v", err)
	}
}

// A layer the engine has may come empty, and only where the engine has
// the chain up to it: an empty layer it lacks, or one standing for
// another chain, is refused as any layer that is not its config's.
func TestSanitizeHaving(t *testing.T) {
	base := layerTar(t, map[string]string{"etc/base": "base"})
	top := layerTar(t, map[string]string{"home/top": "top"})
	im := newImage(t, base, top)
	diffs := []string{"sha256:" + sha(base), "sha256:" + sha(top)}
	emptied := func(i int) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		names := []string{"l0/layer.tar", "l1/layer.tar"}
		for j, l := range [][]byte{base, top} {
			if j == i {
				l = nil
			}
			tw.WriteHeader(&tar.Header{Name: names[j], Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(l))})
			tw.Write(l)
		}
		tw.WriteHeader(&tar.Header{Name: im.cfgName, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(im.files[im.cfgName]))})
		tw.Write(im.files[im.cfgName])
		mb, _ := json.Marshal([]map[string]any{{"Config": im.cfgName, "RepoTags": []string{"x-snapshot:s1"}, "Layers": names}})
		tw.WriteHeader(&tar.Header{Name: "manifest.json", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(mb))})
		tw.Write(mb)
		tw.Close()
		return buf.Bytes()
	}
	hasBase := func(chain []string) bool { return slices.Equal(chain, diffs[:1]) }
	ims, err := SanitizeHaving(io.Discard, bytes.NewReader(emptied(0)), 1<<20, hasBase)
	if err != nil || len(ims) != 1 || ims[0].ID != im.id() {
		t.Fatalf("an archive without the layer the engine has: %+v %v", ims, err)
	}
	if _, err := SanitizeHaving(io.Discard, bytes.NewReader(emptied(1)), 1<<20, hasBase); err == nil || !strings.Contains(err.Error(), "not the one its config names") {
		t.Errorf("an empty layer the engine lacks: %v", err)
	}
	if _, err := SanitizeHaving(io.Discard, bytes.NewReader(emptied(0)), 1<<20, func([]string) bool { return false }); err == nil {
		t.Error("an empty layer taken with the engine having none")
	}
	if _, err := SanitizeAll(io.Discard, bytes.NewReader(emptied(0)), 1<<20); err == nil {
		t.Error("SanitizeAll took an empty layer")
	}
}
