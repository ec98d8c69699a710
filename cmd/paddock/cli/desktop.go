package cli

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

// boxOrCurrent is the box of a command that takes at most one: the current box
// when none is given.
func boxOrCurrent(args []string) (string, error) {
	switch len(args) {
	case 0:
		return "current", nil
	case 1:
		return args[0], nil
	}
	return "", usagef("give one box (or none, for the current box)")
}

// cmdDesktop prints the URL of a box's desktop page (a single-use ticket
// in it) and opens it in the browser when there is one.
func cmdDesktop(e *env, args []string) error {
	fs := flags("desktop")
	noOpen := fs.Bool("no-open", false, "only print the URL")
	if err := parse(fs, args); err != nil {
		return err
	}
	box, err := boxOrCurrent(fs.Args())
	if err != nil {
		return err
	}
	name, c, err := e.connect(box)
	if err != nil {
		return err
	}
	if strings.HasPrefix(c.Base(), "http://paddock") {
		return errors.New("the desktop opens in a browser: log in with the server's http(s) address, not its socket")
	}
	t, err := c.DesktopTicket(e.ctx, name)
	if err != nil {
		return err
	}
	url := c.Base() + t.Path
	fmt.Fprintln(e.stdout, url)
	if !*noOpen {
		openBrowser(e, url)
	}
	return nil
}

// cmdDashboard prints a single-use link that signs a browser in to the
// dashboard as this CLI's user (on BOX's page when one is named), and
// opens it where there is a browser.
func cmdDashboard(e *env, args []string) error {
	fs := flags("dashboard")
	noOpen := fs.Bool("no-open", false, "only print the URL")
	if err := parse(fs, args); err != nil {
		return err
	}
	var box string
	switch len(fs.Args()) {
	case 0:
	case 1:
		box = fs.Arg(0)
	default:
		return usagef("give at most one box")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	if box != "" {
		if box, err = e.boxName(box); err != nil {
			return err
		}
	}
	l, err := c.SignInLink(e.ctx, box)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, l.URL)
	fmt.Fprintf(e.stderr, "This link signs a browser in once, within %s.\n", time.Until(l.Expires).Round(time.Second))
	if !*noOpen {
		openBrowser(e, l.URL)
	}
	return nil
}

// cmdPreview lists what listens in a box, with each port's preview URL;
// with a port, prints that one's URL and opens it in a browser signed in
// as this CLI's user, where there is a browser.
func cmdPreview(e *env, args []string) error {
	fs := flags("preview")
	noOpen := fs.Bool("no-open", false, "only print the URL")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usagef("give a box, and a port for its preview URL")
	}
	port := 0
	if fs.NArg() == 2 {
		p, err := strconv.Atoi(fs.Arg(1))
		if err != nil || p < 1 || p > 65535 {
			return invalidf("port %q: give a number from 1 to 65535", fs.Arg(1))
		}
		port = p
	}
	name, c, err := e.connect(fs.Arg(0))
	if err != nil {
		return err
	}
	ps, err := c.BoxPorts(e.ctx, name)
	if err != nil {
		return err
	}
	if port == 0 {
		if *asJSON {
			return printJSON(e.stdout, ps)
		}
		if len(ps) == 0 {
			fmt.Fprintf(e.stderr, "Nothing listens in box %s yet: a server started there (on 0.0.0.0) shows here with its preview URL.\n", name)
			return nil
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PORT\tADDRESS\tPREVIEW")
		for _, p := range ps {
			fmt.Fprintf(tw, "%d\t%s\t%s\n", p.Port, p.Address, dash(p.URL+p.Note))
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
		return fmt.Errorf("nothing listens on port %d in box %s (nothing listens there at all): start the server first", port, name)
	case found == nil:
		return fmt.Errorf("nothing listens on port %d in box %s (ports open: %s)", port, name, strings.Join(open, ", "))
	case found.URL == "" && found.Note != "":
		return fmt.Errorf("port %d of box %s %s", port, name, found.Note)
	case found.URL == "":
		return errors.New("this server serves no previews")
	}
	if *asJSON {
		return printJSON(e.stdout, found)
	}
	fmt.Fprintln(e.stdout, found.URL)
	if *noOpen || !canOpenBrowser(e) {
		fmt.Fprintln(e.stderr, "It opens in a browser signed in to this server ('paddock dashboard' signs one in).")
		return nil
	}
	l, err := c.PreviewLink(e.ctx, name, port)
	if err != nil {
		return err
	}
	openBrowser(e, l.URL)
	return nil
}

// canOpenBrowser says whether there is a desktop to open a URL on.
func canOpenBrowser(e *env) bool {
	switch runtime.GOOS {
	case "darwin", "windows":
		return true
	}
	return e.getenv("DISPLAY") != "" || e.getenv("WAYLAND_DISPLAY") != ""
}

// openBrowser opens url where there is a desktop to open it on.
func openBrowser(e *env, url string) {
	if !canOpenBrowser(e) {
		return
	}
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err == nil {
		go cmd.Wait()
	}
}
