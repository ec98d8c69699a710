package cli

import (
	"fmt"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
)

// cmdGroup lists groups, changes their members, and sets their quotas.
func cmdGroup(e *env, args []string) error {
	if len(args) == 0 {
		return usagef("give ls, add, rm or quota")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	switch args[0] {
	case "ls":
		asJSON, err := jsonFlag("group ls", args[1:])
		if err != nil {
			return err
		}
		gs, err := c.Groups(e.ctx)
		if err != nil {
			return err
		}
		return listing(e.stdout, asJSON, gs, "GROUP\tMEMBERS\tQUOTA", func(g api.Group) []string {
			var ms []string
			for _, m := range g.Members {
				if m.Source != "owner" {
					ms = append(ms, m.User+" ("+m.Source+")")
				} else {
					ms = append(ms, m.User)
				}
			}
			return []string{g.Name, dash(strings.Join(ms, ", ")), dash(quotaText(g.Quota.Boxes, g.Quota.Running, g.Quota.Drives, g.Quota.Jobs, g.Quota.DriveGiB, g.Quota.Types))}
		})
	case "add", "rm":
		if len(args) != 3 {
			return usagef("group %s GROUP USER", args[0])
		}
		if args[0] == "add" {
			if err := c.AddToGroup(e.ctx, args[1], args[2]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s is in group %s\n", args[2], args[1])
			return nil
		}
		if err := c.RemoveFromGroup(e.ctx, args[1], args[2]); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s is no longer in group %s\n", args[2], args[1])
		return nil
	case "quota":
		fs := flags("group quota")
		put := quotaFlags(fs, "fields the group no longer sets (boxes,running,drives,drive_gib,jobs,types)")
		asJSON := fs.Bool("json", false, "print JSON")
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usagef("group quota GROUP [--boxes N ...]")
		}
		p, _ := put()
		g, err := c.SetGroupQuota(e.ctx, fs.Arg(0), p)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.stdout, g)
		}
		fmt.Fprintf(e.stdout, "group %s's quota: %s\n", g.Name, dash(quotaText(g.Quota.Boxes, g.Quota.Running, g.Quota.Drives, g.Quota.Jobs, g.Quota.DriveGiB, g.Quota.Types)))
		return nil
	}
	return usagef("group ls | group add GROUP USER | group rm GROUP USER | group quota GROUP [--boxes N ...]")
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
