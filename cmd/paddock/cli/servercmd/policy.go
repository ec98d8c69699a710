package servercmd

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

func Policy(e *cmdenv.Env, args []string) error {
	if len(args) == 0 {
		return cmdenv.Usagef("give set, ls, new, rm or log")
	}
	switch args[0] {
	case "set":
		if len(args) != 3 {
			return cmdenv.Usagef("policy set BOX allow-all|deny-all|NAME")
		}
		name, c, err := e.Connect(args[1])
		if err != nil {
			return err
		}
		b, err := c.SetPolicy(e.Ctx, name, args[2])
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "%s: policy %s\n", b.Name, b.Policy)
		return nil
	case "ls":
		asJSON, err := cmdenv.JSONFlag("policy ls", args[1:])
		if err != nil {
			return err
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		ps, err := c.Policies(e.Ctx)
		if err != nil {
			return err
		}
		return cmdenv.Listing(e.Stdout, asJSON, ps, "NAME\tPROJECT\tDOMAINS\tCIDRS\tUSED BY", func(p api.Policy) []string {
			return []string{p.Name, cmdenv.Dash(p.Project), cmdenv.Dash(strings.Join(p.AllowDomains, ",")),
				cmdenv.Dash(strings.Join(p.AllowCIDRs, ",")), cmdenv.Dash(strings.Join(p.UsedBy, ","))}
		})
	case "new":
		fs := cmdenv.Flags("policy new")
		domains := fs.StringArray("allow-domain", nil, "a domain (example.com) or its subdomains (*.example.com); repeatable")
		cidrs := fs.StringArray("allow-cidr", nil, "an IPv4 prefix (10.1.0.0/16); repeatable")
		if err := cmdenv.Parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return cmdenv.Usagef("policy new NAME [--allow-domain D]... [--allow-cidr C]...")
		}
		p := api.PolicyPost{Name: fs.Arg(0), AllowDomains: *domains, AllowCIDRs: *cidrs}
		if err := api.ValidateProject(api.ProjectSpec{Policies: []api.PolicySpec{p}}); err != nil {
			return cmdenv.Invalidf("%v", err)
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		if _, err := c.CreatePolicy(e.Ctx, p); err != nil {
			return err
		}
		fmt.Fprintln(e.Stdout, p.Name)
		return nil
	case "rm":
		if len(args) != 2 {
			return cmdenv.Usagef("policy rm NAME")
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		if err := c.RemovePolicy(e.Ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "removed policy %s\n", args[1])
		return nil
	case "log":
		fs := cmdenv.Flags("policy log")
		asJSON := fs.Bool("json", false, "print JSON")
		if err := cmdenv.Parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return cmdenv.Usagef("policy log BOX")
		}
		name, c, err := e.Connect(fs.Arg(0))
		if err != nil {
			return err
		}
		r, err := c.PolicyReport(e.Ctx, name)
		if err != nil {
			return err
		}
		if *asJSON {
			return cmdenv.PrintJSON(e.Stdout, r)
		}
		fmt.Fprintf(e.Stdout, "box %s, policy %s\ndropped packets: %s\n", r.Box, r.Policy, DropsText(r.Drops))
		if len(r.DNS) == 0 {
			fmt.Fprintln(e.Stdout, "no DNS decisions yet")
			return nil
		}
		tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tNAME\tDECISION\tDETAIL")
		for _, d := range r.DNS {
			fmt.Fprintln(tw, DNSText(d, "\t"))
		}
		return tw.Flush()
	}
	return cmdenv.Usagef("unknown policy command %q: use set, ls, new, rm or log", args[0])
}

// DNSText is one resolver decision: time, name, allowed or refused, why.
func DNSText(d api.DNSDecision, sep string) string {
	dec := "refused"
	if d.Allowed {
		dec = "allowed"
	}
	return strings.Join([]string{d.Time.Local().Format(time.TimeOnly), d.Name, dec, d.Reason}, sep)
}

func DropsText(d map[string]uint64) string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, d[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
