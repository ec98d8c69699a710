package images

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
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

const cfgHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func imageArchive(t *testing.T, manifest any, extra map[string]string) []byte {
	t.Helper()
	m, _ := json.Marshal(manifest)
	files := map[string]string{"blobs/sha256/" + cfgHex: `{"config":{}}`, "blobs/sha256/layer": "layer", "manifest.json": string(m),
		"repositories": `{"paddock/box":{"latest":"x"}}`, "index.json": `{"manifests":[{"annotations":{"io.containerd.image.name":"paddock/box:latest"}}]}`}
	order := []string{"blobs/sha256/layer", "blobs/sha256/" + cfgHex, "index.json", "manifest.json", "repositories"}
	for k, v := range extra {
		files[k] = v
		order = append(order, k)
	}
	return tarOf(t, files, order...)
}

// A builder's archive loads with no name: whatever names it gives itself
// (one of the server's images here) are gone, and its ID is its config's.
func TestSanitizeTakesNamesOff(t *testing.T) {
	in := imageArchive(t, []map[string]any{{"Config": "blobs/sha256/" + cfgHex, "RepoTags": []string{"paddock/box:latest"}, "Layers": []string{"blobs/sha256/layer"}}}, nil)
	var out bytes.Buffer
	id, err := Sanitize(&out, bytes.NewReader(in), 1<<20)
	if err != nil || id != "sha256:"+cfgHex {
		t.Fatalf("Sanitize: %q %v", id, err)
	}
	tr := tar.NewReader(&out)
	seen := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		seen[h.Name] = string(b)
	}
	if _, ok := seen["repositories"]; ok {
		t.Error("repositories is still there")
	}
	if _, ok := seen["index.json"]; ok {
		t.Error("index.json is still there")
	}
	if strings.Contains(seen["manifest.json"], "paddock/box") || !strings.Contains(seen["manifest.json"], `"RepoTags":null`) {
		t.Errorf("manifest.json: %s", seen["manifest.json"])
	}
	if seen["blobs/sha256/layer"] != "layer" {
		t.Errorf("the layer: %q", seen["blobs/sha256/layer"])
	}
}

func TestSanitizeRefuses(t *testing.T) {
	one := func(cfg string, layers ...string) []map[string]any {
		return []map[string]any{{"Config": cfg, "Layers": layers}}
	}
	for name, c := range map[string]struct {
		in  []byte
		max int64
		err string
	}{
		"two images":      {imageArchive(t, append(one("blobs/sha256/"+cfgHex), one("blobs/sha256/"+cfgHex)...), nil), 1 << 20, "holds 2 images"},
		"missing layer":   {imageArchive(t, one("blobs/sha256/"+cfgHex, "blobs/sha256/nope"), nil), 1 << 20, "layer \"blobs/sha256/nope\" is not in it"},
		"missing config":  {imageArchive(t, one("blobs/sha256/aa"), nil), 1 << 20, "config \"blobs/sha256/aa\" is not in it"},
		"config not hash": {imageArchive(t, one("blobs/sha256/layer"), nil), 1 << 20, "not named by its digest"},
		"too big":         {imageArchive(t, one("blobs/sha256/"+cfgHex), nil), 10, "over its size bound"},
		"escape":          {imageArchive(t, one("blobs/sha256/"+cfgHex), map[string]string{"../x": "x"}), 1 << 20, "out of it"},
		"no manifest":     {tarOf(t, map[string]string{"a": "b"}, "a"), 1 << 20, "no manifest.json"},
	} {
		_, err := Sanitize(io.Discard, bytes.NewReader(c.in), c.max)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", name, err, c.err)
		}
		if name == "too big" && !errors.Is(err, ErrTooBig) {
			t.Errorf("too big: %v is not ErrTooBig", err)
		}
	}
}
