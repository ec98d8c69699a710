package cli

import (
	"fmt"
	"strings"

	"github.com/paddock-dev/paddock/appliance/client"
)

func cmdLogin(e *env, args []string) error {
	fs := flags("login")
	token := fs.String("token", "", "API token (default $PADDOCK_TOKEN)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("give the server URL")
	}
	server := strings.TrimRight(fs.Arg(0), "/")
	if *token == "" {
		*token = e.getenv("PADDOCK_TOKEN")
	}
	if *token == "" {
		return usagef("give --token (local mode prints one; the browser sign-in comes with the appliance)")
	}
	c, err := client.New(server, *token)
	if err != nil {
		return err
	}
	who, err := c.Whoami(e.ctx)
	if err != nil {
		return err
	}
	s, err := e.load()
	if err != nil {
		return err
	}
	if s.Server != server {
		s.Current = ""
	}
	s.Server, s.Token = server, *token
	if err := e.save(s); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Logged in to %s (%s) as %s.\n", server, who.Server, who.Token)
	return nil
}

func cmdLogout(e *env, args []string) error {
	if len(args) != 0 {
		return usagef("logout takes no arguments")
	}
	if err := e.save(settings{}); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "Logged out.")
	return nil
}

func cmdWhoami(e *env, args []string) error {
	if len(args) != 0 {
		return usagef("whoami takes no arguments")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	who, err := c.Whoami(e.ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "token %s on %s\n", who.Token, who.Server)
	return nil
}
