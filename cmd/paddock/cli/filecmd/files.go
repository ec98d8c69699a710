// Package filecmd is the paddock CLI's file commands: push, pull and
// drive (drives, their backups and restores).
package filecmd

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/paddock-dev/paddock/appliance/archive"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

func Push(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("push")
	to := fs.String("to", "", "directory in the box that receives LOCAL (created if missing)")
	excludes := fs.StringArray("exclude", nil, "leave out what matches this pattern (.gitignore syntax; repeatable)")
	noIgnore := fs.Bool("no-ignore", false, "send everything: do not read .paddockignore or .gitignore files")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return cmdenv.Usagef("give a box and a local path")
	}
	if *to == "" {
		return cmdenv.Usagef("give --to PATH, a directory in the box (as --to /config/project; /config is the box user's home)")
	}
	if !path.IsAbs(*to) {
		return cmdenv.Invalidf("--to %q must be an absolute path in the box", *to)
	}
	name, err := e.BoxName(fs.Arg(0))
	if err != nil {
		return err
	}
	local := fs.Arg(1)
	if _, err := os.Lstat(local); err != nil {
		return err
	}
	c, err := e.Client()
	if err != nil {
		return err
	}

	push := archive.StartPush(local, !*noIgnore, *excludes)
	body, bar := meter(e, push, "push", func() int64 {
		// The estimate walks what the push sends, with rules of its own.
		var skip archive.Skip
		if sizeIg, err := archive.LoadIgnore(local, !*noIgnore, *excludes); err == nil {
			skip = sizeIg.Skip
		}
		return tarSize(local, skip)
	})
	err = c.Push(e.Ctx, name, *to, body)
	ig, st, perr := push.End(errPushEnded)
	// A pack error is the answer, unless packing stopped because the
	// request had ended (its error says why).
	if perr != nil && (err == nil || !(errors.Is(perr, errPushEnded) || errors.Is(perr, io.ErrClosedPipe))) {
		return fmt.Errorf("%v; nothing was sent", perr)
	}
	bar.done(err == nil)
	if err == nil {
		fmt.Fprintln(e.Stderr, PushSummary(name, *to, st, ig))
	}
	return err
}

// PushSummary is the line a push ends with: what was sent, and what was
// left out and by which rules.
func PushSummary(box, to string, st archive.Stats, ig *archive.Ignore) string {
	line := fmt.Sprintf("pushed %s, %s, to %s:%s", cmdenv.Plural(int64(st.Files), "file", "files"), cmdenv.SizeText(st.Bytes), box, to)
	if ig == nil || len(ig.Skipped) == 0 {
		return line
	}
	shown := ig.Skipped
	more := ""
	if len(shown) > 5 {
		shown, more = shown[:5], fmt.Sprintf(" and %d more", len(ig.Skipped)-5)
	}
	return fmt.Sprintf("%s; left out by %s: %s%s (--no-ignore sends them)", line, ig.Source, strings.Join(shown, ", "), more)
}

var errPushEnded = errors.New("push ended")

func Pull(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("pull")
	to := fs.String("to", "", "local destination (default: the base name of PATH here)")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return cmdenv.Usagef("give a box and a path in it")
	}
	src := fs.Arg(1)
	if !path.IsAbs(src) {
		return cmdenv.Invalidf("path %q must be absolute in the box", src)
	}
	dest := *to
	if dest == "" {
		dest = path.Base(path.Clean(src))
	}
	name, c, err := e.Connect(fs.Arg(0))
	if err != nil {
		return err
	}
	rc, err := c.Pull(e.Ctx, name, src)
	if err != nil {
		return err
	}
	defer rc.Close()
	body, bar := meter(e, rc, "pull", nil)
	// The box is not trusted: spool and check the whole archive before
	// writing a single file (counting its files as they pass).
	var files int
	var size int64
	sp, err := archive.Spool(body, "", 0, func(h *tar.Header) {
		if h.Typeflag == tar.TypeReg {
			files++
			size += h.Size
		}
	})
	if err != nil {
		bar.done(false)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			return fmt.Errorf("the pull was cut off before the whole archive arrived (paddockd may be restarting, or could not read all of it: its log says which): %v; nothing was written", err)
		}
		return fmt.Errorf("refusing what the box sent: %v; nothing was written", err)
	}
	defer sp.Close()
	bar.done(true)
	if err := extractPulled(sp, dest); err != nil {
		return err
	}
	fmt.Fprintf(e.Stderr, "pulled %s, %s, from %s:%s to %s\n", cmdenv.Plural(int64(files), "file", "files"), cmdenv.SizeText(size), name, src, dest)
	return nil
}

// extractPulled writes a pulled archive: a directory's contents into dest,
// or a single file at dest (inside dest when dest is a directory).
func extractPulled(sp *archive.Spooled, dest string) error {
	tr := tar.NewReader(sp)
	first, err := tr.Next()
	if err != nil {
		return fmt.Errorf("the box sent an empty archive")
	}
	if first.Typeflag == tar.TypeReg {
		if _, err := tr.Next(); err == io.EOF {
			target := dest
			if fi, err := os.Stat(dest); err == nil && fi.IsDir() {
				target = filepath.Join(dest, filepath.Base(first.Name))
			}
			if _, err := sp.Seek(0, io.SeekStart); err != nil {
				return err
			}
			return writeSingle(sp, target)
		}
	}
	// The directory's own name is dropped: check the links from where they
	// land, all of them before anything is written.
	if _, err := sp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := archive.CheckStrip(sp, 1); err != nil {
		return fmt.Errorf("refusing what the box sent: %v; nothing was written", err)
	}
	if _, err := sp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return archive.Unpack(sp, dest, 1)
}

func writeSingle(r io.Reader, target string) error {
	tr := tar.NewReader(r)
	h, err := tr.Next()
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(filepath.Dir(target))
	if err != nil {
		return err
	}
	defer root.Close()
	base := filepath.Base(target)
	root.Remove(base)
	f, err := root.OpenFile(base, os.O_CREATE|os.O_EXCL|os.O_WRONLY, os.FileMode(h.Mode)&0o777)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, tr); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// meter passes r through a progress bar on a terminal (stderr); total,
// when given, is asked only then. The bar is nil without a terminal.
func meter(e *cmdenv.Env, r io.Reader, label string, total func() int64) (io.Reader, *progress) {
	if !cmdenv.IsTerminal(e.Stderr) {
		return r, nil
	}
	bar := &progress{w: e.Stderr, label: label}
	if total != nil {
		bar.total = total()
	}
	return io.TeeReader(r, bar), bar
}

// progress draws bytes moved and the rate on a terminal, and a bar when the
// total is known (push knows it from the local tree; pull does not).
type progress struct {
	w     io.Writer
	label string
	total int64
	n     int64
	start time.Time
	last  time.Time
}

func (p *progress) Write(b []byte) (int, error) {
	now := time.Now()
	if p.start.IsZero() {
		p.start = now
	}
	p.n += int64(len(b))
	if now.Sub(p.last) > 100*time.Millisecond {
		p.last = now
		p.draw(now)
	}
	return len(b), nil
}

func (p *progress) draw(now time.Time) {
	secs := now.Sub(p.start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(p.n) / secs / (1 << 20)
	}
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\r%s: %.1f MiB  %.1f MiB/s ", p.label, float64(p.n)/(1<<20), rate)
		return
	}
	const width = 30
	frac := min(float64(p.n)/float64(p.total), 1)
	filled := int(frac * width)
	fmt.Fprintf(p.w, "\r%s: [%s%s] %3.0f%%  %.1f/%.1f MiB  %.1f MiB/s ", p.label,
		strings.Repeat("#", filled), strings.Repeat(" ", width-filled), frac*100,
		float64(p.n)/(1<<20), float64(p.total)/(1<<20), rate)
}

// tarSize is the size of the tar stream archive.Pack makes of local: a
// 512-byte header per entry, file data padded to 512 bytes, and the closing
// two blocks. Names too long for the header add a little the bar ignores.
func tarSize(local string, skip archive.Skip) int64 {
	n := int64(1024)
	filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if rel, err := filepath.Rel(local, p); skip != nil && err == nil && rel != "." && skip(filepath.ToSlash(rel), d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		n += 512
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += (fi.Size() + 511) / 512 * 512
			}
		}
		return nil
	})
	return n
}

// done draws the last state and ends the line; a finished push shows 100%.
func (p *progress) done(finished bool) {
	if p == nil || p.start.IsZero() {
		return
	}
	if finished && p.total > 0 {
		p.n = p.total // the estimate may be off by a header or two
	}
	p.draw(time.Now())
	fmt.Fprintln(p.w)
}
