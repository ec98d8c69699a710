package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
)

// cmdAudit lists the audit log, follows it, or checks its chain.
func cmdAudit(e *env, args []string) error {
	if len(args) > 0 && args[0] == "verify" {
		return auditVerify(e, args[1:])
	}
	fs := flags("audit")
	var q client.AuditQuery
	fs.StringVar(&q.Box, "box", "", "entries about this box")
	fs.StringVar(&q.User, "user", "", "entries of this user's actions")
	fs.StringVar(&q.Action, "action", "", "this action, or a kind of them (box picks box.create, box.stop...)")
	fs.StringVar(&q.Since, "since", "", "entries from this long ago (90m, 1h, 2d) or this time on")
	asJSON := fs.Bool("json", false, "print JSON (one entry per line with -f)")
	follow := fs.BoolP("follow", "f", false, "keep printing entries as they are recorded")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected %q: 'paddock audit [--box B] [--user U] [--action A] [--since 1h] [--json] [-f]' or 'paddock audit verify'", fs.Arg(0))
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	es, err := c.Audit(e.ctx, q)
	if err != nil {
		return err
	}
	if *asJSON && !*follow {
		return printJSON(e.stdout, es)
	}
	show := func(es []api.AuditEntry) error {
		if *asJSON {
			for _, en := range es {
				if err := printJSONLine(e.stdout, en); err != nil {
					return err
				}
			}
			return nil
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		for _, en := range es {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", en.Seq, en.At.Local().Format(time.DateTime), dash(en.User), en.Action, dash(auditWhat(en)), en.Result, auditDetail(en))
		}
		return tw.Flush()
	}
	if !*asJSON {
		fmt.Fprintln(e.stdout, "#  TIME  USER  ACTION  ON  RESULT  DETAIL")
	}
	if err := show(es); err != nil || !*follow {
		return err
	}
	q.Since = ""
	for {
		if len(es) > 0 {
			q.After = es[len(es)-1].Seq
		}
		select {
		case <-e.ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		if es, err = c.Audit(e.ctx, q); err != nil {
			return err
		}
		if err := show(es); err != nil {
			return err
		}
	}
}

// auditWhat is what an entry is about: its box, or its object.
func auditWhat(en api.AuditEntry) string {
	if en.Box != "" {
		return "box/" + en.Box
	}
	return en.Object
}

// auditDetail is an entry's details, and where it came from, on one line.
func auditDetail(en api.AuditEntry) string {
	var parts []string
	if len(en.Detail) > 0 {
		parts = append(parts, string(en.Detail))
	}
	if en.Via != "" {
		parts = append(parts, "via "+en.Via)
	}
	if en.Addr != "" {
		parts = append(parts, "from "+en.Addr)
	}
	return strings.Join(parts, " ")
}

func auditVerify(e *env, args []string) error {
	fs := flags("audit verify")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	r, err := c.VerifyAudit(e.ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := printJSON(e.stdout, r); err != nil {
			return err
		}
	} else if r.OK {
		fmt.Fprintf(e.stdout, "the audit log chains: %d entries, %d to %d\n", r.Entries, r.First, r.Last)
	} else {
		fmt.Fprintf(e.stdout, "the audit log is broken at entry %d: %s\n(%d entries chain before it, from %d)\n", r.Broken.Seq, r.Broken.Reason, r.Entries, r.First)
	}
	if !r.OK {
		return exitError{1}
	}
	return nil
}
