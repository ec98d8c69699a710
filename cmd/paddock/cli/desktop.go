package cli

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
)

// cmdDesktop prints the URL of a box's desktop page (a single-use ticket
// in it) and opens it in the browser when there is one.
func cmdDesktop(e *env, args []string) error {
	fs := flags("desktop")
	noOpen := fs.Bool("no-open", false, "only print the URL")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("give one box")
	}
	name, c, err := e.connect(fs.Arg(0))
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
