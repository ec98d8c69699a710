package cli

import (
	"fmt"
	"text/tabwriter"
)

// cmdShare shares a box with a user, or lists who it is shared with.
func cmdShare(e *env, args []string) error {
	fs := flags("share")
	as := fs.String("as", "viewer", "viewer (reads the box) or member (works in it)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usagef("give a box, and the user to share it with (none: list who it is shared with)")
	}
	name, c, err := e.connect(fs.Arg(0))
	if err != nil {
		return err
	}
	if fs.NArg() == 1 {
		gs, err := c.Grants(e.ctx, name)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.stdout, gs)
		}
		if len(gs) == 0 {
			fmt.Fprintf(e.stdout, "box %s is shared with no one\n", name)
			return nil
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USER\tACCESS")
		for _, g := range gs {
			fmt.Fprintf(tw, "%s\t%s\n", g.User, g.Access)
		}
		return tw.Flush()
	}
	if *as != "viewer" && *as != "member" {
		return invalidf("--as %q: give viewer or member", *as)
	}
	g, err := c.Share(e.ctx, name, fs.Arg(1), *as)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, g)
	}
	fmt.Fprintf(e.stdout, "shared %s with %s as a %s\n", name, g.User, g.Access)
	return nil
}

// cmdUnshare stops sharing a box with a user.
func cmdUnshare(e *env, args []string) error {
	if len(args) != 2 {
		return usagef("give a box and a user")
	}
	name, c, err := e.connect(args[0])
	if err != nil {
		return err
	}
	if err := c.Unshare(e.ctx, name, args[1]); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "box %s is no longer shared with %s\n", name, args[1])
	return nil
}
