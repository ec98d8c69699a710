package accesscmd

import (
	"fmt"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// Group lists groups, changes their members, and sets their quotas.
func Group(e *cmdenv.Env, args []string) error {
	if len(args) == 0 {
		return cmdenv.Usagef("give ls, add, rm or quota")
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	switch args[0] {
	case "ls":
		asJSON, err := cmdenv.JSONFlag("group ls", args[1:])
		if err != nil {
			return err
		}
		gs, err := c.Groups(e.Ctx)
		if err != nil {
			return err
		}
		return cmdenv.Listing(e.Stdout, asJSON, gs, "GROUP\tMEMBERS\tQUOTA", func(g api.Group) []string {
			var ms []string
			for _, m := range g.Members {
				if m.Source != "owner" {
					ms = append(ms, m.User+" ("+m.Source+")")
				} else {
					ms = append(ms, m.User)
				}
			}
			return []string{g.Name, cmdenv.Dash(strings.Join(ms, ", ")), cmdenv.Dash(quotaText(g.Quota.Boxes, g.Quota.Running, g.Quota.Drives, g.Quota.Jobs, g.Quota.DriveGiB, g.Quota.Types))}
		})
	case "add", "rm":
		if len(args) != 3 {
			return cmdenv.Usagef("group %s GROUP USER", args[0])
		}
		if args[0] == "add" {
			if err := c.AddToGroup(e.Ctx, args[1], args[2]); err != nil {
				return err
			}
			fmt.Fprintf(e.Stdout, "%s is in group %s\n", args[2], args[1])
			return nil
		}
		if err := c.RemoveFromGroup(e.Ctx, args[1], args[2]); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "%s is no longer in group %s\n", args[2], args[1])
		return nil
	case "quota":
		fs := cmdenv.Flags("group quota")
		put := quotaFlags(fs, "fields the group no longer sets (boxes,running,drives,drive_gib,jobs,types)")
		asJSON := fs.Bool("json", false, "print JSON")
		if err := cmdenv.Parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return cmdenv.Usagef("group quota GROUP [--boxes N ...]")
		}
		p, _ := put()
		g, err := c.SetGroupQuota(e.Ctx, fs.Arg(0), p)
		if err != nil {
			return err
		}
		if *asJSON {
			return cmdenv.PrintJSON(e.Stdout, g)
		}
		fmt.Fprintf(e.Stdout, "group %s's quota: %s\n", g.Name, cmdenv.Dash(quotaText(g.Quota.Boxes, g.Quota.Running, g.Quota.Drives, g.Quota.Jobs, g.Quota.DriveGiB, g.Quota.Types)))
		return nil
	}
	return cmdenv.Usagef("group ls | group add GROUP USER | group rm GROUP USER | group quota GROUP [--boxes N ...]")
}

// quotaText is what a group's quota sets, in a few words.
func quotaText(boxes, running, drives, jobs *int, gib *float64, types *[]string) string {
	var parts []string
	for _, f := range []struct {
		name string
		v    *int
	}{{"boxes", boxes}, {"running", running}, {"drives", drives}, {"jobs", jobs}} {
		if f.v != nil {
			parts = append(parts, fmt.Sprintf("%s=%d", f.name, *f.v))
		}
	}
	if gib != nil {
		parts = append(parts, fmt.Sprintf("drive_gib=%g", *gib))
	}
	if types != nil {
		parts = append(parts, "types="+strings.Join(*types, ","))
	}
	return strings.Join(parts, " ")
}
