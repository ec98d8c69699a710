package filecmd

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

func Drive(e *cmdenv.Env, args []string) error {
	if len(args) == 0 {
		return cmdenv.Usagef("give new, ls, rm, backup, restore or move")
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	switch args[0] {
	case "new":
		if len(args) != 2 {
			return cmdenv.Usagef("drive new NAME")
		}
		if err := api.ValidName("drive", args[1]); err != nil {
			return cmdenv.Invalidf("%v", err)
		}
		d, err := c.CreateDrive(e.Ctx, args[1])
		if err != nil {
			return err
		}
		fmt.Fprintln(e.Stdout, d.Name)
	case "ls":
		fs := cmdenv.Flags("drive ls")
		asJSON := fs.Bool("json", false, "print JSON")
		if err := cmdenv.Parse(fs, args[1:]); err != nil {
			return err
		}
		ds, err := c.Drives(e.Ctx)
		if err != nil {
			return err
		}
		return cmdenv.Listing(e.Stdout, *asJSON, ds, "NAME\tSTATE\tUSED BY\tPROJECT\tSIZE\tLABELS", func(d api.Drive) []string {
			labels := make([]string, 0, len(d.Labels))
			for _, k := range cmdenv.SortedKeys(d.Labels) {
				labels = append(labels, k+"="+d.Labels[k])
			}
			return []string{d.Name, d.State, cmdenv.Dash(strings.Join(d.UsedBy, ",")), cmdenv.Dash(d.Project), cmdenv.Dash(d.Size), cmdenv.Dash(strings.Join(labels, ","))}
		})
	case "rm":
		if len(args) != 2 {
			return cmdenv.Usagef("drive rm NAME")
		}
		if err := c.RemoveDrive(e.Ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "removed drive %s\n", args[1])
	case "backup":
		return driveBackup(e, c, args[1:])
	case "restore":
		return driveRestore(e, c, args[1:])
	case "move":
		fs := cmdenv.Flags("drive move")
		to := fs.String("to", "", "the server to move the drive to ('paddock nodes')")
		with := fs.String("with", "", "the boxes that mount the drive, comma-separated: they move with it")
		if err := cmdenv.Parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 || *to == "" {
			return cmdenv.Usagef("drive move NAME --to NODE [--with BOX,BOX]")
		}
		var boxes []string
		if *with != "" {
			boxes = strings.Split(*with, ",")
		}
		d, err := c.MoveDrive(e.Ctx, fs.Arg(0), *to, boxes...)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "moved drive %s to %s\n", d.Name, d.Node)
	default:
		return cmdenv.Usagef("unknown drive command %q: use new, ls, rm, backup, restore or move", args[0])
	}
	return nil
}

// driveBackup writes a drive's contents as a tar: to FILE (NAME.tar by
// default), which appears only once the whole archive has arrived and
// reads as a complete tar, or to standard output with --to -.
func driveBackup(e *cmdenv.Env, c *client.Client, args []string) error {
	fs := cmdenv.Flags("drive backup")
	to := fs.String("to", "", "file to write (default NAME.tar; - for standard output)")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return cmdenv.Usagef("drive backup NAME [--to FILE]")
	}
	name := fs.Arg(0)
	dest := *to
	if dest == "" {
		dest = name + ".tar"
	}
	rc, err := c.BackupDrive(e.Ctx, name)
	if err != nil {
		return err
	}
	defer rc.Close()
	body, bar := meter(e, rc, "backup", nil)
	if dest == "-" {
		err := copyTar(e.Stdout, body)
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
	fmt.Fprintf(e.Stderr, "drive %s saved to %s\n", name, dest)
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
func driveRestore(e *cmdenv.Env, c *client.Client, args []string) error {
	fs := cmdenv.Flags("drive restore")
	yes := fs.Bool("yes", false, "do not ask; the drive's current contents go")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return cmdenv.Usagef("drive restore NAME FILE (- for standard input)")
	}
	name, file := fs.Arg(0), fs.Arg(1)
	var in io.Reader = e.Stdin
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
		return cmdenv.Usagef("restoring from standard input needs --yes")
	}
	if !*yes {
		if err := e.Confirm(fmt.Sprintf("Everything on drive %q is replaced by %s. Type the drive's name to confirm: ", name, file), name, "--yes"); err != nil {
			return err
		}
	}
	body, bar := meter(e, in, "restore", func() int64 { return size })
	err := c.RestoreDrive(e.Ctx, name, body)
	bar.done(err == nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "drive %s restored from %s\n", name, file)
	return nil
}
