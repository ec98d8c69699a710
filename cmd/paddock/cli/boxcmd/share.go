package boxcmd

import (
	"fmt"
	"text/tabwriter"

	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// Share shares a box with a user, or lists who it is shared with.
func Share(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("share")
	as := fs.String("as", "viewer", "viewer (reads the box) or member (works in it)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return cmdenv.Usagef("give a box, and the user to share it with (none: list who it is shared with)")
	}
	name, c, err := e.Connect(fs.Arg(0))
	if err != nil {
		return err
	}
	if fs.NArg() == 1 {
		gs, err := c.Grants(e.Ctx, name)
		if err != nil {
			return err
		}
		if *asJSON {
			return cmdenv.PrintJSON(e.Stdout, gs)
		}
		if len(gs) == 0 {
			fmt.Fprintf(e.Stdout, "box %s is shared with no one\n", name)
			return nil
		}
		tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USER\tACCESS")
		for _, g := range gs {
			fmt.Fprintf(tw, "%s\t%s\n", g.User, g.Access)
		}
		return tw.Flush()
	}
	if *as != "viewer" && *as != "member" {
		return cmdenv.Invalidf("--as %q: give viewer or member", *as)
	}
	g, err := c.Share(e.Ctx, name, fs.Arg(1), *as)
	if err != nil {
		return err
	}
	if *asJSON {
		return cmdenv.PrintJSON(e.Stdout, g)
	}
	fmt.Fprintf(e.Stdout, "shared %s with %s as a %s\n", name, g.User, g.Access)
	return nil
}

// Unshare stops sharing a box with a user.
func Unshare(e *cmdenv.Env, args []string) error {
	if len(args) != 2 {
		return cmdenv.Usagef("give a box and a user")
	}
	name, c, err := e.Connect(args[0])
	if err != nil {
		return err
	}
	if err := c.Unshare(e.Ctx, name, args[1]); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "box %s is no longer shared with %s\n", name, args[1])
	return nil
}
