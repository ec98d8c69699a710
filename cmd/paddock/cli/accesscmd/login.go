// Package accesscmd is the paddock CLI's access commands: login, logout,
// whoami, user, group, token and audit, with users' and groups' quotas.
package accesscmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// Login logs in with a token, or without one through the browser: the
// server shows a short code, the person approves it on the server's page
// (logged in there), and the CLI receives a token of its own.
func Login(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("login")
	token := fs.String("token", "", "API token (default $PADDOCK_TOKEN); without one, approve the login in the browser")
	caFile := fs.String("ca-cert", "", "trust this CA certificate (PEM) for the server, e.g. Caddy's internal CA")
	name := fs.String("name", "", "name of the token the browser login makes (default: this computer's name)")
	noOpen := fs.Bool("no-open", false, "do not open the browser")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return cmdenv.Usagef("give the server URL")
	}
	server := strings.TrimRight(fs.Arg(0), "/")
	if *token == "" {
		*token = e.Getenv("PADDOCK_TOKEN")
	}
	var ca []byte
	if *caFile != "" {
		b, err := os.ReadFile(*caFile)
		if err != nil {
			return err
		}
		ca = b
	}
	if *token == "" {
		anon, err := client.NewWithCA(server, "", ca)
		if err != nil {
			return err
		}
		if *name == "" {
			h, _ := os.Hostname()
			*name = tokenName("cli-" + h)
		}
		d, err := anon.DeviceStart(e.Ctx, *name)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "To log in, open\n\n  %s\n\nand enter the code %s.\n\nWaiting for approval...\n", d.VerificationURIComplete, d.UserCode)
		if !*noOpen {
			cmdenv.OpenBrowser(e, d.VerificationURIComplete)
		}
		ctx, cancel := context.WithTimeout(e.Ctx, time.Duration(d.ExpiresIn)*time.Second)
		defer cancel()
		*token, err = anon.DeviceWait(ctx, d)
		if errors.Is(err, context.DeadlineExceeded) {
			return errors.New("the code expired before it was approved; run 'paddock login' again")
		}
		if err != nil {
			return err
		}
	}
	c, err := client.NewWithCA(server, *token, ca)
	if err != nil {
		return err
	}
	who, err := c.Whoami(e.Ctx)
	var ae *api.Error
	if errors.As(err, &ae) && ae.Code == api.CodeUnauthorized {
		return fmt.Errorf("%s does not take this token (%.8s…): check it ('paddock token create NAME' makes one; paddockd --local prints its own at start), or log in without --token to approve the login in a browser", server, *token)
	}
	if err != nil {
		return err
	}
	s, err := e.Load()
	if err != nil {
		return err
	}
	if s.Server != server {
		s.Current = ""
	}
	s.Server, s.Token, s.CACert = server, *token, string(ca)
	if err := e.Save(s); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "Logged in to %s (%s) as %s.\n", server, who.Server, who.User)
	cmdenv.WarnVersion(e, strings.TrimSuffix(server, "/"), who.Version)
	return nil
}

// tokenName makes a valid token name from free text.
func tokenName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 40 {
		out = out[:40]
	}
	if out == "" {
		return "cli"
	}
	return out
}

// Logout revokes the token on the server (when it can be reached) and
// forgets it here.
func Logout(e *cmdenv.Env, args []string) error {
	if len(args) != 0 {
		return cmdenv.Usagef("logout takes no arguments")
	}
	if c, err := e.Client(); err == nil {
		if err := c.Logout(e.Ctx); err != nil {
			fmt.Fprintf(e.Stderr, "paddock: the server did not revoke the token: %v\n", err)
		}
	}
	if err := e.Save(cmdenv.Settings{}); err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, "Logged out.")
	return nil
}

func Whoami(e *cmdenv.Env, args []string) error {
	asJSON, err := cmdenv.JSONFlag("whoami", args)
	if err != nil {
		return err
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	who, err := c.Whoami(e.Ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return cmdenv.PrintJSON(e.Stdout, who)
	}
	fmt.Fprintf(e.Stdout, "%s (%s) on %s, token %s\n", who.User, who.Role, who.Server, who.Token)
	return nil
}

func User(e *cmdenv.Env, args []string) error {
	if len(args) == 0 {
		return cmdenv.Usagef("give ls, invite, invites, revoke, rm or quota")
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	switch args[0] {
	case "ls":
		asJSON, err := cmdenv.JSONFlag("user ls", args[1:])
		if err != nil {
			return err
		}
		us, err := c.Users(e.Ctx)
		if err != nil {
			return err
		}
		return cmdenv.Listing(e.Stdout, asJSON, us, "NAME\tROLE\tSIGNS IN WITH\tCREATED", func(u api.User) []string {
			with := "tokens and sign-in links"
			switch {
			case u.SSO != "":
				with = u.SSO + " (" + u.Email + ")"
			case u.Password:
				with = "password"
			}
			return []string{u.Name, u.Role, with, u.Created.Local().Format(time.RFC3339)}
		})
	case "invite":
		fs := cmdenv.Flags("user invite")
		role := fs.String("role", "member", "member, viewer (reads the boxes shared with them, changes nothing), admin (as an owner but for the server's settings and its owners) or owner")
		if err := cmdenv.Parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 0 {
			break
		}
		inv, err := c.Invite(e.Ctx, *role)
		if err != nil {
			return err
		}
		link := inv.URL
		if link == "" {
			link = inv.Token
		}
		fmt.Fprintln(e.Stdout, link)
		fmt.Fprintf(e.Stderr, "A one-time link for a new %s; it expires %s. 'paddock user revoke %s' takes it back.\n", inv.Role, inv.Expires.Local().Format(time.RFC1123), inv.ID)
		return nil
	case "invites":
		asJSON, err := cmdenv.JSONFlag("user invites", args[1:])
		if err != nil {
			return err
		}
		is, err := c.Invites(e.Ctx)
		if err != nil {
			return err
		}
		if len(is) == 0 && !asJSON {
			fmt.Fprintln(e.Stderr, "No invitation is pending: 'paddock user invite' makes one.")
			return nil
		}
		return cmdenv.Listing(e.Stdout, asJSON, is, "ID\tROLE\tBY\tMADE\tEXPIRES", func(i api.Invite) []string {
			return []string{i.ID, i.Role, cmdenv.Dash(i.By), i.Created.Local().Format(time.RFC3339), i.Expires.Local().Format(time.RFC3339)}
		})
	case "revoke":
		if len(args) != 2 || strings.HasPrefix(args[1], "-") {
			break
		}
		if err := c.RevokeInvite(e.Ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "revoked invitation %s: its link signs nobody up\n", args[1])
		return nil
	case "rm":
		if len(args) != 2 {
			break
		}
		if err := c.RemoveUser(e.Ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "removed user %s\n", args[1])
		return nil
	case "quota":
		return userQuota(e, c, args[1:])
	}
	return cmdenv.Usagef("user ls | user invite [--role member|viewer|admin|owner] | user invites | user revoke ID | user rm NAME | user quota [NAME] [--boxes N ...]")
}
