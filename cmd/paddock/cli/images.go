package cli

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
)

// cmdImages lists the images the user may make boxes from.
func cmdImages(e *env, args []string) error {
	return imageList(e, "images", args)
}

func imageList(e *env, name string, args []string) error {
	asJSON, err := jsonFlag(name, args)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	ims, err := c.Images(e.ctx)
	if err != nil {
		return err
	}
	if err := listing(e.stdout, asJSON, ims, "IMAGE\tID\tSIZE\tBUILT\tSHARED WITH", func(im api.Image) []string {
		name := im.Name
		if !im.Mine {
			name = im.Ref
		}
		return []string{name, imagefmt.Short(im.ID), sizeText(im.Size), im.Built.Local().Format(time.RFC3339), dash(strings.Join(im.SharedWith, ","))}
	}); err != nil || asJSON {
		return err
	}
	// The server's own images, which every box may use, after users'.
	if who, err := c.Whoami(e.ctx); err == nil && len(who.Images) > 0 {
		fmt.Fprintf(e.stdout, "\nThe server's images (any box; the first is the default): %s\n", strings.Join(who.Images, ", "))
	}
	return nil
}

// cmdImage builds, shows, shares and removes users' own images.
func cmdImage(e *env, args []string) error {
	if len(args) == 0 {
		return usagef("give build, ls, show, share or rm")
	}
	switch args[0] {
	case "ls":
		return imageList(e, "image ls", args[1:])
	case "build":
		return imageBuild(e, args[1:])
	case "show":
		fs := flags("image show")
		asJSON := fs.Bool("json", false, "print JSON")
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usagef("image show IMAGE [--json]")
		}
		c, err := e.client()
		if err != nil {
			return err
		}
		im, err := c.Image(e.ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.stdout, im)
		}
		printImage(e.stdout, im)
		return nil
	case "share":
		fs := flags("image share")
		users := fs.StringSlice("user", nil, "a user who may make boxes from it (repeat, or a comma list)")
		groups := fs.StringSlice("group", nil, "a group whose members may (repeat, or a comma list)")
		everyone := fs.Bool("everyone", false, "every user of the server may (the owner or an admin)")
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usagef("image share IMAGE [--user U]... [--group G]... [--everyone] (none of them: shared with nobody)")
		}
		c, err := e.client()
		if err != nil {
			return err
		}
		im, err := c.ShareImage(e.ctx, fs.Arg(0), api.ImageShares{Users: *users, Groups: *groups, Everyone: *everyone})
		if err != nil {
			return err
		}
		if len(im.SharedWith) == 0 {
			fmt.Fprintf(e.stdout, "%s is shared with nobody\n", im.Ref)
		} else {
			fmt.Fprintf(e.stdout, "%s is shared with %s\n", im.Ref, strings.Join(im.SharedWith, ", "))
		}
		return nil
	case "rm":
		if len(args) < 2 {
			return usagef("image rm IMAGE...")
		}
		c, err := e.client()
		if err != nil {
			return err
		}
		for _, ref := range args[1:] {
			if err := c.RemoveImage(e.ctx, ref); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "removed image %s\n", ref)
		}
		return nil
	}
	return usagef("unknown image command %q: use build, ls, show, share or rm", args[0])
}

func printImage(w io.Writer, im api.Image) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "image:\t%s\n", im.Ref)
	fmt.Fprintf(tw, "id:\t%s\n", im.ID)
	fmt.Fprintf(tw, "size:\t%s\n", sizeText(im.Size))
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
func imageBuild(e *env, args []string) error {
	fs := flags("image build")
	tag := fs.StringP("tag", "t", "", "the image's NAME[:TAG] (the tag defaults to latest)")
	file := fs.StringP("file", "f", "", "the Dockerfile, in the context (default CONTEXT/Dockerfile)")
	policy := fs.String("policy", "", "the builder box's egress policy: what the build's steps may reach (default allow-all)")
	quiet := fs.BoolP("quiet", "q", false, "print only the image's name when it is built, not the build's output")
	asJSON := fs.Bool("json", false, "print the image as JSON when it is built")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *tag == "" || fs.NArg() > 1 {
		return usagef("image build -t NAME[:TAG] [-f DOCKERFILE] [--policy P] [CONTEXT]")
	}
	c, err := e.client()
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
		return invalidf("the build context %s is not a folder", ctxDir)
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
			return invalidf("the Dockerfile %s is not in the build context %s: give a context that holds it", *file, ctxDir)
		}
		df = filepath.ToSlash(rel)
	}
	if _, err := os.Stat(filepath.Join(ctxDir, filepath.FromSlash(df))); err != nil {
		return invalidf("no Dockerfile: %v", err)
	}
	name, t, _ := strings.Cut(*tag, ":")
	ignore, err := readDockerignore(filepath.Join(ctxDir, ".dockerignore"))
	if err != nil {
		return err
	}
	logf := func(line string) { fmt.Fprintln(e.stderr, line) }
	if *quiet || *asJSON {
		logf = nil
	}
	im, err := c.BuildImage(e.ctx, client.ImageBuild{Name: name, Tag: t, Dockerfile: df, Policy: *policy}, packContext(ctxDir, ignore), logf)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, im)
	}
	if *quiet {
		fmt.Fprintln(e.stdout, im.Ref)
		return nil
	}
	how := "built"
	if im.Cached {
		how = "unchanged"
	}
	fmt.Fprintf(e.stdout, "%s %s (%s, %s): make a box from it with 'paddock new --image %s'\n", how, im.Ref, imagefmt.Short(im.ID), sizeText(im.Size), im.Name)
	return nil
}

// packContext is a build context as it is sent: the folder as a tar,
// less what its .dockerignore leaves out (ignore).
func packContext(dir string, ignore []string) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		var st archive.Stats
		_, err := archive.PackPushed(pw, dir, false, ignore, &st)
		pw.CloseWithError(err)
	}()
	return pr
}

// contextDigest is the digest the server gives a context (see
// imagefmt.ContextDigest), read here, and whether it holds dockerfile.
func contextDigest(dir, dockerfile string) (string, bool, error) {
	ignore, err := readDockerignore(filepath.Join(dir, ".dockerignore"))
	if err != nil {
		return "", false, err
	}
	r := packContext(dir, ignore)
	defer r.Close()
	d, df, err := imagefmt.ContextDigest(r, dockerfile)
	return d, df != nil, err
}

// readDockerignore reads a context's .dockerignore as patterns (none when
// there is no file).
func readDockerignore(p string) ([]string, error) {
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
