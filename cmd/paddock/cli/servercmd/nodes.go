// Package servercmd is the paddock CLI's commands for what a server
// offers its boxes: its servers (nodes, node), egress policies (policy)
// and images (images, image), with an image build's context.
package servercmd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

func Node(e *cmdenv.Env, args []string) error {
	if len(args) == 0 {
		return cmdenv.Usagef("give add, label, pool, drain, undrain, lost or rm")
	}
	switch {
	case args[0] == "add":
		asJSON, err := cmdenv.JSONFlag("node add", args[1:])
		if err != nil {
			return err
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		j, err := c.NodeJoin(e.Ctx)
		if err != nil {
			return err
		}
		if asJSON {
			return cmdenv.PrintJSON(e.Stdout, j)
		}
		fmt.Fprintf(e.Stdout, "On the new server run, as root, with its installer (the token works once, until %s):\n\n  %s\n\n",
			j.ExpiresAt.Local().Format(time.Kitchen), strings.Replace(j.Command, "sudo paddockd node ", "sudo sh install.sh ", 1))
		fmt.Fprintf(e.Stdout, "or, where Paddock is installed already, and under a service of your own:\n\n  %s\n\n", j.Command)
		fmt.Fprintln(e.Stdout, "Then 'paddock nodes' lists it; new boxes may be placed on it once it is up.")
		return nil
	case args[0] == "label" && len(args) >= 2:
		labels, err := cmdenv.ParseLabels(args[2:])
		if err != nil {
			return err
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		n, err := c.LabelNode(e.Ctx, args[1], labels)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "node %s: labels %s\n", n.Name, labelsText(n))
		return nil
	case args[0] == "pool" && len(args) >= 2:
		c, err := e.Client()
		if err != nil {
			return err
		}
		var n api.Node
		if len(args) == 2 {
			ns, err := c.Nodes(e.Ctx)
			if err != nil {
				return err
			}
			i := slices.IndexFunc(ns, func(n api.Node) bool { return n.Name == args[1] })
			if i < 0 {
				return &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no server named %q ('paddock nodes' lists them)", args[1])}
			}
			n = ns[i]
		} else {
			pool := map[string]int{}
			for _, kv := range args[2:] {
				t, v, ok := strings.Cut(kv, "=")
				count, err := strconv.Atoi(v)
				if !ok || t == "" || err != nil {
					return cmdenv.Invalidf("pool %q: give TYPE=COUNT (small=2; 0 keeps none)", kv)
				}
				pool[t] = count
			}
			if n, err = c.SetNodePool(e.Ctx, args[1], pool); err != nil {
				return err
			}
		}
		fmt.Fprintf(e.Stdout, "node %s: its own pool %s; %d pool boxes there now\n", n.Name, ownPoolText(n), n.Pool)
		return nil
	case args[0] == "drain" && len(args) == 2:
		c, err := e.Client()
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stderr, "draining %s: no new box goes there; moving its boxes and drives…\n", args[1])
		d, err := c.DrainNode(e.Ctx, args[1])
		for _, m := range d.Moved {
			if m.Drive != "" {
				fmt.Fprintf(e.Stdout, "moved drive %s to %s\n", m.Drive, m.To)
			} else {
				fmt.Fprintf(e.Stdout, "moved %s to %s\n", m.Box, m.To)
			}
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "node %s is drained: 'paddock node rm %s' forgets it once it holds nothing, 'paddock node undrain %s' takes boxes there again\n", args[1], args[1], args[1])
		return nil
	case args[0] == "undrain" && len(args) == 2:
		c, err := e.Client()
		if err != nil {
			return err
		}
		if err := c.UndrainNode(e.Ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "node %s takes new boxes again\n", args[1])
		return nil
	case args[0] == "lost" && len(args) == 2:
		c, err := e.Client()
		if err != nil {
			return err
		}
		l, err := c.LoseNode(e.Ctx, args[1])
		if err != nil {
			return err
		}
		for _, b := range l.Boxes {
			from := "its image"
			if b.From != "" {
				from = "snapshot " + b.From
			}
			fmt.Fprintf(e.Stdout, "%s: made again on %s from %s; %s\n", b.Box, b.To, from, b.Lost)
		}
		for _, d := range l.Drives {
			fmt.Fprintf(e.Stdout, "drive %s: declared again on %s, empty: what it held was on %s\n", d.Drive, d.To, l.Node)
		}
		if len(l.Snapshots) > 0 {
			fmt.Fprintf(e.Stdout, "lost with it (never shipped to the object store): snapshot(s) %s\n", strings.Join(l.Snapshots, ", "))
		}
		fmt.Fprintf(e.Stdout, "node %s is forgotten: if it comes back, it touches none of these; it joins again with a new 'paddock node add' token\n", l.Node)
		return nil
	case args[0] == "rm" && len(args) == 2:
		c, err := e.Client()
		if err != nil {
			return err
		}
		if err := c.RemoveNode(e.Ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "removed node %s (its agent is no longer called; to join again it needs a new token)\n", args[1])
		return nil
	}
	return cmdenv.Usagef("node add [--json] | node label NODE [KEY=VALUE...] | node pool NODE [TYPE=COUNT...] | node drain NODE | node undrain NODE | node lost NODE | node rm NODE")
}

func Nodes(e *cmdenv.Env, args []string) error {
	asJSON, err := cmdenv.JSONFlag("nodes", args)
	if err != nil {
		return err
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	ns, err := c.Nodes(e.Ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return cmdenv.PrintJSON(e.Stdout, ns)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tSWARM\tADDRESS\tSUBNET\tBOXES\tPOOL\tCPUS\tMEMORY FREE\tDISK FREE\tLABELS")
	for _, n := range ns {
		name, addr := n.Name, n.Addr
		if n.ControlPlane {
			name += " *"
			addr = "(control plane)"
		}
		state := n.StateText()
		pool := fmt.Sprint(n.Pool)
		if own := api.PoolText(n.OwnPool); own != "" {
			pool += " (own " + own + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", name, state, cmdenv.OrDash(n.SwarmState != "", n.SwarmState), addr, n.Subnet, n.Boxes, pool,
			cmdenv.OrDash(n.CPUs > 0, fmt.Sprint(n.CPUs)), cmdenv.OrDash(n.MemoryBytes > 0, cmdenv.GiB(n.MemoryFree)+" of "+cmdenv.GiB(n.MemoryBytes)),
			cmdenv.OrDash(n.DiskBytes > 0, cmdenv.GiB(n.DiskFree)+" of "+cmdenv.GiB(n.DiskBytes)), labelsText(n))
	}
	return tw.Flush()
}

func labelsText(n api.Node) string { return cmdenv.Dash(api.LabelsText(n.Labels)) }

// ownPoolText is a server's own warm pool as TYPE=COUNT, or "none".
func ownPoolText(n api.Node) string {
	if t := api.PoolText(n.OwnPool); t != "" {
		return t
	}
	return "none"
}
