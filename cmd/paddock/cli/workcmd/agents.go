package workcmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

func Prompt(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("prompt")
	agent := fs.String("agent", "", "agent to run (default: the box's, else the server's)")
	workdir := fs.StringP("workdir", "w", "", "working directory in the box")
	file := fs.String("file", "", "read the task from FILE ('-' for stdin)")
	detach := fs.BoolP("detach", "d", false, "print the job id and return")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	// prompt [BOX] TASK: one argument is the task for the current box (or,
	// with --file, the box); more are the box and the task's words.
	box, words := "current", fs.Args()
	switch {
	case fs.NArg() == 0 && *file == "":
		return cmdenv.Usagef("give a task (and, before it, a box; default: the current box)")
	case fs.NArg() == 1 && *file != "", fs.NArg() > 1:
		box, words = fs.Arg(0), fs.Args()[1:]
	}
	task := strings.Join(words, " ")
	switch {
	case *file != "" && task != "":
		return cmdenv.Usagef("give the task either as arguments or with --file, not both")
	case *file == "-":
		b, err := io.ReadAll(e.Stdin)
		if err != nil {
			return err
		}
		task = string(b)
	case *file != "":
		b, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		task = string(b)
	}
	if strings.TrimSpace(task) == "" {
		return cmdenv.Usagef("the task is empty")
	}
	name, c, err := e.Connect(box)
	if err != nil {
		return err
	}
	j, err := c.Prompt(e.Ctx, name, api.PromptPost{Agent: *agent, Task: task, WorkDir: *workdir})
	if err != nil {
		return err
	}
	if *detach {
		fmt.Fprintln(e.Stdout, j.ID)
		return nil
	}
	if err := c.JobLog(e.Ctx, name, j.ID, true, e.Stdout); err != nil {
		return err
	}
	j, err = c.Job(e.Ctx, name, j.ID)
	if err != nil {
		return err
	}
	if j.ExitCode != nil && *j.ExitCode != 0 {
		return cmdenv.ExitError{Code: *j.ExitCode}
	}
	return nil
}

func Secret(e *cmdenv.Env, args []string) error {
	if len(args) == 0 {
		return cmdenv.Usagef("give set, broker, ls or rm")
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	switch args[0] {
	case "set":
		fs := cmdenv.Flags("secret set")
		shared := fs.Bool("shared", false, "an owner's secret for every user's boxes (those with none of that name)")
		hosts := fs.StringSlice("broker", nil, "broker it: boxes get a stand-in, and the value goes only to this host (repeat, or a comma list), through the broker")
		header := fs.String("header", "", "with --broker: where the value goes: x-api-key, bearer (the default), token, a header's name, or \"NAME: PREFIX\"")
		limit := fs.String("limit", "", "with --broker: requests a box may send with it, as N/s, N/min, N/h or N/day")
		if err := cmdenv.Parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return cmdenv.Usagef("secret set NAME [--shared] [--broker HOST [--header H] [--limit N/min]] (the value on stdin)")
		}
		var brk *api.SecretBroker
		if len(*hosts) > 0 || *header != "" || *limit != "" {
			brk = &api.SecretBroker{Hosts: *hosts, Header: *header, Limit: *limit}
		}
		name := fs.Arg(0)
		if f, ok := e.Stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			fmt.Fprintf(e.Stderr, "Value for %s (not shown): ", name)
			v, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(e.Stderr)
			if err != nil {
				return err
			}
			return setSecret(e, c, name, v, *shared, brk)
		}
		v, err := io.ReadAll(io.LimitReader(e.Stdin, 64<<10+1))
		if err != nil {
			return err
		}
		v = []byte(strings.TrimRight(string(v), "\r\n"))
		if len(v) == 0 {
			return errors.New("no value on stdin")
		}
		return setSecret(e, c, name, v, *shared, brk)
	case "broker":
		fs := cmdenv.Flags("secret broker")
		header := fs.String("header", "", "where the value goes: x-api-key, bearer (the default), token, a header's name, or \"NAME: PREFIX\"")
		limit := fs.String("limit", "", "requests a box may send with it, as N/s, N/min, N/h or N/day")
		if err := cmdenv.Parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() < 1 {
			return cmdenv.Usagef("secret broker NAME [HOST...] [--header H] [--limit N/min] (no host: not brokered)")
		}
		brk := api.SecretBroker{Hosts: fs.Args()[1:], Header: *header, Limit: *limit}
		if err := c.SetSecretBroker(e.Ctx, fs.Arg(0), brk); err != nil {
			return err
		}
		if len(brk.Hosts) == 0 {
			fmt.Fprintf(e.Stdout, "secret %s is not brokered: boxes get its value\n", fs.Arg(0))
		} else {
			fmt.Fprintf(e.Stdout, "secret %s is brokered to %s: boxes get a stand-in\n", fs.Arg(0), strings.Join(brk.Hosts, ", "))
		}
		return nil
	case "ls":
		asJSON, err := cmdenv.JSONFlag("secret ls", args[1:])
		if err != nil {
			return err
		}
		ss, err := c.Secrets(e.Ctx)
		if err != nil {
			return err
		}
		if asJSON {
			return cmdenv.PrintJSON(e.Stdout, ss)
		}
		tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSET\tBROKER\tWHOSE")
		for _, s := range ss {
			whose := "yours"
			switch {
			case s.Mine && s.Shared:
				whose = "yours, shared: every user's boxes get it and their users can read it there"
			case s.Shared:
				whose = "an owner's, shared with you: your boxes get it unless you set your own"
			}
			brk := "-"
			if s.Broker != nil {
				brk = strings.Join(s.Broker.Hosts, ",") + " (" + s.Broker.Header
				if s.Broker.Limit != "" {
					brk += ", " + s.Broker.Limit
				}
				brk += ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Updated.Local().Format(time.RFC3339), brk, whose)
		}
		return tw.Flush()
	case "rm":
		if len(args) != 2 {
			return cmdenv.Usagef("secret rm NAME")
		}
		if err := c.RemoveSecret(e.Ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "removed secret %s\n", args[1])
		return nil
	}
	return cmdenv.Usagef("unknown secret command %q: use set, broker, ls or rm", args[0])
}

// Agents lists the agent table, or with a box the agents installed in
// it and where each one's credentials would come from.
func Agents(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("agents")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return cmdenv.Usagef("give at most one box")
	}
	if fs.NArg() == 1 {
		name, c, err := e.Connect(fs.Arg(0))
		if err != nil {
			return err
		}
		as, err := c.BoxAgents(e.Ctx, name)
		if err != nil {
			return err
		}
		if *asJSON {
			return cmdenv.PrintJSON(e.Stdout, as)
		}
		tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "AGENT\tINSTALLED\tCREDENTIALS")
		for _, a := range as {
			cred := cmdenv.Dash(a.Credentials)
			if len(a.Missing) > 0 {
				cred = "needs secret " + strings.Join(a.Missing, ", ")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", a.Name, map[bool]string{true: "yes", false: "no"}[a.Installed], cred)
		}
		return tw.Flush()
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	as, err := c.Agents(e.Ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return cmdenv.PrintJSON(e.Stdout, as)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tCOMMAND\tSECRETS\tREQUIRED")
	for _, a := range as {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Name, strings.Join(a.Command, " "), cmdenv.Dash(strings.Join(a.Secrets, ",")), cmdenv.Dash(strings.Join(a.Required, ",")))
	}
	return tw.Flush()
}

// setSecret sets a secret and says what was set (never its value).
func setSecret(e *cmdenv.Env, c *client.Client, name string, v []byte, shared bool, brk *api.SecretBroker) error {
	if err := c.SetSecret(e.Ctx, name, v, shared, brk); err != nil {
		return err
	}
	who := "your boxes get"
	if shared {
		who = "every user's boxes without one of that name get"
	}
	what := who + " it as $" + name
	if brk != nil {
		what = who + " a stand-in as $" + name + "; the broker sends the value to " + strings.Join(brk.Hosts, ", ") + " only"
	}
	fmt.Fprintf(e.Stdout, "set secret %s (%d bytes): %s\n", name, len(v), what)
	return nil
}
