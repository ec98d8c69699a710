package cli

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

func cmdKey(e *env, args []string) error {
	if len(args) == 0 {
		return usagef("give add, ls or rm")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	switch args[0] {
	case "add":
		fs := flags("key add")
		name := fs.String("name", "", "name of the key (default: its comment)")
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usagef("key add [--name N] FILE (a .pub file, or - for stdin)")
		}
		var b []byte
		if fs.Arg(0) == "-" {
			b, err = io.ReadAll(io.LimitReader(e.stdin, 64<<10))
		} else {
			b, err = os.ReadFile(fs.Arg(0))
		}
		if err != nil {
			return err
		}
		k, err := c.AddKey(e.ctx, api.KeyPost{Name: *name, Key: string(b)})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "added %s %s (%s)\n", k.Name, k.Fingerprint, k.Type)
		return nil
	case "ls":
		asJSON, err := jsonFlag("key ls", args[1:])
		if err != nil {
			return err
		}
		ks, err := c.Keys(e.ctx)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(e.stdout, ks)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tTYPE\tFINGERPRINT\tADDED")
		for _, k := range ks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Name, k.Type, k.Fingerprint, k.Created.Local().Format(time.RFC3339))
		}
		return tw.Flush()
	case "rm":
		if len(args) != 2 {
			return usagef("key rm NAME|FINGERPRINT")
		}
		if err := c.RemoveKey(e.ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "removed key %s\n", args[1])
		return nil
	}
	return usagef("unknown key command %q: use add, ls or rm", args[0])
}

// cmdSSH runs the system's ssh client against the server's SSH gateway.
func cmdSSH(e *env, args []string) error {
	if len(args) < 1 {
		return usagef("give a box, then any ssh options or a command")
	}
	name, c, err := e.connect(args[0])
	if err != nil {
		return err
	}
	who, err := c.Whoami(e.ctx)
	if err != nil {
		return err
	}
	if who.SSHPort == 0 {
		return errors.New("the server has no SSH gateway (ssh_listen is off)")
	}
	s, _ := e.load()
	server := s.Server
	if v := e.getenv("PADDOCK_HOST"); v != "" {
		server = v
	}
	host := "127.0.0.1"
	if u, err := url.Parse(server); err == nil && u.Hostname() != "" && (u.Scheme == "http" || u.Scheme == "https") {
		host = u.Hostname()
	}
	// ssh wants options before the destination and the command after it.
	opts, command := args[1:], []string(nil)
	for i, a := range opts {
		if a == "--" {
			opts, command = opts[:i], opts[i+1:]
			break
		}
	}
	sshArgs := append(append(append([]string{"-p", fmt.Sprint(who.SSHPort)}, opts...), name+"@"+host), command...)
	cmd := exec.Command("ssh", sshArgs...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return exitError{ee.ExitCode()}
	}
	return err
}
