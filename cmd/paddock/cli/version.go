package cli

import (
	"encoding/json"
	"fmt"

	"github.com/paddock-dev/paddock/appliance/version"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// cmdVersion prints the client's version and, when a server is set and
// answers, the server's; it warns when they differ, since the server serves
// the client of its own version.
func cmdVersion(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("version")
	asJSON := fs.Bool("json", false, "print JSON for tools")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return cmdenv.Usagef("version takes no arguments")
	}
	out := struct {
		Client string `json:"client"`
		Server string `json:"server,omitempty"`
		URL    string `json:"url,omitempty"`
		Error  string `json:"error,omitempty"`
	}{Client: version.Version}
	if c, err := e.Client(); err == nil {
		out.URL = c.Base()
		if who, err := c.Whoami(e.Ctx); err == nil {
			out.Server = who.Version
		} else {
			out.Error = err.Error()
		}
	}
	if *asJSON {
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(e.Stdout, string(b))
	} else {
		fmt.Fprintln(e.Stdout, "client", out.Client)
		switch {
		case out.Server != "":
			fmt.Fprintf(e.Stdout, "server %s (%s)\n", out.Server, out.URL)
		case out.Error != "":
			fmt.Fprintf(e.Stdout, "server unknown: %s\n", out.Error)
		}
	}
	cmdenv.WarnVersion(e, out.URL, out.Server)
	return nil
}
