package accesscmd

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// E2B prints the settings that point E2B's SDKs at the server the CLI
// is logged in to, with a new E2B key (a token of the user's, named
// --name, "e2b" by default; revoked as any token is): the control API's
// and envd's URLs, or with --domain E2B_DOMAIN alone (E2B's own host
// names under the server's, api.HOST and PORT-ID.HOST, which the SDKs
// reach over HTTPS: the front door serves them, as it serves previews).
func E2B(e *cmdenv.Env, args []string) error {
	if len(args) == 0 || args[0] != "env" {
		return cmdenv.Usagef("give env")
	}
	fs := cmdenv.Flags("e2b env")
	name := fs.String("name", "e2b", "the key's name (revoke it with 'paddock token revoke NAME')")
	domain := fs.Bool("domain", false, "print E2B_DOMAIN, E2B's host names under the server's (behind the front door, with its wildcard DNS), not the two URLs")
	if err := cmdenv.Parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cmdenv.Usagef("e2b env takes no arguments, only --name and --domain")
	}
	s, err := e.Load()
	if err != nil {
		return err
	}
	server := strings.TrimSuffix(e.Server(s), "/")
	u, err := url.Parse(server)
	if err != nil {
		return err
	}
	if *domain && (u.Scheme != "https" || (u.Path != "" && u.Path != "/")) {
		return fmt.Errorf("--domain: E2B's SDKs reach a domain's names over HTTPS (https://api.DOMAIN, https://49983-ID.DOMAIN), and %s is not a server behind the front door: leave out --domain", server)
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	k, err := c.CreateE2BKey(e.Ctx, *name)
	if err != nil {
		return err
	}
	if *domain {
		// The URLs, if set, would win over the domain.
		fmt.Fprintf(e.Stdout, "unset E2B_API_URL E2B_SANDBOX_URL\n")
		fmt.Fprintf(e.Stdout, "export E2B_DOMAIN=%s\n", u.Host)
	} else {
		fmt.Fprintf(e.Stdout, "export E2B_API_URL=%s\n", server+api.E2BPath)
		fmt.Fprintf(e.Stdout, "export E2B_SANDBOX_URL=%s\n", server+api.E2BEnvdPath)
	}
	fmt.Fprintf(e.Stdout, "export E2B_API_KEY=%s\n", k.Token)
	fmt.Fprintf(e.Stderr, "# E2B's SDKs (e2b, @e2b/code-interpreter) now reach %s as %s; revoke the key with 'paddock token revoke %s'\n", server, *name, *name)
	return nil
}
