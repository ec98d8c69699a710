package accesscmd

import (
	"fmt"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

func Token(e *cmdenv.Env, args []string) error {
	if len(args) == 0 {
		return cmdenv.Usagef("give create, ls or revoke")
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	switch {
	case args[0] == "create" && len(args) == 2:
		t, err := c.CreateToken(e.Ctx, args[1])
		if err != nil {
			return err
		}
		fmt.Fprintln(e.Stdout, t.Token)
		return nil
	case args[0] == "ls":
		asJSON, err := cmdenv.JSONFlag("token ls", args[1:])
		if err != nil {
			return err
		}
		ts, err := c.Tokens(e.Ctx)
		if err != nil {
			return err
		}
		return cmdenv.Listing(e.Stdout, asJSON, ts, "NAME\tCREATED", func(t api.TokenInfo) []string {
			return []string{t.Name, t.Created.Local().Format(time.RFC3339)}
		})
	case args[0] == "revoke" && len(args) == 2:
		if err := c.RevokeToken(e.Ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "revoked token %s\n", args[1])
		return nil
	}
	return cmdenv.Usagef("token create NAME | token ls | token revoke NAME")
}
