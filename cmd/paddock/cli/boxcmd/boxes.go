// Package boxcmd is the paddock CLI's box commands: new, ls, show, use,
// current, stop, ttl, start, rm, fork, snapshot(s), restore, move, top,
// share and unshare.
package boxcmd

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/servercmd"
)

func New(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("new")
	typ := fs.String("type", "small", "box type: small, medium or large")
	ttl := fs.String("ttl", "", "stop (with a snapshot) after this long: seconds or a duration (1h)")
	idleStop := fs.String("idle-stop", "", "stop (with a snapshot) once unused this long; its next use starts it again: a duration (30m), or off (default: its type's idle_stop)")
	name := fs.String("name", "", "box name (default: generated)")
	image := fs.String("image", "", "box image (default: the server's)")
	drives := fs.StringArray("drive", nil, "mount a drive: NAME:/mnt/PATH (repeatable)")
	bucketMounts := fs.StringArray("mount", nil, "mount a bucket of your own: s3://BUCKET[/PREFIX],to=PATH,secret=NAME[,ro][,endpoint=URL][,region=R] (repeatable; the secret holds ACCESS_KEY_ID:SECRET_ACCESS_KEY)")
	envs := fs.StringArray("env", nil, "environment for commands in the box: KEY=VALUE (repeatable)")
	policy := fs.String("policy", "", "egress policy: allow-all (default), deny-all or a policy's name")
	node := fs.String("node", "", "put the box on this server ('paddock nodes'; default: where Paddock places it)")
	nodeLabels := fs.StringArray("node-label", nil, "put the box on a server with this label: KEY=VALUE (repeatable; 'paddock node label')")
	labels := fs.StringArray("label", nil, "a label of the box, to find it by: KEY=VALUE (repeatable; 'paddock ls --label')")
	desktop := fs.Bool("desktop", false, "give the box an XFCE desktop on display :1 (default: the server's desktop_default; --desktop=false for none)")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return cmdenv.Usagef("unexpected argument %q", fs.Arg(0))
	}
	// Check what can be checked here, so that a typo never reaches the server.
	if err := api.ValidType(*typ); err != nil {
		return cmdenv.Invalidf("%v", err)
	}
	if _, err := api.ParseTTL(*ttl); err != nil {
		return cmdenv.Invalidf("%v", err)
	}
	// A bare number is seconds: one under a minute is more likely meant
	// as minutes or hours than as a box that stops at once.
	if n, err := strconv.Atoi(*ttl); err == nil && n > 0 && n < 60 {
		fmt.Fprintf(e.Stderr, "paddock new: --ttl %d is %d seconds: the box stops %ds after it starts (a number is seconds; %dm or %dh for minutes or hours)\n", n, n, n, n, n)
	}
	if _, err := api.ParseIdleStop(*idleStop); err != nil {
		return cmdenv.Invalidf("%v", err)
	}
	if *name != "" {
		if err := api.ValidName("box", *name); err != nil {
			return cmdenv.Invalidf("%v", err)
		}
	}
	post := api.BoxPost{Name: *name, Type: *typ, TTL: *ttl, IdleStop: *idleStop, Image: *image, Policy: *policy, Node: *node}
	if len(*nodeLabels) > 0 {
		labels, err := cmdenv.ParseLabels(*nodeLabels)
		if err != nil {
			return err
		}
		post.NodeLabels = labels
	}
	if len(*labels) > 0 {
		l, err := cmdenv.ParseLabels(*labels)
		if err != nil {
			return err
		}
		post.Labels = l
	}
	if fs.Changed("desktop") {
		post.Desktop = desktop
	}
	for _, d := range *drives {
		m, err := api.ParseMount(d)
		if err != nil {
			return cmdenv.Invalidf("%v", err)
		}
		post.Mounts = append(post.Mounts, m)
	}
	for _, b := range *bucketMounts {
		m, err := api.ParseBucketMount(b)
		if err != nil {
			return cmdenv.Invalidf("--mount: %v", err)
		}
		post.Buckets = append(post.Buckets, m)
	}
	env, err := cmdenv.ParseEnv(*envs)
	if err != nil {
		return err
	}
	post.Env = env
	c, err := e.Client()
	if err != nil {
		return err
	}
	b, err := c.CreateBox(e.Ctx, post)
	if b.Name != "" {
		if serr := becomeCurrent(e, b.Name); serr != nil && err == nil {
			err = serr
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, b.Name)
	return nil
}

// ttlText is a box's time to live as ls and show print it: what is left
// of it while the box runs; once stopped, when it ran out (a TTL stop) or
// the whole of it, which a start gives it again.
func ttlText(b api.Box) string {
	if b.TTLSeconds == 0 {
		return "-"
	}
	ttl := (time.Duration(b.TTLSeconds) * time.Second).String()
	switch {
	case b.ExpiresAt == nil:
		return ttl
	case b.Desired == "running":
		left := time.Until(*b.ExpiresAt).Round(time.Second)
		if left < 0 {
			left = 0
		}
		return left.String() + " left"
	case !b.ExpiresAt.After(time.Now()):
		return "ran out " + b.ExpiresAt.Local().Format("15:04 Jan 2")
	}
	return ttl + " from start"
}

func Ls(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("ls")
	asJSON := fs.Bool("json", false, "print JSON")
	labels := fs.StringArray("label", nil, "only boxes with this label: KEY=VALUE (repeatable: with all of them)")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	want, err := cmdenv.ParseLabels(*labels)
	if err != nil {
		return err
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	bs, err := c.BoxesLabelled(e.Ctx, want)
	if err != nil {
		return err
	}
	if *asJSON {
		return cmdenv.PrintJSON(e.Stdout, bs)
	}
	s, _ := e.Load()
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	// A server with nodes says where each box is.
	nodes := slices.ContainsFunc(bs, func(b api.Box) bool { return b.Node != "" })
	if nodes {
		fmt.Fprintln(tw, "NAME\tTYPE\tSTATUS\tTTL\tNODE\tIMAGE\tLABELS")
	} else {
		fmt.Fprintln(tw, "NAME\tTYPE\tSTATUS\tTTL\tIMAGE\tLABELS")
	}
	for _, b := range bs {
		name := b.Name
		if name == s.Current {
			name += " *"
		}
		if b.Access != "" {
			name += " (" + b.Access + ")"
		}
		status := b.Status
		if b.Desired != b.Status && b.Status != "error" {
			status += " (→ " + b.Desired + ")"
		}
		if nodes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, b.Type, status, ttlText(b), b.Node, b.Image, cmdenv.Dash(api.LabelsText(b.Labels)))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, b.Type, status, ttlText(b), b.Image, cmdenv.Dash(api.LabelsText(b.Labels)))
	}
	return tw.Flush()
}

func oneBox(e *cmdenv.Env, name string, args []string) ([]string, string, error) {
	if len(args) == 0 {
		args = []string{"current"} // as exec does: the current box
	}
	n, err := e.BoxName(args[0])
	return args[1:], n, err
}

func Show(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("show")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	rest, name, err := oneBox(e, "show", fs.Args())
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return cmdenv.Usagef("unexpected argument %q", rest[0])
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	b, err := c.BoxDetail(e.Ctx, name)
	if err != nil {
		return err
	}
	if *asJSON {
		return cmdenv.PrintJSON(e.Stdout, b)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "name:\t%s\n", b.Name)
	switch {
	case b.Sleeping && b.Note != "":
		fmt.Fprintf(tw, "status:\t%s, asleep\n", b.Status) // the note says the rest
	case b.Sleeping:
		fmt.Fprintf(tw, "status:\t%s, asleep (its next use starts it)\n", b.Status)
	default:
		fmt.Fprintf(tw, "status:\t%s\n", b.Status)
	}
	if b.Note != "" {
		fmt.Fprintf(tw, "note:\t%s\n", localTimes(b.Note))
	}
	if b.Error != "" {
		fmt.Fprintf(tw, "error:\t%s\n", b.Error)
	}
	if b.OOMAt != nil {
		fmt.Fprintf(tw, "killed:\tout of memory at %s (%s past its %d MiB, in all)\n", b.OOMAt.Local().Format("15:04:05 Jan 2"), cmdenv.Plural(b.OOMKills, "process", "processes"), b.MemoryMiB)
	}
	if b.Access != "" {
		fmt.Fprintf(tw, "shared:\twith you as a %s, by %s\n", b.Access, b.Owner)
	}
	fmt.Fprintf(tw, "desired:\t%s\n", b.Desired)
	fmt.Fprintf(tw, "type:\t%s (%g CPU, %d MiB)\n", b.Type, b.CPUs, b.MemoryMiB)
	fmt.Fprintf(tw, "image:\t%s\n", b.Image)
	if b.From != "" {
		fmt.Fprintf(tw, "from snapshot:\t%s\n", b.From)
	}
	fmt.Fprintf(tw, "ttl:\t%s\n", ttlText(b))
	fmt.Fprintf(tw, "idle stop:\t%s\n", cmdenv.OrDash(b.IdleStop != "", b.IdleStop))
	fmt.Fprintf(tw, "policy:\t%s\n", b.Policy)
	switch {
	case !b.Desktop:
		fmt.Fprintf(tw, "desktop:\tno\n")
	case b.DesktopState == "down" || strings.HasPrefix(b.DesktopState, "failed"):
		fmt.Fprintf(tw, "desktop:\t%s (start it again: 'paddock stop %s; paddock start %s')\n", b.DesktopState, name, name)
	case b.DesktopState != "":
		fmt.Fprintf(tw, "desktop:\t%s\n", b.DesktopState)
	default:
		fmt.Fprintf(tw, "desktop:\tyes\n")
	}
	if b.Docker != "" {
		fmt.Fprintf(tw, "docker:\t%s\n", b.Docker)
	}
	if b.Node != "" {
		fmt.Fprintf(tw, "node:\t%s\n", b.Node)
	}
	if len(b.NodeLabels) > 0 {
		fmt.Fprintf(tw, "placement:\tservers with %s\n", api.LabelsText(b.NodeLabels))
	}
	if len(b.Labels) > 0 {
		fmt.Fprintf(tw, "labels:\t%s\n", api.LabelsText(b.Labels))
	}
	if b.IP != "" {
		fmt.Fprintf(tw, "address:\t%s\n", b.IP)
	}
	if b.Status == "running" {
		if m, err := c.BoxMetrics(e.Ctx, name, "1m"); err == nil && len(m.Samples) > 0 {
			usageLines(tw, m.Samples[len(m.Samples)-1])
		}
	}
	for _, u := range b.Broker {
		fmt.Fprintf(tw, "broker:\t%s\n", brokerText(u))
	}
	if rep, err := c.PolicyReport(e.Ctx, name); err == nil {
		fmt.Fprintf(tw, "dropped:\t%s\n", servercmd.DropsText(rep.Drops))
		// The newest few resolver decisions; policy log has them all.
		for _, d := range rep.DNS[max(0, len(rep.DNS)-3):] {
			fmt.Fprintf(tw, "dns:\t%s\n", servercmd.DNSText(d, " "))
		}
	}
	if b.ExpiresAt != nil {
		fmt.Fprintf(tw, "expires:\t%s\n", b.ExpiresAt.Local().Format(time.RFC3339))
	}
	for _, m := range b.Mounts {
		ro := ""
		if m.ReadOnly {
			ro = " (read-only)"
		}
		fmt.Fprintf(tw, "drive:\t%s at %s%s\n", m.Drive, m.Path, ro)
	}
	for _, m := range b.Buckets {
		ro := ""
		if m.ReadOnly {
			ro = " (read-only)"
		}
		fmt.Fprintf(tw, "bucket:\t%s at %s%s, keys in secret %s\n", m.URL, m.To, ro, m.Secret)
	}
	for _, k := range cmdenv.SortedKeys(b.Env) {
		fmt.Fprintf(tw, "env:\t%s=%s\n", k, b.Env[k])
	}
	fmt.Fprintf(tw, "created:\t%s\n", b.Created.Local().Format(time.RFC3339))
	return tw.Flush()
}

func Use(e *cmdenv.Env, args []string) error {
	if len(args) != 1 {
		return cmdenv.Usagef("give one box name")
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	if _, err := c.Box(e.Ctx, args[0]); err != nil {
		return err
	}
	return e.SetCurrent(args[0])
}

func Current(e *cmdenv.Env, args []string) error {
	if len(args) != 0 {
		return cmdenv.Usagef("current takes no arguments")
	}
	n, err := e.BoxName("current")
	if err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, n)
	return nil
}

// boxVerb runs a verb that takes exactly one box and prints its status.
func boxVerb(e *cmdenv.Env, args []string, verb func(c *client.Client, name string) (api.Box, error)) error {
	if len(args) == 0 {
		args = []string{"current"} // as exec does: the current box
	}
	if len(args) != 1 {
		return cmdenv.Usagef("give one box name (or none, for the current box)")
	}
	name, c, err := e.Connect(args[0])
	if err != nil {
		return err
	}
	b, err := verb(c, name)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "%s %s\n", b.Name, b.Status)
	return nil
}

func Stop(e *cmdenv.Env, args []string) error {
	return boxVerb(e, args, func(c *client.Client, name string) (api.Box, error) {
		return c.StopBox(e.Ctx, name)
	})
}

func Start(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("start")
	node := fs.String("node", "", "start it on this server from its newest snapshot in the object store, when its own server is down (what it wrote after that snapshot is lost; the owner's)")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if *node == "" {
		return boxVerb(e, fs.Args(), func(c *client.Client, name string) (api.Box, error) {
			return c.StartBox(e.Ctx, name)
		})
	}
	return boxVerb(e, fs.Args(), func(c *client.Client, name string) (api.Box, error) {
		b, err := c.StartElsewhere(e.Ctx, name, *node)
		if err == nil {
			fmt.Fprintf(e.Stderr, "%s: %s\n", name, b.Note)
		}
		return b, err
	})
}

func Snapshot(e *cmdenv.Env, args []string) error {
	if len(args) != 1 {
		return cmdenv.Usagef("give one box name (or 'current')")
	}
	name, c, err := e.Connect(args[0])
	if err != nil {
		return err
	}
	s, err := c.Snapshot(e.Ctx, name)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, s.ID)
	return nil
}

func Snapshots(e *cmdenv.Env, args []string) error {
	fetch := func(c *client.Client, box string) ([]api.Snapshot, error) { return c.Snapshots(e.Ctx, box) }
	return cmdenv.BoxListing(e, "snapshots", args, fetch, "ID\tREASON\tSTATE\tCREATED\tSIZE\tSHIPPED", func(s api.Snapshot) []string {
		size := "-"
		if s.Size > 0 {
			size = fmt.Sprintf("%.1f MiB", float64(s.Size)/(1<<20))
		}
		// Where it stands with the object store ("-": none configured).
		shipped := cmp.Or(s.Shipped, "-")
		if s.ShipError != "" {
			shipped += " (last try failed: " + s.ShipError + ")"
		}
		return []string{s.ID, s.Reason, s.State, s.Created.Local().Format(time.RFC3339), size, shipped}
	})
}

func Restore(e *cmdenv.Env, args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return cmdenv.Usagef("give a box name and optionally a snapshot id")
	}
	snap := ""
	if len(args) == 2 {
		snap = args[1]
	}
	return boxVerb(e, args[:1], func(c *client.Client, name string) (api.Box, error) {
		before, _ := c.Snapshots(e.Ctx, name)
		b, err := c.Restore(e.Ctx, name, snap)
		if err != nil {
			return b, err
		}
		// The server kept what the restore replaced: say under what name.
		after, _ := c.Snapshots(e.Ctx, name)
		for _, sn := range after {
			if sn.Reason == "restore" && !slices.ContainsFunc(before, func(o api.Snapshot) bool { return o.ID == sn.ID }) {
				fmt.Fprintf(e.Stderr, "what the restore replaced is kept as snapshot %s ('paddock restore %s %s' brings it back)\n", sn.ID, name, sn.ID)
			}
		}
		return b, nil
	})
}

func Move(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("move")
	to := fs.String("to", "", "the server to move the box to ('paddock nodes')")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if *to == "" {
		return cmdenv.Usagef("give the server: --to NODE")
	}
	if fs.NArg() == 0 {
		return cmdenv.Usagef("give the box to move (and the boxes that share its drives)")
	}
	name, c, err := e.Connect(fs.Arg(0))
	if err != nil {
		return err
	}
	b, err := c.MoveBox(e.Ctx, name, *to, fs.Args()[1:]...)
	if err != nil {
		return err
	}
	what := strings.Join(append([]string{name}, fs.Args()[1:]...), ", ")
	if len(b.Mounts) > 0 {
		what += " with their drives"
	}
	fmt.Fprintf(e.Stderr, "moved %s to %s\n", what, b.Node)
	fmt.Fprintf(e.Stdout, "%s %s\n", b.Name, b.Status)
	return nil
}

func Fork(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("fork")
	name := fs.String("name", "", "name of the new box (default: generated)")
	snap := fs.String("snapshot", "", "snapshot to fork from (default: one taken now)")
	node := fs.String("node", "", "the server to put the fork on (default: where its snapshot is; the owner's)")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	// The new box's name may follow the box's, as cp's target does.
	switch {
	case fs.NArg() == 2 && *name != "" && *name != fs.Arg(1):
		return cmdenv.Usagef("the new box's name twice (%q and --name %q): give one", fs.Arg(1), *name)
	case fs.NArg() == 2:
		*name = fs.Arg(1)
	case fs.NArg() != 1:
		return cmdenv.Usagef("give the box to fork, and the new box's name if you choose it")
	}
	if *name != "" {
		if err := api.ValidName("box", *name); err != nil {
			return cmdenv.Invalidf("%v", err)
		}
	}
	src, c, err := e.Connect(fs.Arg(0))
	if err != nil {
		return err
	}
	b, err := c.Fork(e.Ctx, src, api.ForkPost{Name: *name, Snapshot: *snap, Node: *node})
	if b.Name != "" {
		if serr := becomeCurrent(e, b.Name); serr != nil && err == nil {
			err = serr
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, b.Name)
	return nil
}

func Rm(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("rm")
	force := fs.BoolP("force", "f", false, "remove running boxes without asking")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	args = fs.Args()
	if len(args) == 0 {
		return cmdenv.Usagef("give at least one box name")
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	s, _ := e.Load()
	var failed []string
	for _, a := range args {
		name, err := e.BoxName(a)
		if err == nil && !*force {
			err = confirmRemove(e, c, name)
		}
		if err == nil {
			err = c.RemoveBox(e.Ctx, name)
		}
		if err != nil {
			fmt.Fprintf(e.Stderr, "paddock rm: %s: %v\n", a, err)
			failed = append(failed, a)
			continue
		}
		fmt.Fprintf(e.Stdout, "removed %s\n", name)
		if name == s.Current {
			e.SetCurrent("")
			fmt.Fprintf(e.Stderr, "%s was the current box; there is none now ('paddock use BOX' sets one)\n", name)
		}
	}
	if len(failed) > 0 {
		return cmdenv.ExitError{Code: 1}
	}
	return nil
}

// confirmRemove asks, on a terminal, before a running box goes with its
// files and snapshots; without one it refuses (--force says yes).
func confirmRemove(e *cmdenv.Env, c *client.Client, name string) error {
	b, err := c.Box(e.Ctx, name)
	if err != nil {
		return err
	}
	if b.Status != "running" && b.Desired != "running" {
		return nil
	}
	snaps, _ := c.Snapshots(e.Ctx, name)
	if !cmdenv.IsTerminal(e.Stdin) {
		return fmt.Errorf("box %s is running: its files and %d snapshot(s) would go with it; stop it first, or add --force", name, len(snaps))
	}
	return e.Confirm(fmt.Sprintf("Box %s is running. Remove it, its files and its %d snapshot(s)? Type its name to confirm: ", name, len(snaps)), name, "--force")
}

// becomeCurrent makes name the current box, and says so on stderr when
// that changes which box commands without a box name act on.
func becomeCurrent(e *cmdenv.Env, name string) error {
	s, _ := e.Load()
	if err := e.SetCurrent(name); err != nil {
		return err
	}
	switch s.Current {
	case name:
	case "":
		fmt.Fprintf(e.Stderr, "%s is now the current box\n", name)
	default:
		fmt.Fprintf(e.Stderr, "%s is now the current box (it was %s: 'paddock use %s' goes back)\n", name, s.Current, s.Current)
	}
	return nil
}

// brokerText is one line of what a box sent through the broker with a
// secret: "ANTHROPIC_API_KEY 12 requests (2xx 11, 4xx 1), 3 refused, 4.1 KB up, 88 KB down, last 200 at 21:02:47".
func brokerText(u api.BrokerUse) string {
	t := fmt.Sprintf("%s %s", u.Secret, cmdenv.Plural(u.Requests, "request", "requests"))
	var cls []string
	for _, k := range []string{"2xx", "4xx", "5xx"} {
		if n := u.Status[k]; n > 0 {
			cls = append(cls, fmt.Sprintf("%s %d", k, n))
		}
	}
	if len(cls) > 0 {
		t += " (" + strings.Join(cls, ", ") + ")"
	}
	if u.Refused > 0 {
		t += fmt.Sprintf(", %d refused", u.Refused)
	}
	t += fmt.Sprintf(", %s up, %s down", cmdenv.SizeText(u.BytesUp), cmdenv.SizeText(u.BytesDown))
	if u.Last != nil {
		t += fmt.Sprintf(", last %d at %s", u.LastStatus, u.Last.Local().Format("15:04:05"))
	}
	return t
}

// TTL sets a box's time to live: from now, +D beyond what is left,
// or off.
func TTL(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("ttl")
	asJSON := fs.Bool("json", false, "print the box as JSON")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return cmdenv.Usagef("give a box and a time to live: 'paddock ttl BOX 3h', 'paddock ttl BOX +1h' (beyond what is left) or 'paddock ttl BOX off'")
	}
	name, c, err := e.Connect(fs.Arg(0))
	if err != nil {
		return err
	}
	ttl, err := ttlFrom(e, c, name, fs.Arg(1))
	if err != nil {
		return err
	}
	b, err := c.SetTTL(e.Ctx, name, ttl)
	if err != nil {
		return err
	}
	if *asJSON {
		return cmdenv.PrintJSON(e.Stdout, b)
	}
	if b.TTLSeconds == 0 {
		fmt.Fprintf(e.Stdout, "%s has no time to live: it runs until stopped\n", b.Name)
		return nil
	}
	when := ""
	if b.ExpiresAt != nil {
		when = ", until " + b.ExpiresAt.Local().Format("15:04:05 Jan 2")
	}
	fmt.Fprintf(e.Stdout, "%s stops (with a snapshot) in %s%s\n", b.Name, time.Duration(b.TTLSeconds)*time.Second, when)
	return nil
}

// ttlFrom is the TTL to send for what was given: off, a TTL from now, or
// +D: D beyond the time the box has left (from now, if it has none).
func ttlFrom(e *cmdenv.Env, c *client.Client, name, arg string) (string, error) {
	if arg == "off" || arg == "none" {
		return "", nil
	}
	more, plus := strings.CutPrefix(arg, "+")
	d, err := api.ParseTTL(more)
	if err != nil || d == 0 {
		return "", cmdenv.Invalidf("time to live %q: give seconds or a duration (3h, 90m), +D to add to what is left, or off", arg)
	}
	if !plus {
		return fmt.Sprint(int64(d / time.Second)), nil
	}
	b, err := c.Box(e.Ctx, name)
	if err != nil {
		return "", err
	}
	if b.ExpiresAt != nil {
		if left := time.Until(*b.ExpiresAt); left > 0 {
			d += left.Truncate(time.Second)
		}
	}
	return fmt.Sprint(int64(d / time.Second)), nil
}

// utcStamp is a time as the server writes it into a note.
var utcStamp = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\b`)

// localTimes writes the times of a note in this computer's time, as the
// rest of show does.
func localTimes(note string) string {
	return utcStamp.ReplaceAllStringFunc(note, func(s string) string {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return s
		}
		return t.Local().Format("15:04:05 Jan 2")
	})
}
