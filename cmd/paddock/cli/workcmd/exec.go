// Package workcmd is the paddock CLI's commands for work in a box: exec,
// jobs, logs, wait, prompt, agents, secret, run, contexts and watch.
package workcmd

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

func Exec(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("exec")
	tty := fs.BoolP("tty", "t", false, "give the command a terminal")
	detach := fs.BoolP("detach", "d", false, "run as a background job; print its id")
	workdir := fs.StringP("workdir", "w", "", "working directory in the box")
	envs := fs.StringArrayP("env", "e", nil, "environment: KEY=VALUE (repeatable)")
	desktop := fs.Bool("desktop", false, "start a GUI program on the box's display, detached; print the job id")
	timeout := fs.String("timeout", "", "end the command after this long (90s, 10m): SIGTERM, SIGKILL 5 s later; it exits 124")
	stdin := fs.Bool("stdin", false, "with --detach: keep the job's input open for 'paddock jobs send'")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if *desktop {
		*detach = true
	}
	if *stdin && !*detach {
		return cmdenv.Usagef("--stdin is for a detached job (--detach); an attached command reads this terminal's input")
	}
	dash := fs.ArgsLenAtDash()
	all := fs.Args()
	var boxArgs, cmd []string
	if dash >= 0 {
		boxArgs, cmd = all[:dash], all[dash:]
	} else if len(all) > 0 {
		boxArgs, cmd = all[:1], all[1:]
	}
	if len(boxArgs) == 0 && dash == 0 {
		boxArgs = []string{"current"} // exec -- CMD: the current box
	}
	if len(boxArgs) != 1 {
		return cmdenv.Usagef("give one box (or none, for the current box), then -- and the command")
	}
	if len(cmd) == 0 {
		return cmdenv.Usagef("no command given after --")
	}
	if *tty && *detach {
		return cmdenv.Usagef("--tty and --detach do not go together")
	}
	env, err := cmdenv.ParseEnv(*envs)
	if err != nil {
		return err
	}
	name, c, err := e.Connect(boxArgs[0])
	if err != nil {
		return err
	}
	post := api.ExecPost{Cmd: cmd, Env: env, WorkDir: *workdir, TTY: *tty, Desktop: *desktop, Timeout: *timeout, Stdin: *stdin}
	if *detach {
		j, err := c.StartJob(e.Ctx, name, post)
		if err != nil {
			return err
		}
		fmt.Fprintln(e.Stdout, j.ID)
		return nil
	}
	streams := client.ExecIO{Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr,
		Notice: func(s string) { fmt.Fprintln(e.Stderr, "paddock: "+s) }}
	if *tty {
		f, ok := e.Stdin.(*os.File)
		if !ok || !term.IsTerminal(int(f.Fd())) {
			return errors.New("--tty needs a terminal on stdin")
		}
		if cols, rows, err := term.GetSize(int(f.Fd())); err == nil {
			post.Rows, post.Cols = uint16(rows), uint16(cols)
		}
		old, err := term.MakeRaw(int(f.Fd()))
		if err != nil {
			return err
		}
		defer term.Restore(int(f.Fd()), old)
		resize := make(chan [2]uint16, 1)
		stop := watchResize(f, resize)
		defer stop()
		streams.Resize = resize
	}
	code, err := c.Exec(e.Ctx, name, post, streams)
	if err != nil {
		return err
	}
	if code == 124 && *timeout != "" {
		fmt.Fprintf(e.Stderr, "paddock: the command ran out of time (--timeout %s)\n", *timeout)
	}
	if code != 0 {
		return cmdenv.ExitError{Code: code}
	}
	return nil
}

// jobTarget parses a job verb's flags and its [BOX] JOB (the current box
// when only a job is given), and connects to the box's server.
func jobTarget(e *cmdenv.Env, fs *pflag.FlagSet, args []string) (box, job string, c *client.Client, err error) {
	if err := cmdenv.Parse(fs, args); err != nil {
		return "", "", nil, err
	}
	switch fs.NArg() {
	case 1:
		box, job = "current", fs.Arg(0)
	case 2:
		box, job = fs.Arg(0), fs.Arg(1)
	default:
		return "", "", nil, cmdenv.Usagef("give a job (of the current box), or a box and a job")
	}
	box, c, err = e.Connect(box)
	return box, job, c, err
}

// Jobs lists a box's jobs (one argument: the box), or signals a job
// or sends it input (kill and send, then [BOX] JOB: two or three
// arguments, which a box name alone never is).
func Jobs(e *cmdenv.Env, args []string) error {
	if len(args) > 0 && (args[0] == "kill" || args[0] == "send") {
		rest := 0
		for _, a := range args[1:] {
			if !strings.HasPrefix(a, "-") {
				rest++
			}
		}
		if rest > 0 || cmdenv.WantsHelp(args[1:]) {
			if args[0] == "kill" {
				return jobsKill(e, args[1:])
			}
			return jobsSend(e, args[1:])
		}
	}
	fetch := func(c *client.Client, box string) ([]api.Job, error) { return c.Jobs(e.Ctx, box) }
	return cmdenv.BoxListing(e, "jobs", args, fetch, "ID\tSTATE\tEXIT\tSTARTED\tCOMMAND", func(j api.Job) []string {
		code := "-"
		if j.ExitCode != nil {
			code = fmt.Sprint(*j.ExitCode)
		}
		return []string{j.ID, jobState(j), code, j.Started.Local().Format(time.RFC3339), fmt.Sprintf("%q", j.Cmd)}
	})
}

func Logs(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("logs")
	follow := fs.BoolP("follow", "f", false, "keep printing until the job ends")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return cmdenv.Usagef("give a box and a job id")
	}
	name, c, err := e.Connect(fs.Arg(0))
	if err != nil {
		return err
	}
	if err := c.JobLog(e.Ctx, name, fs.Arg(1), *follow, e.Stdout); err != nil {
		return err
	}
	// Followed to its end, exit as the job did; a log a stopped box or a
	// lost exec cut short fails either way.
	j, err := c.Job(e.Ctx, name, fs.Arg(1))
	if err != nil {
		return err
	}
	if !*follow && (j.State == "running" || j.ExitCode != nil && j.State == "exited") {
		return nil
	}
	code, err := jobCode(j)
	if err == nil && code != 0 {
		return cmdenv.ExitError{Code: code}
	}
	return err
}

// jobState is a job's state as the jobs table prints it, with why where
// the word alone does not say.
func jobState(j api.Job) string {
	if j.State == "killed" {
		return "killed (box stopped)"
	}
	return j.State
}

// jobCode is the exit code of a job that has ended; an error for one
// that ended without one of its own (its box stopped under it, or it was
// lost).
func jobCode(j api.Job) (int, error) {
	switch {
	case j.State == "running":
		return 0, fmt.Errorf("job %s is still running", j.ID)
	case j.State == "killed":
		return 0, fmt.Errorf("job %s was killed: its box stopped while it ran", j.ID)
	case j.ExitCode != nil:
		return *j.ExitCode, nil
	}
	return 0, fmt.Errorf("job %s was lost (state %s): its exit code is not known", j.ID, j.State)
}

// Wait waits for a job to end and prints its exit code (as docker wait
// does: the command itself exits 0 unless the job's code is not known).
func Wait(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("wait")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return cmdenv.Usagef("give a box and a job id")
	}
	name, c, err := e.Connect(fs.Arg(0))
	if err != nil {
		return err
	}
	for pause := 100 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		j, err := c.Job(e.Ctx, name, fs.Arg(1))
		if err != nil {
			return err
		}
		if j.State != "running" {
			code, err := jobCode(j)
			if err != nil {
				return err
			}
			fmt.Fprintln(e.Stdout, code)
			return nil
		}
		select {
		case <-e.Ctx.Done():
			return e.Ctx.Err()
		case <-time.After(pause):
		}
	}
}

// jobsKill sends a signal to a running job's process group.
func jobsKill(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("jobs")
	sig := fs.StringP("signal", "s", "TERM", "TERM, INT, KILL, HUP, QUIT, USR1 or USR2")
	asJSON := fs.Bool("json", false, "print the job as JSON")
	name, id, c, err := jobTarget(e, fs, args)
	if err != nil {
		return err
	}
	j, err := c.SignalJob(e.Ctx, name, id, *sig)
	if err != nil {
		return err
	}
	if *asJSON {
		return cmdenv.PrintJSON(e.Stdout, j)
	}
	fmt.Fprintf(e.Stderr, "sent %s to job %s (%s); 'paddock wait %s %s' waits for its end\n", strings.TrimPrefix(strings.ToUpper(*sig), "SIG"), j.ID, j.State, name, j.ID)
	return nil
}

// jobsSend sends this command's input (or --text) to a running job's
// input, as it comes; --eof ends the job's input after it.
func jobsSend(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("jobs")
	text := fs.String("text", "", "send this text (and a newline) instead of this command's input")
	eof := fs.Bool("eof", false, "end the job's input after this send")
	asJSON := fs.Bool("json", false, "print what was sent as JSON")
	name, id, c, err := jobTarget(e, fs, args)
	if err != nil {
		return err
	}
	in := e.Stdin
	if fs.Changed("text") {
		in = strings.NewReader(*text + "\n")
	}
	r, err := c.JobInput(e.Ctx, name, id, in, *eof)
	if err != nil {
		return err
	}
	if *asJSON {
		return cmdenv.PrintJSON(e.Stdout, r)
	}
	end := ""
	if fs.Changed("text") {
		end = " (the text and a newline)"
	}
	if r.Closed {
		end += "; its input is ended"
	}
	fmt.Fprintf(e.Stderr, "sent %d bytes to job %s%s\n", r.Bytes, id, end)
	return nil
}
