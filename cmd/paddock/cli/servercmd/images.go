package servercmd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/archive"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/appliance/images/imagefmt"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// Images lists the images the user may make boxes from.
func Images(e *cmdenv.Env, args []string) error {
	return imageList(e, "images", args)
}

func imageList(e *cmdenv.Env, name string, args []string) error {
	asJSON, err := cmdenv.JSONFlag(name, args)
	if err != nil {
		return err
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	ims, err := c.Images(e.Ctx)
	if err != nil {
		return err
	}
	if err := cmdenv.Listing(e.Stdout, asJSON, ims, "IMAGE\tID\tSIZE\tBUILT\tSHARED WITH", func(im api.Image) []string {
		name := im.Name
		if !im.Mine {
			name = im.Ref
		}
		return []string{name, imagefmt.Short(im.ID), cmdenv.SizeText(im.Size), im.Built.Local().Format(time.RFC3339), cmdenv.Dash(strings.Join(im.SharedWith, ","))}
	}); err != nil || asJSON {
		return err
	}
	// The server's own images, which every box may use, after users'.
	if who, err := c.Whoami(e.Ctx); err == nil && len(who.Images) > 0 {
		fmt.Fprintf(e.Stdout, "\nThe server's images (any box; the first is the default): %s\n", strings.Join(who.Images, ", "))
	}
	return nil
}

// Image builds, shows, shares and removes users' own images.
func Image(e *cmdenv.Env, args []string) error {
	if len(args) == 0 {
		return cmdenv.Usagef("give build, ls, show, share or rm")
	}
	switch args[0] {
	case "ls":
		return imageList(e, "image ls", args[1:])
	case "build":
		return imageBuild(e, args[1:])
	case "show":
		fs := cmdenv.Flags("image show")
		asJSON := fs.Bool("json", false, "print JSON")
		if err := cmdenv.Parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return cmdenv.Usagef("image show IMAGE [--json]")
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		im, err := c.Image(e.Ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		if *asJSON {
			return cmdenv.PrintJSON(e.Stdout, im)
		}
		printImage(e.Stdout, im)
		return nil
	case "share":
		fs := cmdenv.Flags("image share")
		users := fs.StringSlice("user", nil, "a user who may make boxes from it (repeat, or a comma list)")
		groups := fs.StringSlice("group", nil, "a group whose members may (repeat, or a comma list)")
		everyone := fs.Bool("everyone", false, "every user of the server may (the owner or an admin)")
		if err := cmdenv.Parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return cmdenv.Usagef("image share IMAGE [--user U]... [--group G]... [--everyone] (none of them: shared with nobody)")
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		im, err := c.ShareImage(e.Ctx, fs.Arg(0), api.ImageShares{Users: *users, Groups: *groups, Everyone: *everyone})
		if err != nil {
			return err
		}
		if len(im.SharedWith) == 0 {
			fmt.Fprintf(e.Stdout, "%s is shared with nobody\n", im.Ref)
		} else {
			fmt.Fprintf(e.Stdout, "%s is shared with %s\n", im.Ref, strings.Join(im.SharedWith, ", "))
		}
		return nil
	case "rm":
		if len(args) < 2 {
			return cmdenv.Usagef("image rm IMAGE...")
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		for _, ref := range args[1:] {
			if err := c.RemoveImage(e.Ctx, ref); err != nil {
				return err
			}
			fmt.Fprintf(e.Stdout, "removed image %s\n", ref)
		}
		return nil
	}
	return cmdenv.Usagef("unknown image command %q: use build, ls, show, share or rm", args[0])
}

func printImage(w io.Writer, im api.Image) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "image:\t%s\n", im.Ref)
	fmt.Fprintf(tw, "id:\t%s\n", im.ID)
	fmt.Fprintf(tw, "size:\t%s\n", cmdenv.SizeText(im.Size))
	fmt.Fprintf(tw, "built:\t%s (%.1f s)\n", im.Built.Local().Format(time.RFC3339), im.BuildSeconds)
	fmt.Fprintf(tw, "bases:\t%s\n", strings.Join(im.Bases, ", "))
	fmt.Fprintf(tw, "dockerfile:\t%s\n", im.Dockerfile)
	fmt.Fprintf(tw, "context:\t%s\n", im.ContextDigest)
	if im.Project != "" {
		fmt.Fprintf(tw, "project:\t%s\n", im.Project)
	}
	shared := strings.Join(im.SharedWith, ", ")
	if shared == "" {
		shared = "nobody"
	}
	fmt.Fprintf(tw, "shared with:\t%s\n", shared)
	tw.Flush()
}

// imageBuild sends a build context and follows the build.
func imageBuild(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("image build")
	tag := fs.StringP("tag", "t", "", "the image's NAME[:TAG] (the tag defaults to latest)")
	file := fs.StringP("file", "f", "", "the Dockerfile, in the context (default CONTEXT/Dockerfile)")
	policy := fs.String("policy", "", "the builder box's egress policy: what the build's steps may reach (default allow-all)")
	quiet := fs.BoolP("quiet", "q", false, "print only the image's name when it is built, not the build's output")
	asJSON := fs.Bool("json", false, "print the image as JSON when it is built")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if *tag == "" || fs.NArg() > 1 {
		return cmdenv.Usagef("image build -t NAME[:TAG] [-f DOCKERFILE] [--policy P] [CONTEXT]")
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	ctxDir := "."
	if fs.NArg() == 1 {
		ctxDir = fs.Arg(0)
	}
	if fi, err := os.Stat(ctxDir); err != nil {
		return err
	} else if !fi.IsDir() {
		return cmdenv.Invalidf("the build context %s is not a folder", ctxDir)
	}
	df := "Dockerfile"
	if *file != "" {
		abs, err := filepath.Abs(*file)
		if err != nil {
			return err
		}
		root, err := filepath.Abs(ctxDir)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return cmdenv.Invalidf("the Dockerfile %s is not in the build context %s: give a context that holds it", *file, ctxDir)
		}
		df = filepath.ToSlash(rel)
	}
	if _, err := os.Stat(filepath.Join(ctxDir, filepath.FromSlash(df))); err != nil {
		return cmdenv.Invalidf("no Dockerfile: %v", err)
	}
	name, t, _ := strings.Cut(*tag, ":")
	ignore, err := ReadDockerignore(filepath.Join(ctxDir, ".dockerignore"))
	if err != nil {
		return err
	}
	logf := func(line string) { fmt.Fprintln(e.Stderr, line) }
	if *quiet || *asJSON {
		logf = nil
	}
	im, err := c.BuildImage(e.Ctx, client.ImageBuild{Name: name, Tag: t, Dockerfile: df, Policy: *policy}, PackContext(ctxDir, ignore), logf)
	if err != nil {
		return err
	}
	if *asJSON {
		return cmdenv.PrintJSON(e.Stdout, im)
	}
	if *quiet {
		fmt.Fprintln(e.Stdout, im.Ref)
		return nil
	}
	how := "built"
	if im.Cached {
		how = "unchanged"
	}
	fmt.Fprintf(e.Stdout, "%s %s (%s, %s): make a box from it with 'paddock new --image %s'\n", how, im.Ref, imagefmt.Short(im.ID), cmdenv.SizeText(im.Size), im.Name)
	return nil
}

// PackContext is a build context as it is sent: the folder as a tar,
// less what its .dockerignore leaves out (ignore).
func PackContext(dir string, ignore []string) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		var st archive.Stats
		_, err := archive.PackPushed(pw, dir, false, ignore, &st)
		pw.CloseWithError(err)
	}()
	return pr
}

// ContextDigest is the digest the server gives a context (see
// imagefmt.ContextDigest), read here, and whether it holds dockerfile.
func ContextDigest(dir, dockerfile string) (string, bool, error) {
	ignore, err := ReadDockerignore(filepath.Join(dir, ".dockerignore"))
	if err != nil {
		return "", false, err
	}
	r := PackContext(dir, ignore)
	defer r.Close()
	d, df, err := imagefmt.ContextDigest(r, dockerfile)
	return d, df != nil, err
}

// ReadDockerignore reads a context's .dockerignore as patterns (none when
// there is no file).
func ReadDockerignore(p string) ([]string, error) {
	f, err := os.Open(p)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, l)
	}
	return out, sc.Err()
}
