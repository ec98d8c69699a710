package cli

import (
	"fmt"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

func cmdToken(e *env, args []string) error {
	if len(args) == 0 {
		return usagef("give create, ls or revoke")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	switch {
	case args[0] == "create" && len(args) == 2:
		t, err := c.CreateToken(e.ctx, args[1])
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, t.Token)
		return nil
	case args[0] == "ls":
		asJSON, err := jsonFlag("token ls", args[1:])
		if err != nil {
			return err
		}
		ts, err := c.Tokens(e.ctx)
		if err != nil {
			return err
		}
		return listing(e.stdout, asJSON, ts, "NAME\tCREATED", func(t api.TokenInfo) []string {
			return []string{t.Name, t.Created.Local().Format(time.RFC3339)}
		})
	case args[0] == "revoke" && len(args) == 2:
		if err := c.RevokeToken(e.ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "revoked token %s\n", args[1])
		return nil
	}
	return usagef("token create NAME | token ls | token revoke NAME")
}
