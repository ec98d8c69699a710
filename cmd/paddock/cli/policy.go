package cli

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

func cmdPolicy(e *env, args []string) error {
	if len(args) == 0 {
		return usagef("give set, ls, new, rm or log")
	}
	switch args[0] {
	case "set":
		if len(args) != 3 {
			return usagef("policy set BOX allow-all|deny-all|NAME")
		}
		name, c, err := e.connect(args[1])
		if err != nil {
			return err
		}
		b, err := c.SetPolicy(e.ctx, name, args[2])
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s: policy %s\n", b.Name, b.Policy)
		return nil
	case "ls":
		asJSON, err := jsonFlag("policy ls", args[1:])
		if err != nil {
			return err
		}
		c, err := e.client()
		if err != nil {
			return err
		}
		ps, err := c.Policies(e.ctx)
		if err != nil {
			return err
		}
		return listing(e.stdout, asJSON, ps, "NAME\tPROJECT\tDOMAINS\tCIDRS\tUSED BY", func(p api.Policy) []string {
			return []string{p.Name, dash(p.Project), dash(strings.Join(p.AllowDomains, ",")),
				dash(strings.Join(p.AllowCIDRs, ",")), dash(strings.Join(p.UsedBy, ","))}
		})
	case "new":
		fs := flags("policy new")
		domains := fs.StringArray("allow-domain", nil, "a domain (example.com) or its subdomains (*.example.com); repeatable")
		cidrs := fs.StringArray("allow-cidr", nil, "an IPv4 prefix (10.1.0.0/16); repeatable")
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usagef("policy new NAME [--allow-domain D]... [--allow-cidr C]...")
		}
		p := api.PolicyPost{Name: fs.Arg(0), AllowDomains: *domains, AllowCIDRs: *cidrs}
		if err := api.ValidateProject(api.ProjectSpec{Policies: []api.PolicySpec{p}}); err != nil {
			return invalidf("%v", err)
		}
		c, err := e.client()
		if err != nil {
			return err
		}
		if _, err := c.CreatePolicy(e.ctx, p); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, p.Name)
		return nil
	case "rm":
		if len(args) != 2 {
			return usagef("policy rm NAME")
		}
		c, err := e.client()
		if err != nil {
			return err
		}
		if err := c.RemovePolicy(e.ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "removed policy %s\n", args[1])
		return nil
	case "log":
		fs := flags("policy log")
		asJSON := fs.Bool("json", false, "print JSON")
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usagef("policy log BOX")
		}
		name, c, err := e.connect(fs.Arg(0))
		if err != nil {
			return err
		}
		r, err := c.PolicyReport(e.ctx, name)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.stdout, r)
		}
		fmt.Fprintf(e.stdout, "box %s, policy %s\ndropped packets: %s\n", r.Box, r.Policy, dropsText(r.Drops))
		if len(r.DNS) == 0 {
			fmt.Fprintln(e.stdout, "no DNS decisions yet")
			return nil
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tNAME\tDECISION\tDETAIL")
		for _, d := range r.DNS {
			fmt.Fprintln(tw, dnsText(d, "\t"))
		}
		return tw.Flush()
	}
	return usagef("unknown policy command %q: use set, ls, new, rm or log", args[0])
}

// dnsText is one resolver decision: time, name, allowed or refused, why.
func dnsText(d api.DNSDecision, sep string) string {
	dec := "refused"
	if d.Allowed {
		dec = "allowed"
	}
	return strings.Join([]string{d.Time.Local().Format(time.TimeOnly), d.Name, dec, d.Reason}, sep)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dropsText(d map[string]uint64) string {
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
