// Package remotecmd is the paddock CLI's ways into a box from this
// computer: desktop, screenshot, preview, dashboard, ssh, ssh-config,
// code, and the SSH keys they use (key).
package remotecmd

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// Desktop prints the URL of a box's desktop page (a single-use ticket
// in it) and opens it in the browser when there is one; with actions
// after --, it runs them on the desktop instead (desktopActions). The
// actions come after --, as exec's command does, so that no action can
// be taken for a box's name.
func Desktop(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("desktop")
	noOpen := fs.Bool("no-open", false, "only print the URL")
	scale := fs.Float64("scale", 0, "actions: shrink screenshots to this part of the screen (0.5: half); coordinates are then in the shrunk pixels")
	shot := fs.Bool("screenshot", false, "actions: take a screenshot once they are done (written to -o, or BOX-TIME.png)")
	out := fs.StringP("output", "o", "", "actions: the PNG file of the screenshot taken once they are done")
	asJSON := fs.Bool("json", false, "actions: print the answer as JSON (images base64)")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if dash := fs.ArgsLenAtDash(); dash >= 0 {
		box := "current"
		switch dash {
		case 0:
		case 1:
			box = fs.Arg(0)
		default:
			return cmdenv.Usagef("give one box (or none, for the current box), then -- and the actions")
		}
		acts, err := parseDesktopActions(fs.Args()[dash:])
		if err != nil {
			return err
		}
		return desktopActions(e, box, api.DesktopActionsPost{Actions: acts, Screenshot: *shot || *out != "", Scale: *scale}, *out, *asJSON)
	}
	if *shot || *out != "" || *scale != 0 {
		return cmdenv.Usagef("--screenshot, -o and --scale are for actions: paddock desktop [BOX] -- ACTION ARGS...")
	}
	box, err := cmdenv.BoxOrCurrent(fs.Args())
	if err != nil {
		return err
	}
	name, c, err := e.Connect(box)
	if err != nil {
		return err
	}
	if strings.HasPrefix(c.Base(), "http://paddock") {
		return errors.New("the desktop opens in a browser: log in with the server's http(s) address, not its socket")
	}
	t, err := c.DesktopTicket(e.Ctx, name)
	if err != nil {
		return err
	}
	url := c.Base() + t.Path
	if *asJSON {
		// For programs: the URL, and nothing opened.
		return cmdenv.PrintJSON(e.Stdout, struct {
			api.DesktopTicket
			URL string `json:"url"`
		}{t, url})
	}
	fmt.Fprintln(e.Stdout, url)
	if !*noOpen {
		cmdenv.OpenBrowser(e, url)
	}
	return nil
}

// Dashboard prints a single-use link that signs a browser in to the
// Dashboard as this CLI's user (on BOX's page when one is named), and
// opens it where there is a browser.
func Dashboard(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("dashboard")
	noOpen := fs.Bool("no-open", false, "only print the URL")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	var box string
	switch len(fs.Args()) {
	case 0:
	case 1:
		box = fs.Arg(0)
	default:
		return cmdenv.Usagef("give at most one box")
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	if box != "" {
		if box, err = e.BoxName(box); err != nil {
			return err
		}
	}
	l, err := c.SignInLink(e.Ctx, box)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, l.URL)
	fmt.Fprintf(e.Stderr, "This link signs a browser in once, within %s.\n", time.Until(l.Expires).Round(time.Second))
	if !*noOpen {
		cmdenv.OpenBrowser(e, l.URL)
	}
	return nil
}

// listens says whether ps has port.
func listens(ps []api.Port, port int) bool {
	for _, p := range ps {
		if p.Port == port {
			return true
		}
	}
	return false
}

// Preview lists what listens in a box, with each port's preview URL;
// with a port, prints that one's URL and opens it in a browser signed in
// as this CLI's user, where there is a browser.
func Preview(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("preview")
	noOpen := fs.Bool("no-open", false, "only print the URL")
	asJSON := fs.Bool("json", false, "print JSON")
	wait := fs.Duration("wait", 10*time.Second, "with a port: wait this long for something to listen on it (a server still starting)")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return cmdenv.Usagef("give a box, and a port for its preview URL")
	}
	port := 0
	if fs.NArg() == 2 {
		p, err := strconv.Atoi(fs.Arg(1))
		if err != nil || p < 1 || p > 65535 {
			return cmdenv.Invalidf("port %q: give a number from 1 to 65535", fs.Arg(1))
		}
		port = p
	}
	name, c, err := e.Connect(fs.Arg(0))
	if err != nil {
		return err
	}
	ps, err := c.BoxPorts(e.Ctx, name)
	if err != nil {
		return err
	}
	// A server started a moment ago (in the background, or a dev server
	// still building) is waited for: at most --wait, looking again every
	// 200 ms.
	if port != 0 && !listens(ps, port) && *wait > 0 {
		fmt.Fprintf(e.Stderr, "Waiting up to %s for something to listen on port %d in box %s...\n", *wait, port, name)
		until := time.Now().Add(*wait)
		for !listens(ps, port) && time.Now().Before(until) {
			select {
			case <-e.Ctx.Done():
				return e.Ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
			if ps, err = c.BoxPorts(e.Ctx, name); err != nil {
				return err
			}
		}
	}
	if port == 0 {
		if *asJSON {
			return cmdenv.PrintJSON(e.Stdout, ps)
		}
		if len(ps) == 0 {
			fmt.Fprintf(e.Stderr, "Nothing listens in box %s yet: a server started there (on 0.0.0.0) shows here with its preview URL.\n", name)
			return nil
		}
		tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PORT\tADDRESS\tPREVIEW")
		for _, p := range ps {
			fmt.Fprintf(tw, "%d\t%s\t%s\n", p.Port, p.Address, cmdenv.Dash(p.URL+p.Note))
		}
		return tw.Flush()
	}
	var found *api.Port
	var open []string
	for i, p := range ps {
		open = append(open, strconv.Itoa(p.Port))
		if p.Port == port {
			found = &ps[i]
		}
	}
	switch {
	case found == nil && len(open) == 0:
		return fmt.Errorf("nothing listens on port %d in box %s (nothing listens there at all): start the server first (on 0.0.0.0)", port, name)
	case found == nil:
		return fmt.Errorf("nothing listens on port %d in box %s (ports open: %s)", port, name, strings.Join(open, ", "))
	case found.URL == "" && found.Note != "":
		return fmt.Errorf("port %d of box %s %s", port, name, found.Note)
	case found.URL == "":
		return errors.New("this server serves no previews")
	}
	if *asJSON {
		return cmdenv.PrintJSON(e.Stdout, found)
	}
	fmt.Fprintln(e.Stdout, found.URL)
	if *noOpen {
		fmt.Fprintln(e.Stderr, "It opens in a browser signed in to this server ('paddock dashboard' signs one in).")
		return nil
	}
	// A link that signs a browser in and lands it on the preview: opened
	// here where there is a desktop, else printed for one elsewhere.
	l, err := c.PreviewLink(e.Ctx, name, port)
	if err != nil {
		return err
	}
	if cmdenv.CanOpenBrowser(e) {
		cmdenv.OpenBrowser(e, l.URL)
		return nil
	}
	fmt.Fprintf(e.Stderr, "No browser here. This link signs one in to this server and opens the preview, once, within %s:\n", time.Until(l.Expires).Round(time.Second))
	fmt.Fprintln(e.Stdout, l.URL)
	return nil
}

// desktopActionWords are the CLI's words for the actions: the API's
// names, with '-' for '_' also, and a few short forms.
var desktopActionWords = map[string]string{"click": "left_click", "move": "mouse_move", "drag": "left_click_drag"}

// parseDesktopActions reads "ACTION ARGS... [-- ACTION ARGS...]".
func parseDesktopActions(words []string) ([]api.DesktopAction, error) {
	var groups [][]string
	cur := []string{}
	for _, w := range words {
		if w == "--" {
			if len(cur) > 0 {
				groups = append(groups, cur)
			}
			cur = []string{}
			continue
		}
		cur = append(cur, w)
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	if len(groups) == 0 {
		return nil, cmdenv.Usagef("no action given after --")
	}
	var acts []api.DesktopAction
	for _, g := range groups {
		name := strings.ReplaceAll(g[0], "-", "_")
		if long, ok := desktopActionWords[name]; ok {
			name = long
		}
		if !slices.Contains(api.DesktopActionNames, name) {
			names := slices.Clone(api.DesktopActionNames)
			sort.Strings(names)
			return nil, cmdenv.Invalidf("unknown action %q: give one of %s (or click, move, drag)", g[0], strings.Join(names, ", "))
		}
		a := api.DesktopAction{Action: name}
		args := g[1:]
		ints := func(n int) ([]int, error) {
			if len(args) < n {
				return nil, cmdenv.Usagef("%s: give %d numbers", g[0], n)
			}
			out := make([]int, n)
			for i := range n {
				v, err := strconv.Atoi(args[i])
				if err != nil {
					return nil, cmdenv.Invalidf("%s: %q is not a whole number of pixels", g[0], args[i])
				}
				out[i] = v
			}
			args = args[n:]
			return out, nil
		}
		secs := func() (float64, error) {
			v, err := strconv.ParseFloat(args[0], 64)
			if err != nil {
				return 0, cmdenv.Invalidf("%s: %q is not a number of seconds", g[0], args[0])
			}
			args = args[1:]
			return v, nil
		}
		var err error
		switch name {
		case "key", "type":
			a.Text, args = strings.Join(args, " "), nil
		case "launch":
			a.Target, args = strings.Join(args, " "), nil
		case "mouse_move":
			a.Coordinate, err = ints(2)
		case "left_click", "right_click", "middle_click", "double_click", "triple_click":
			if len(args) > 0 {
				a.Coordinate, err = ints(2)
			}
		case "left_click_drag":
			if len(args) >= 4 {
				if a.StartCoordinate, err = ints(2); err != nil {
					return nil, err
				}
			}
			a.Coordinate, err = ints(2)
		case "scroll":
			if len(args) >= 3 {
				if a.Coordinate, err = ints(2); err != nil {
					return nil, err
				}
			}
			if len(args) == 0 {
				return nil, cmdenv.Usagef("scroll: give [X Y] up|down|left|right [AMOUNT]")
			}
			a.ScrollDirection, args = args[0], args[1:]
			if len(args) > 0 {
				if a.ScrollAmount, err = strconv.Atoi(args[0]); err != nil {
					return nil, cmdenv.Invalidf("scroll: %q is not a whole number of clicks", args[0])
				}
				args = args[1:]
			}
		case "hold_key":
			if len(args) != 2 {
				return nil, cmdenv.Usagef("hold_key: give a key and seconds")
			}
			a.Text, args = args[0], args[1:]
			a.Duration, err = secs()
		case "wait", "wait_idle":
			if len(args) > 0 {
				a.Duration, err = secs()
			} else if name == "wait" {
				return nil, cmdenv.Usagef("wait: give seconds")
			}
		case "zoom":
			a.Region, err = ints(4)
		}
		if err != nil {
			return nil, err
		}
		if len(args) > 0 {
			return nil, cmdenv.Usagef("%s: unexpected %q", g[0], strings.Join(args, " "))
		}
		acts = append(acts, a)
	}
	return acts, nil
}

// desktopActions runs actions on a box's desktop and prints what they
// gave: a line for each that answers something, images as files.
func desktopActions(e *cmdenv.Env, box string, p api.DesktopActionsPost, out string, asJSON bool) error {
	name, c, err := e.Connect(box)
	if err != nil {
		return err
	}
	r, err := c.DesktopActions(e.Ctx, name, p)
	if err != nil {
		return err
	}
	if asJSON {
		return cmdenv.PrintJSON(e.Stdout, r)
	}
	stamp := time.Now().Format("20060102-150405")
	write := func(b64, path string) error {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return fmt.Errorf("the server's image: %w", err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
		return nil
	}
	changing := false
	for i, a := range r.Results {
		switch {
		case a.Image != "":
			path := fmt.Sprintf("%s-%s-%d-%s.png", name, stamp, i, a.Action)
			if err := write(a.Image, path); err != nil {
				return err
			}
			fmt.Fprintf(e.Stdout, "%s: %s\n", a.Action, path)
		case a.Coordinate != nil:
			fmt.Fprintf(e.Stdout, "%s: %d %d\n", a.Action, a.Coordinate[0], a.Coordinate[1])
		case a.Idle != nil:
			word := "idle"
			if !*a.Idle {
				word = "still changing"
				changing = true
			}
			fmt.Fprintf(e.Stdout, "%s: %s\n", a.Action, word)
		case a.Action == "launch" && len(a.Windows) == 0:
			fmt.Fprintf(e.Stdout, "launch: started; no new window seen\n")
		case a.Windows != nil:
			tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WINDOW\tX\tY\tWIDTH\tHEIGHT\tTITLE")
			for _, w := range a.Windows {
				id := w.ID
				if w.Active {
					id += "*"
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", id, w.X, w.Y, w.Width, w.Height, w.Title)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	if r.Screenshot != "" {
		if out == "" {
			out = fmt.Sprintf("%s-%s.png", name, stamp)
		}
		if err := write(r.Screenshot, out); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "screenshot (%dx%d): %s\n", r.Width, r.Height, out)
	}
	if changing {
		// A script waits for a screen that settles: one that did not is
		// not a success.
		return errors.New("wait_idle: the screen was still changing when its wait ran out (duration, 5 s by default, waits longer)")
	}
	return nil
}

// Screenshot saves a PNG of a box's desktop.
func Screenshot(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("screenshot")
	out := fs.StringP("output", "o", "", "PNG file to write (default BOX-TIME.png)")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	box, err := cmdenv.BoxOrCurrent(fs.Args())
	if err != nil {
		return err
	}
	name, c, err := e.Connect(box)
	if err != nil {
		return err
	}
	png, err := c.Screenshot(e.Ctx, name)
	if err != nil {
		return err
	}
	path := *out
	if path == "" {
		path = fmt.Sprintf("%s-%s.png", name, time.Now().Format("20060102-150405"))
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, path)
	return nil
}
