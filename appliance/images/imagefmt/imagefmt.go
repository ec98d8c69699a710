// Package imagefmt is what Paddock knows of users' own box images and
// their builds, apart from any engine: the names an image may have, the bases a
// Dockerfile may start from (its FROM lines and COPY --from), the digest
// of a build's inputs, and the check an image archive passes on its way
// from a builder box's engine into the server's.
//
// A build runs in a builder box (package images, above this one); the server's engine
// only ever loads the finished image, never runs a step of it. The
// archive the builder hands out is a hostile input, and so is the archive
// of a box's snapshots that another server sends in a move: Sanitize and
// SanitizeAll let through images whose IDs are their contents' digests,
// their plain layers and configs, bounded unpacked, with no names (an
// archive could otherwise name its image after one of the server's and
// replace it, or claim an image by an ID it does not hold); the server
// names them itself.
package imagefmt

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/paddock-dev/paddock/appliance/capped"
)

// DefaultTag is the tag of an image built without one.
const DefaultTag = "latest"

// ValidTag checks an image tag as the engine takes it: 1 to 128 letters,
// digits, '_', '.' and '-', not starting with '.' or '-'.
func ValidTag(t string) error {
	if t == "" || len(t) > 128 || t[0] == '.' || t[0] == '-' {
		return fmt.Errorf("invalid image tag %q: use 1-128 letters, digits, '_', '.' and '-', not starting with '.' or '-'", t)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return fmt.Errorf("invalid image tag %q: use 1-128 letters, digits, '_', '.' and '-', not starting with '.' or '-'", t)
		}
	}
	return nil
}

// SplitRef splits NAME[:TAG] or USER/NAME[:TAG] (the tag defaults to
// DefaultTag). user is "" when the reference names none.
func SplitRef(ref string) (user, name, tag string) {
	name, tag = ref, DefaultTag
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		name, tag = ref[:i], ref[i+1:]
	}
	if i := strings.IndexByte(name, '/'); i >= 0 {
		user, name = name[:i], name[i+1:]
	}
	return user, name, tag
}

// Ref is the server's name of user's image name:tag.
func Ref(user, name, tag string) string { return user + "/" + name + ":" + tag }

// Base is an image a Dockerfile builds on: a FROM line's, or a COPY
// --from's that names no earlier stage.
type Base struct {
	Ref  string
	Line int
}

// Bases reads a Dockerfile and returns the images it builds on, in order
// and once each ("scratch", the empty image, is none). Build arguments
// in them are refused: what a base is must be known before the build.
// So are instructions the builder does not run as written (ONBUILD in the
// Dockerfile itself is kept for later builds and not looked into here,
// but an image that carries ONBUILD COPY --from runs it in the build of
// an image FROM it: see the service, which loads only the bases named).
func Bases(dockerfile []byte) ([]Base, error) {
	lines, err := instructions(dockerfile)
	if err != nil {
		return nil, err
	}
	stages := map[string]bool{}
	nstages := 0
	seen := map[string]bool{}
	var out []Base
	add := func(ref string, line int) error {
		if strings.Contains(ref, "$") {
			return fmt.Errorf("Dockerfile:%d: %q: a base image cannot come from a build argument; name it", line, ref)
		}
		if ref == "" {
			return fmt.Errorf("Dockerfile:%d: no image named", line)
		}
		if ref == "scratch" || seen[ref] {
			return nil
		}
		seen[ref] = true
		out = append(out, Base{Ref: ref, Line: line})
		return nil
	}
	for _, in := range lines {
		switch in.cmd {
		case "from":
			args := flagsOff(in.args, nil)
			if len(args) != 1 && !(len(args) == 3 && strings.EqualFold(args[1], "as")) {
				return nil, fmt.Errorf("Dockerfile:%d: FROM takes an image and an optional AS NAME", in.line)
			}
			ref := args[0]
			if !stages[strings.ToLower(ref)] {
				if err := add(ref, in.line); err != nil {
					return nil, err
				}
			}
			if len(args) == 3 {
				stages[strings.ToLower(args[2])] = true
			}
			nstages++
		case "copy", "add":
			var from string
			flagsOff(in.args, func(k, v string) {
				if k == "from" {
					from = v
				}
			})
			if in.cmd == "add" && from != "" {
				return nil, fmt.Errorf("Dockerfile:%d: ADD --from is not a Dockerfile flag", in.line)
			}
			if from == "" || stages[strings.ToLower(from)] || isStageIndex(from, nstages) {
				continue
			}
			if err := add(from, in.line); err != nil {
				return nil, err
			}
		case "run":
			for _, a := range in.args {
				if strings.HasPrefix(a, "--mount") {
					return nil, fmt.Errorf("Dockerfile:%d: RUN --mount is not supported by the builder", in.line)
				}
			}
		}
	}
	if nstages == 0 {
		return nil, errors.New("Dockerfile: no FROM line")
	}
	return out, nil
}

func isStageIndex(s string, n int) bool {
	if s == "" || len(s) > 4 {
		return false
	}
	i := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
		i = i*10 + int(c-'0')
	}
	return i < n
}

// flagsOff drops leading --flag[=value] arguments, giving each to fn.
func flagsOff(args []string, fn func(k, v string)) []string {
	for len(args) > 0 && strings.HasPrefix(args[0], "--") {
		k, v, _ := strings.Cut(args[0][2:], "=")
		if fn != nil {
			fn(strings.ToLower(k), v)
		}
		args = args[1:]
	}
	return args
}

type instruction struct {
	cmd  string
	args []string
	line int
}

// instructions splits a Dockerfile into instructions: comments and blank
// lines dropped, lines ending in the escape character joined. Arguments
// are split on blanks (enough for FROM, COPY and RUN's flags; JSON forms
// begin with '[' and have no flags).
func instructions(df []byte) ([]instruction, error) {
	escape := byte('\\')
	sc := bufio.NewScanner(bytes.NewReader(df))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []instruction
	var cur strings.Builder
	start, n := 0, 0
	directives := true
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		trimmed := strings.TrimSpace(line)
		if directives && strings.HasPrefix(trimmed, "#") {
			k, v, ok := strings.Cut(strings.TrimSpace(trimmed[1:]), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "escape") {
				if v = strings.TrimSpace(v); v == "`" {
					escape = '`'
				}
			}
			continue
		}
		directives = false
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if cur.Len() == 0 {
			start = n
		}
		if len(trimmed) > 0 && trimmed[len(trimmed)-1] == escape {
			cur.WriteString(trimmed[:len(trimmed)-1])
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(trimmed)
		fields := strings.Fields(cur.String())
		cur.Reset()
		if len(fields) == 0 {
			continue
		}
		out = append(out, instruction{cmd: strings.ToLower(fields[0]), args: fields[1:], line: start})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("Dockerfile: %w", err)
	}
	if cur.Len() > 0 {
		fields := strings.Fields(cur.String())
		if len(fields) > 0 {
			out = append(out, instruction{cmd: strings.ToLower(fields[0]), args: fields[1:], line: start})
		}
	}
	return out, nil
}

// ContextDigest reads a build context (a tar stream) and returns the
// digest of what a build sees of it (each entry's name, type, mode, link
// and contents, not its times or owners, in name order) and the contents
// of the entry named dockerfile (nil when there is none).
func ContextDigest(r io.Reader, dockerfile string) (string, []byte, error) {
	tr := tar.NewReader(r)
	type ent struct{ name, sum string }
	var ents []ent
	var df []byte
	dockerfile = path.Clean(dockerfile)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", nil, fmt.Errorf("reading the build context: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		c := sha256.New()
		fmt.Fprintf(c, "%c|%o|%s|", h.Typeflag, h.Mode&0o7777, h.Linkname)
		if name == dockerfile && h.Typeflag == tar.TypeReg {
			if h.Size > 1<<20 {
				return "", nil, fmt.Errorf("the Dockerfile %s is over 1 MiB", dockerfile)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				return "", nil, fmt.Errorf("reading the build context: %w", err)
			}
			df = b
			c.Write(b)
		} else if _, err := io.Copy(c, tr); err != nil {
			return "", nil, fmt.Errorf("reading the build context: %w", err)
		}
		ents = append(ents, ent{name, hex.EncodeToString(c.Sum(nil))})
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].name < ents[j].name })
	d := sha256.New()
	for _, e := range ents {
		fmt.Fprintf(d, "%s\x00%s\n", e.name, e.sum)
	}
	return "sha256:" + hex.EncodeToString(d.Sum(nil)), df, nil
}

// InputsDigest is the digest of everything a build's result depends on
// that Paddock can know: the context's digest (which holds the
// Dockerfile), the Dockerfile's name, and the IDs of the bases as they are
// now. Two builds with the same inputs give the engine's cache the same
// steps: the second is the first's image.
func InputsDigest(contextDigest, dockerfile string, baseIDs []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "v1\n%s\n%s\n", contextDigest, dockerfile)
	for _, id := range baseIDs {
		fmt.Fprintf(h, "%s\n", id)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ErrTooBig is an image archive over its bound.
var ErrTooBig = errors.New("the image is over its size bound")

// Image is one image of an archive that Sanitize let through.
type Image struct {
	// ID is the digest of its config: what the archive's name for the
	// config says, and what its content is.
	ID string
	// Tags are the names the archive gave it. They are not passed on:
	// the engine that loads the archive names nothing from it.
	Tags []string
}

// Sanitize copies an image archive (docker save's, of one image) from r to
// w, as the server's engine loads it, and returns the image's ID
// (SanitizeAll).
func Sanitize(w io.Writer, r io.Reader, max int64) (string, error) {
	ims, err := sanitize(w, r, max, true, nil)
	if err != nil {
		return "", err
	}
	return ims[0].ID, nil
}

// SanitizeAll copies an archive of images (docker save's) from r to w, as
// an engine loads it, and says what images it holds. An archive is a
// hostile input (a builder box's, or a server's that may have been taken
// over), and docker load believes what it says; what passes:
//
//   - no names: manifest.json's RepoTags emptied (they are returned), the
//     old "repositories" file and the OCI index, which can name images
//     too, left out; so loading it tags nothing, not one of the server's
//     images above all;
//   - each image's ID checked against its content: the config's digest is
//     the name the archive gives it, and each layer's digest is the one
//     the config names (its diff ID), so an archive cannot claim an
//     image it does not hold;
//   - layers that are plain tar streams, as docker save writes them: a
//     compressed one, which the engine would inflate, is refused;
//   - bounded to max bytes of entries, and to max bytes of what the layers
//     unpack to (their files' sizes, sparse ones at their full size),
//     stopping as soon as either is past it (ErrTooBig);
//   - entries of the archive only, links only to entries in it.
//
// Anything else is refused. manifest.json goes last, once every file it
// names has been seen and checked: what was written of a refused archive
// is no image the engine keeps.
func SanitizeAll(w io.Writer, r io.Reader, max int64) ([]Image, error) {
	return sanitize(w, r, max, false, nil)
}

// SanitizeHaving is SanitizeAll for an engine that has some layers
// already: a layer's entry may be empty where has says the engine holds
// the chain of layers up to it (its config's diff IDs, the first to that
// one). The engine's load takes such a layer without opening its file,
// and the image is still the one its config (checked) names.
func SanitizeHaving(w io.Writer, r io.Reader, max int64, has func(chain []string) bool) ([]Image, error) {
	return sanitize(w, r, max, false, has)
}

// emptySum is the sha256 of no bytes.
const emptySum = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// metaMax bounds what is kept in memory of an archive's files that are
// not layers (configs and docker save's per-layer json), for the checks.
const metaMax = 16 << 20

// archived is what sanitize saw of one entry.
type archived struct {
	link  string // a link's target, as a name in the archive
	sum   string // the content's sha256, hex
	layer bool   // the content is a whole plain tar stream
	body  []byte // the content, when it is small and no tar
}

func escapes(name string) bool {
	return path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../")
}

func sanitize(w io.Writer, r io.Reader, max int64, one bool, has func(chain []string) bool) ([]Image, error) {
	tr := tar.NewReader(r)
	tw := tar.NewWriter(w)
	var total, unpacked, kept int64
	ents := map[string]*archived{}
	var manifest []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the image archive: %w", err)
		}
		name := path.Clean(h.Name)
		if escapes(name) {
			return nil, fmt.Errorf("the image archive has an entry out of it: %q", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeDir:
		case tar.TypeSymlink:
			// docker save links a layer that two of its images share.
			target := path.Clean(path.Join(path.Dir(name), h.Linkname))
			if path.IsAbs(h.Linkname) || escapes(target) {
				return nil, fmt.Errorf("the image archive has a link out of it: %q -> %q", h.Name, h.Linkname)
			}
			ents[name] = &archived{link: target}
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
			continue
		default:
			return nil, fmt.Errorf("the image archive has an entry of type %q: %q", h.Typeflag, h.Name)
		}
		total += h.Size
		if total > max {
			return nil, ErrTooBig
		}
		switch name {
		case "repositories", "index.json":
			if _, err := io.Copy(io.Discard, tr); err != nil {
				return nil, fmt.Errorf("reading the image archive: %w", err)
			}
			continue
		case "manifest.json":
			if manifest, err = io.ReadAll(io.LimitReader(tr, 1<<20)); err != nil {
				return nil, fmt.Errorf("reading the image archive: %w", err)
			}
			continue // written last, once every file it names has been seen
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeDir {
			continue
		}
		e := &archived{}
		keep := &capped.Buffer{Max: 1 << 20}
		e.sum, e.layer, err = copyEntry(io.MultiWriter(tw, keep), tr, &unpacked, max)
		if err != nil {
			return nil, err
		}
		if !e.layer && !keep.Over {
			if kept += int64(keep.Len()); kept > metaMax {
				return nil, fmt.Errorf("the image archive has over %d MiB of files that are not layers", metaMax>>20)
			}
			e.body = keep.Bytes()
		}
		ents[name] = e
	}
	if manifest == nil {
		return nil, errors.New("the image archive has no manifest.json")
	}
	var m []map[string]any
	if err := json.Unmarshal(manifest, &m); err != nil {
		return nil, fmt.Errorf("the image archive's manifest.json: %w", err)
	}
	if len(m) == 0 || (one && len(m) != 1) {
		return nil, fmt.Errorf("the image archive holds %d images, not one", len(m))
	}
	// resolve follows links to the entry a name stands for.
	resolve := func(name string) *archived {
		name = path.Clean(name)
		for range 8 {
			e := ents[name]
			if e == nil || e.link == "" {
				return e
			}
			name = e.link
		}
		return nil
	}
	out := make([]Image, 0, len(m))
	for _, im := range m {
		cfgName, _ := im["Config"].(string)
		cfg := resolve(cfgName)
		if cfg == nil {
			return nil, fmt.Errorf("the image archive's config %q is not in it", cfgName)
		}
		hexID := strings.TrimSuffix(path.Base(cfgName), ".json")
		if len(hexID) != 64 || strings.Trim(hexID, "0123456789abcdef") != "" {
			return nil, fmt.Errorf("the image archive's config %q is not named by its digest", cfgName)
		}
		if cfg.sum != hexID {
			return nil, fmt.Errorf("the image archive's config %q is not what its name says (its digest is sha256:%s)", cfgName, cfg.sum)
		}
		var c struct {
			RootFS struct {
				DiffIDs []string `json:"diff_ids"`
			} `json:"rootfs"`
		}
		if cfg.body == nil || json.Unmarshal(cfg.body, &c) != nil {
			return nil, fmt.Errorf("the image archive's config %q is not an image's config", cfgName)
		}
		layers, _ := im["Layers"].([]any)
		if len(layers) != len(c.RootFS.DiffIDs) {
			return nil, fmt.Errorf("the image archive's image %s has %d layers, and its config names %d", Short(hexID), len(layers), len(c.RootFS.DiffIDs))
		}
		for i, l := range layers {
			s, _ := l.(string)
			e := resolve(s)
			switch {
			case e == nil:
				return nil, fmt.Errorf("the image archive's layer %q is not in it", s)
			case e.sum == emptySum && has != nil && has(c.RootFS.DiffIDs[:i+1]):
				// The engine has it: its load does not read this file.
			case !e.layer:
				return nil, fmt.Errorf("the image archive's layer %q is not a plain tar stream (docker save writes them so; a compressed layer is not taken)", s)
			case "sha256:"+e.sum != c.RootFS.DiffIDs[i]:
				return nil, fmt.Errorf("the image archive's layer %q is not the one its config names (%s)", s, c.RootFS.DiffIDs[i])
			}
		}
		img := Image{ID: "sha256:" + hexID}
		tags, _ := im["RepoTags"].([]any)
		for _, t := range tags {
			if s, ok := t.(string); ok {
				img.Tags = append(img.Tags, s)
			}
		}
		out = append(out, img)
		im["RepoTags"] = nil
		delete(im, "LayerSources") // foreign layers: fetched from elsewhere
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "manifest.json", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(b); err != nil {
		return nil, err
	}
	return out, tw.Close()
}

// Short is an image's id as people read it: its first 12 hex digits,
// without "sha256:".
func Short(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// copyEntry copies an entry's content from r to w, and says its sha256 and
// whether it is a whole plain tar stream (a layer). What a layer's files
// would take once unpacked is added to *unpacked as it is read; past max,
// the copy stops with ErrTooBig.
func copyEntry(w io.Writer, r io.Reader, unpacked *int64, max int64) (string, bool, error) {
	sum := sha256.New()
	pr, pw := io.Pipe()
	type result struct {
		layer bool
		err   error
	}
	done := make(chan result, 1)
	go func() {
		layer, err := countTar(pr, unpacked, max)
		if err != nil {
			pr.CloseWithError(err) // the copy stops here
		} else {
			io.Copy(io.Discard, pr) // not a tar, or what follows its end
		}
		done <- result{layer, err}
	}()
	_, err := io.Copy(io.MultiWriter(w, sum, pw), r)
	pw.CloseWithError(err)
	res := <-done
	if res.err != nil {
		return "", false, res.err
	}
	if err != nil {
		return "", false, fmt.Errorf("reading the image archive: %w", err)
	}
	return hex.EncodeToString(sum.Sum(nil)), res.layer, nil
}

// countTar reads r as a tar stream and adds what its entries would take
// once unpacked (their headers' sizes: a sparse file's full size) to *n,
// stopping with ErrTooBig once that is past max. It says whether r was a
// whole tar stream.
func countTar(r io.Reader, n *int64, max int64) (bool, error) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, nil
		}
		if *n += h.Size + 512; *n > max {
			return false, ErrTooBig
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return false, nil
		}
	}
}
