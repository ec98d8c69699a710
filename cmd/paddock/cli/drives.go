package cli

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
)

func cmdDrive(e *env, args []string) error {
	if len(args) == 0 {
		return usagef("give new, ls, rm, backup, restore or move")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	switch args[0] {
	case "new":
		if len(args) != 2 {
			return usagef("drive new NAME")
		}
		if err := api.ValidName("drive", args[1]); err != nil {
			return invalidf("%v", err)
		}
		d, err := c.CreateDrive(e.ctx, args[1])
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, d.Name)
	case "ls":
		fs := flags("drive ls")
		asJSON := fs.Bool("json", false, "print JSON")
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		ds, err := c.Drives(e.ctx)
		if err != nil {
			return err
		}
		return listing(e.stdout, *asJSON, ds, "NAME\tSTATE\tUSED BY\tPROJECT\tSIZE\tLABELS", func(d api.Drive) []string {
			labels := make([]string, 0, len(d.Labels))
			for _, k := range sortedKeys(d.Labels) {
				labels = append(labels, k+"="+d.Labels[k])
			}
			return []string{d.Name, d.State, dash(strings.Join(d.UsedBy, ",")), dash(d.Project), dash(d.Size), dash(strings.Join(labels, ","))}
		})
	case "rm":
		if len(args) != 2 {
			return usagef("drive rm NAME")
		}
		if err := c.RemoveDrive(e.ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "removed drive %s\n", args[1])
	case "backup":
		return driveBackup(e, c, args[1:])
	case "restore":
		return driveRestore(e, c, args[1:])
	case "move":
		fs := flags("drive move")
		to := fs.String("to", "", "the server to move the drive to ('paddock nodes')")
		with := fs.String("with", "", "the boxes that mount the drive, comma-separated: they move with it")
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 || *to == "" {
			return usagef("drive move NAME --to NODE [--with BOX,BOX]")
		}
		var boxes []string
		if *with != "" {
			boxes = strings.Split(*with, ",")
		}
		d, err := c.MoveDrive(e.ctx, fs.Arg(0), *to, boxes...)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "moved drive %s to %s\n", d.Name, d.Node)
	default:
		return usagef("unknown drive command %q: use new, ls, rm, backup, restore or move", args[0])
	}
	return nil
}

// driveBackup writes a drive's contents as a tar: to FILE (NAME.tar by
// default), which appears only once the whole archive has arrived and
// reads as a complete tar, or to standard output with --to -.
func driveBackup(e *env, c *client.Client, args []string) error {
	fs := flags("drive backup")
	to := fs.String("to", "", "file to write (default NAME.tar; - for standard output)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("drive backup NAME [--to FILE]")
	}
	name := fs.Arg(0)
	dest := *to
	if dest == "" {
		dest = name + ".tar"
	}
	rc, err := c.BackupDrive(e.ctx, name)
	if err != nil {
		return err
	}
	defer rc.Close()
	body, bar := e.meter(rc, "backup", nil)
	if dest == "-" {
		err := copyTar(e.stdout, body)
		bar.done(err == nil)
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".part-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	err = copyTar(f, body)
	bar.done(err == nil)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backup of drive %q: %w; %s was not written", name, err, dest)
	}
	if err := os.Rename(f.Name(), dest); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "drive %s saved to %s\n", name, dest)
	return nil
}

// copyTar copies a tar stream and fails unless it is whole: the server can
// only cut a stream short once it has begun.
func copyTar(w io.Writer, r io.Reader) error {
	tr := tar.NewReader(io.TeeReader(r, w))
	for {
		_, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("the archive ended early or is damaged: %w", err)
		}
	}
	_, err := io.Copy(w, r) // the padding after the end marker
	return err
}

// driveRestore replaces a drive's contents with an archive's, after asking
// on a terminal (or with --yes).
func driveRestore(e *env, c *client.Client, args []string) error {
	fs := flags("drive restore")
	yes := fs.Bool("yes", false, "do not ask; the drive's current contents go")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("drive restore NAME FILE (- for standard input)")
	}
	name, file := fs.Arg(0), fs.Arg(1)
	var in io.Reader = e.stdin
	var size int64
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
		in = f
	} else if !*yes {
		return usagef("restoring from standard input needs --yes")
	}
	if !*yes {
		if err := e.confirm(fmt.Sprintf("Everything on drive %q is replaced by %s. Type the drive's name to confirm: ", name, file), name, "--yes"); err != nil {
			return err
		}
	}
	body, bar := e.meter(in, "restore", func() int64 { return size })
	err := c.RestoreDrive(e.ctx, name, body)
	bar.done(err == nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "drive %s restored from %s\n", name, file)
	return nil
}
