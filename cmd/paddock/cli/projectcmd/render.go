package projectcmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
)

// symbol is the one place that turns an action into its plan symbol.
func symbol(action string) string {
	switch action {
	case api.ActionCreate:
		return "+"
	case api.ActionUpdate:
		return "~"
	case api.ActionReplace:
		return "-/+"
	case api.ActionDelete:
		return "-"
	}
	return "?"
}

// renderPlan draws a plan: one entry per object with its symbol, the
// attributes that change and why, then the closing count.
func renderPlan(w io.Writer, p api.Plan) {
	if len(p.Changes) == 0 {
		fmt.Fprintf(w, "No changes. Project %q matches its Boxfile.\n", p.Project)
		renderNotes(w, p)
		return
	}
	fmt.Fprintf(w, "Paddock will make these changes to project %q:\n", p.Project)
	for _, c := range p.Changes {
		fmt.Fprintf(w, "\n%3s %s\n", symbol(c.Action), c.Address)
		for _, r := range c.Reasons {
			fmt.Fprintf(w, "      # %s\n", r)
		}
		if c.Action == api.ActionDelete {
			continue
		}
		width := 0
		for _, a := range c.Attrs {
			width = max(width, len(a.Name))
		}
		for _, a := range c.Attrs {
			switch {
			case a.Before == "":
				fmt.Fprintf(w, "      %-*s = %s\n", width, a.Name, a.After)
			case a.After == "":
				fmt.Fprintf(w, "      %-*s = %s -> (none)\n", width, a.Name, a.Before)
			default:
				fmt.Fprintf(w, "      %-*s = %s -> %s\n", width, a.Name, a.Before, a.After)
			}
		}
	}
	renderNotes(w, p)
	add, change, destroy := p.Counts()
	fmt.Fprintf(w, "\nPlan: %d to add, %d to change, %d to destroy.\n", add, change, destroy)
}

func renderNotes(w io.Writer, p api.Plan) {
	if len(p.Notes) == 0 {
		return
	}
	fmt.Fprintln(w)
	for _, n := range p.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
}

// renderApply reports what an apply did, object by object.
func renderApply(w io.Writer, r api.ApplyResult) {
	done := map[string]bool{}
	for _, a := range r.Done {
		done[a] = true
	}
	verbs := map[string]string{api.ActionCreate: "created", api.ActionUpdate: "updated", api.ActionReplace: "replaced", api.ActionDelete: "destroyed"}
	for _, c := range r.Plan.Changes {
		if done[c.Address] {
			fmt.Fprintf(w, "%s: %s\n", c.Address, verbs[c.Action])
		} else if e, ok := r.Failed[c.Address]; ok {
			fmt.Fprintf(w, "%s: failed: %s\n", c.Address, strings.TrimSpace(e))
		}
	}
}
