package cli

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/paddock-dev/paddock/appliance/version"
)

// cmdVersion prints the client's version and, when a server is set and
// answers, the server's; it warns when they differ, since the server serves
// the client of its own version.
func cmdVersion(e *env, args []string) error {
	fs := flags("version")
	asJSON := fs.Bool("json", false, "print JSON for tools")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("version takes no arguments")
	}
	out := struct {
		Client string `json:"client"`
		Server string `json:"server,omitempty"`
		URL    string `json:"url,omitempty"`
		Error  string `json:"error,omitempty"`
	}{Client: version.Version}
	if c, err := e.client(); err == nil {
		out.URL = c.Base()
		if who, err := c.Whoami(e.ctx); err == nil {
			out.Server = who.Version
		} else {
			out.Error = err.Error()
		}
	}
	if *asJSON {
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
	} else {
		fmt.Fprintln(e.stdout, "client", out.Client)
		switch {
		case out.Server != "":
			fmt.Fprintf(e.stdout, "server %s (%s)\n", out.Server, out.URL)
		case out.Error != "":
			fmt.Fprintf(e.stdout, "server unknown: %s\n", out.Error)
		}
	}
	warnVersion(e, out.URL, out.Server)
	return nil
}

// warnVersion says how to update when the server runs another version.
func warnVersion(e *env, url, server string) {
	if server == "" || server == version.Version {
		return
	}
	fmt.Fprintf(e.stderr, "paddock: this client is %s and the server is %s. Get the server's client with:\n  %s\n",
		version.Version, server, updateCommand(url))
}

// updateCommand is the one line that installs the server's own client.
func updateCommand(url string) string {
	if runtime.GOOS == "windows" {
		return "irm " + url + "/cli/install.ps1 | iex"
	}
	return "curl -fsSL " + url + "/cli/install.sh | sh"
}
