package archive

import (
	"bufio"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// Ignore is what a push of a folder leaves out, in .gitignore's syntax:
// the folder's .paddockignore when it has one; else its .gitignore and
// those of the folders under it (each for its own folder, as git reads
// them); and the extra patterns on top (--exclude), which nothing
// un-ignores. The ignore files themselves are sent, as git keeps them,
// and so is .git (a box's agent commits).
type Ignore struct {
	root string
	// Source names the files the rules came from, for the summary.
	Source   string
	perDir   bool
	patterns []gitignore.Pattern
	m        gitignore.Matcher
	extra    gitignore.Matcher
	// Skipped lists what was left out (folders once, not their files),
	// as slash paths under the root, folders ending in '/'.
	Skipped []string
}

// LoadIgnore reads the rules of the folder root (none with files false:
// the extra patterns alone), with extra patterns.
func LoadIgnore(root string, files bool, extra []string) (*Ignore, error) {
	ig := &Ignore{root: root}
	ps, err := readPatterns(filepath.Join(root, ".paddockignore"), nil)
	switch {
	case !files:
	case err == nil:
		ig.Source, ig.patterns = ".paddockignore", ps
	case os.IsNotExist(err):
		ps, err := readPatterns(filepath.Join(root, ".gitignore"), nil)
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		ig.patterns, ig.perDir = ps, true
		if err == nil {
			ig.Source = ".gitignore"
		}
	default:
		return nil, err
	}
	var xs []gitignore.Pattern
	for _, x := range extra {
		xs = append(xs, gitignore.ParsePattern(x, nil))
	}
	ig.extra = gitignore.NewMatcher(xs)
	if len(extra) > 0 {
		if ig.Source != "" {
			ig.Source += " and "
		}
		ig.Source += "--exclude"
	}
	ig.m = gitignore.NewMatcher(ig.patterns)
	return ig, nil
}

func readPatterns(file string, domain []string) ([]gitignore.Pattern, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps, sc.Err()
}

// Skip says whether the entry rel (a slash path under the root) is left
// out. It is called for a folder before what it holds (as WalkDir does):
// a folder kept has its own .gitignore read then.
func (ig *Ignore) Skip(rel string, dir bool) bool {
	parts := strings.Split(rel, "/")
	if ig.extra.Match(parts, dir) || ig.m.Match(parts, dir) {
		name := rel
		if dir {
			name += "/"
		}
		ig.Skipped = append(ig.Skipped, name)
		return true
	}
	if dir && ig.perDir {
		ps, err := readPatterns(filepath.Join(ig.root, filepath.FromSlash(rel), ".gitignore"), parts)
		if err == nil && len(ps) > 0 {
			ig.patterns = append(ig.patterns, ps...)
			ig.m = gitignore.NewMatcher(ig.patterns)
			if ig.Source == "" {
				ig.Source = path.Join(rel, ".gitignore")
			}
		}
	}
	return false
}

// PackPushed packs local as a push sends it (Pack): a folder without what
// its ignore files (when files) and extra patterns leave out, said by the
// Ignore returned (nil for a single file, or with nothing to read); st
// counts what was written.
func PackPushed(w io.Writer, local string, files bool, extra []string, st *Stats) (*Ignore, error) {
	fi, err := os.Lstat(local)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() || (!files && len(extra) == 0) {
		return nil, PackSome(w, local, nil, st)
	}
	ig, err := LoadIgnore(local, files, extra)
	if err != nil {
		return nil, err
	}
	return ig, PackSome(w, local, ig.Skip, st)
}

// Push is a push's archive being packed as it is read (PackPushed).
type Push struct {
	pr   *io.PipeReader
	done chan struct{}
	ig   *Ignore
	st   Stats
	err  error
}

// StartPush starts packing local as PackPushed does; read the archive
// from the Push, then End it.
func StartPush(local string, files bool, extra []string) *Push {
	pr, pw := io.Pipe()
	p := &Push{pr: pr, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.ig, p.err = PackPushed(pw, local, files, extra, &p.st)
		pw.CloseWithError(p.err)
	}()
	return p
}

func (p *Push) Read(b []byte) (int, error) { return p.pr.Read(b) }

// End stops the reading with why (nil once all was read) and returns what
// was packed, and the packing's error: why itself, or io.ErrClosedPipe,
// when the packing stopped because the reading did.
func (p *Push) End(why error) (*Ignore, Stats, error) {
	p.pr.CloseWithError(why)
	<-p.done
	return p.ig, p.st, p.err
}
