package accesscmd

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
	"github.com/spf13/pflag"

	"github.com/paddock-dev/paddock/appliance/client"
)

// userQuota shows a user's quota (yours without a name) or, with flags,
// changes a member's (the owner's).
func userQuota(e *cmdenv.Env, c *client.Client, args []string) error {
	fs := cmdenv.Flags("user quota")
	put := quotaFlags(fs, "fields that go back to the server's default (boxes,running,drives,drive_gib,jobs,types)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return cmdenv.Usagef("give one user name, or none for yourself")
	}
	name := fs.Arg(0)
	if name == "" {
		who, err := c.Whoami(e.Ctx)
		if err != nil {
			return err
		}
		name = who.User
	}
	p, changed := put()
	var q api.UserQuota
	var err error
	if changed {
		q, err = c.SetQuota(e.Ctx, name, p)
	} else {
		q, err = c.Quota(e.Ctx, name)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return cmdenv.PrintJSON(e.Stdout, q)
	}
	if q.Role != "member" {
		fmt.Fprintf(e.Stdout, "%s is an %s: no quota\n", q.User, q.Role)
		return nil
	}
	own := map[string]bool{}
	for _, f := range q.Own {
		own[f] = true
	}
	from := func(f string) string {
		if own[f] {
			return "set for " + q.User
		}
		if g := q.Groups[f]; g != "" {
			return "group " + g
		}
		return "server default"
	}
	bound := func(n int) string {
		if n <= 0 {
			return "no bound"
		}
		return fmt.Sprint(n)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "QUOTA OF %s\tLIMIT\tIN USE\tFROM\n", q.User)
	fmt.Fprintf(tw, "boxes\t%s\t%d\t%s\n", bound(q.Limits.Boxes), q.Use.Boxes, from("boxes"))
	fmt.Fprintf(tw, "running\t%s\t%d\t%s\n", bound(q.Limits.Running), q.Use.Running, from("running"))
	fmt.Fprintf(tw, "drives\t%s\t%d\t%s\n", bound(q.Limits.Drives), q.Use.Drives, from("drives"))
	gib := "no bound"
	if q.Limits.DriveGiB > 0 {
		gib = fmt.Sprintf("%g GiB", q.Limits.DriveGiB)
	}
	fmt.Fprintf(tw, "drive_gib\t%s\t-\t%s\n", gib, from("drive_gib"))
	fmt.Fprintf(tw, "jobs\t%s\t%d\t%s\n", bound(q.Limits.Jobs), q.Use.Jobs, from("jobs"))
	fmt.Fprintf(tw, "types\t%s\t-\t%s\n", cmdenv.Dash(strings.Join(q.Limits.Types, ",")), from("types"))
	return tw.Flush()
}

// quotaFlags adds the quota fields' flags to fs; put then reads what was
// given (and whether anything was).
func quotaFlags(fs *pflag.FlagSet, defaultHelp string) (put func() (api.QuotaPut, bool)) {
	boxes := fs.Int("boxes", 0, "boxes they may have (0: no bound)")
	running := fs.Int("running", 0, "boxes they may have running")
	drives := fs.Int("drives", 0, "drives they may have")
	driveGiB := fs.Float64("drive-gib", 0, "GiB their drives may hold together")
	jobs := fs.Int("jobs", 0, "jobs and prompts they may have running")
	types := fs.StringSlice("types", nil, "the box types they may make (small,medium,large; empty: every one)")
	def := fs.StringSlice("default", nil, defaultHelp)
	return func() (api.QuotaPut, bool) {
		var p api.QuotaPut
		changed := false
		setInt := func(flag string, v *int, to **int) {
			if fs.Changed(flag) {
				*to, changed = v, true
			}
		}
		setInt("boxes", boxes, &p.Boxes)
		setInt("running", running, &p.Running)
		setInt("drives", drives, &p.Drives)
		setInt("jobs", jobs, &p.Jobs)
		if fs.Changed("drive-gib") {
			p.DriveGiB, changed = driveGiB, true
		}
		if fs.Changed("types") {
			ts := []string{}
			for _, t := range *types {
				if t = strings.TrimSpace(t); t != "" {
					ts = append(ts, t)
				}
			}
			p.Types, changed = &ts, true
		}
		if len(*def) > 0 {
			p.Default, changed = *def, true
		}
		return p, changed
	}
}
