package cli

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"time"
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

// openBrowser opens url where there is a desktop to open it on.
func openBrowser(e *env, url string) {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		if e.getenv("DISPLAY") == "" && e.getenv("WAYLAND_DISPLAY") == "" {
			return
		}
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err == nil {
		go cmd.Wait()
	}
}
