package remotecmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

func Key(e *cmdenv.Env, args []string) error {
	if len(args) == 0 {
		return cmdenv.Usagef("give add, ls or rm")
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	switch args[0] {
	case "add":
		fs := cmdenv.Flags("key add")
		name := fs.String("name", "", "name of the key (default: its comment)")
		if err := cmdenv.Parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return cmdenv.Usagef("key add [--name N] FILE (a .pub file, or - for stdin)")
		}
		var b []byte
		if fs.Arg(0) == "-" {
			b, err = io.ReadAll(io.LimitReader(e.Stdin, 64<<10))
		} else {
			b, err = os.ReadFile(fs.Arg(0))
		}
		if err != nil {
			return err
		}
		k, err := c.AddKey(e.Ctx, api.KeyPost{Name: *name, Key: string(b)})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "added %s %s (%s)\n", k.Name, k.Fingerprint, k.Type)
		return nil
	case "ls":
		asJSON, err := cmdenv.JSONFlag("key ls", args[1:])
		if err != nil {
			return err
		}
		ks, err := c.Keys(e.Ctx)
		if err != nil {
			return err
		}
		return cmdenv.Listing(e.Stdout, asJSON, ks, "NAME\tTYPE\tFINGERPRINT\tADDED", func(k api.Key) []string {
			return []string{k.Name, k.Type, k.Fingerprint, k.Created.Local().Format(time.RFC3339)}
		})
	case "rm":
		if len(args) != 2 {
			return cmdenv.Usagef("key rm NAME|FINGERPRINT")
		}
		if err := c.RemoveKey(e.Ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "removed key %s\n", args[1])
		return nil
	}
	return cmdenv.Usagef("unknown key command %q: use add, ls or rm", args[0])
}

// SSH runs the system's ssh client against the server's SSH gateway.
func SSH(e *cmdenv.Env, args []string) error {
	if len(args) < 1 {
		return cmdenv.Usagef("give a box, then any ssh options or a command")
	}
	name, c, err := e.Connect(args[0])
	if err != nil {
		return err
	}
	// A box that is not there (or not the user's) is said as the API says
	// it, not as the gateway's refusal of the key; nor is a user without
	// a key left to that refusal.
	if _, err := c.Box(e.Ctx, name); err != nil {
		return err
	}
	ks := listKeys(e, c)
	if err := checkKeys(ks); err != nil {
		return err
	}
	// The gateway's host key, as the server says it over its API (whose
	// connection is checked by TLS), is the only one ssh trusts for it,
	// from a known_hosts file of the CLI's own: no question on a first
	// connection, and no other key accepted later.
	host, port, pin, err := gateway(e, c, ks)
	if err != nil {
		return err
	}
	// ssh wants options before the destination and the command after it.
	opts, command := args[1:], []string(nil)
	for i, a := range opts {
		if a == "--" {
			opts, command = opts[:i], opts[i+1:]
			break
		}
	}
	sshArgs := append(append(append(append([]string{"-p", fmt.Sprint(port)}, pin...), opts...), name+"@"+host), command...)
	cmd := exec.Command("ssh", sshArgs...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.Stdin, e.Stdout, e.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return cmdenv.ExitError{Code: ee.ExitCode()}
	}
	return err
}

// sshKeys is the user's SSH keys on the server, listed once for a
// command: the hint when there are none (checkKeys) and the identity ssh
// is given (gateway) both read it. ok is false when the listing failed:
// ssh then says what it says.
type sshKeys struct {
	keys []api.Key
	ok   bool
}

func listKeys(e *cmdenv.Env, c *client.Client) sshKeys {
	ks, err := c.Keys(e.Ctx)
	return sshKeys{keys: ks, ok: err == nil}
}

// checkKeys says, when the user has no SSH key on the server, how to add
// one: the gateway takes keys only, and ssh's own refusal ("Permission
// denied (publickey)") does not say so. A listing that failed leaves it
// to ssh.
func checkKeys(ks sshKeys) error {
	if !ks.ok || len(ks.keys) > 0 {
		return nil
	}
	hint := "make one (ssh-keygen -t ed25519), then add it: paddock key add ~/.ssh/id_ed25519.pub"
	if home, err := os.UserHomeDir(); err == nil {
		for _, f := range []string{"id_ed25519.pub", "id_ecdsa.pub", "id_rsa.pub"} {
			if _, err := os.Stat(filepath.Join(home, ".ssh", f)); err == nil {
				hint = "add yours: paddock key add ~/.ssh/" + f
				break
			}
		}
	}
	return fmt.Errorf("you have no SSH key on this server, and its SSH gateway lets in keys only: %s", hint)
}

// pinHostKey writes the gateway's host key to the CLI's own known_hosts
// file and returns the ssh options that trust it alone. A server that
// does not say its key leaves ssh to its usual checks.
func pinHostKey(e *cmdenv.Env, host string, port int, key string) ([]string, error) {
	if key == "" {
		return nil, nil
	}
	cp, err := e.ConfigPath()
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(cp)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "known_hosts")
	line := fmt.Sprintf("[%s]:%d %s\n", host, port, key)
	if err := os.WriteFile(file, []byte(line), 0o600); err != nil {
		return nil, err
	}
	return []string{"-o", "UserKnownHostsFile=" + file, "-o", "StrictHostKeyChecking=yes", "-o", "GlobalKnownHostsFile=/dev/null"}, nil
}
