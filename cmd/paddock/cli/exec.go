package cli

import (
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
)

func cmdExec(e *env, args []string) error {
	fs := flags("exec")
	tty := fs.BoolP("tty", "t", false, "give the command a terminal")
	detach := fs.BoolP("detach", "d", false, "run as a background job; print its id")
	workdir := fs.StringP("workdir", "w", "", "working directory in the box")
	envs := fs.StringArrayP("env", "e", nil, "environment: KEY=VALUE (repeatable)")
	desktop := fs.Bool("desktop", false, "start a GUI program on the box's display, detached; print the job id")
	timeout := fs.String("timeout", "", "end the command after this long (90s, 10m): SIGTERM, SIGKILL 5 s later; it exits 124")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *desktop {
		*detach = true
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
		return usagef("give one box (or none, for the current box), then -- and the command")
	}
	if len(cmd) == 0 {
		return usagef("no command given after --")
	}
	if *tty && *detach {
		return usagef("--tty and --detach do not go together")
	}
	env, err := parseEnv(*envs)
	if err != nil {
		return err
	}
	name, c, err := e.connect(boxArgs[0])
	if err != nil {
		return err
	}
	post := api.ExecPost{Cmd: cmd, Env: env, WorkDir: *workdir, TTY: *tty, Desktop: *desktop, Timeout: *timeout}
	if *detach {
		j, err := c.StartJob(e.ctx, name, post)
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, j.ID)
		return nil
	}
	streams := client.ExecIO{Stdin: e.stdin, Stdout: e.stdout, Stderr: e.stderr,
		Notice: func(s string) { fmt.Fprintln(e.stderr, "paddock: "+s) }}
	if *tty {
		f, ok := e.stdin.(*os.File)
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
	code, err := c.Exec(e.ctx, name, post, streams)
	if err != nil {
		return err
	}
	if code == 124 && *timeout != "" {
		fmt.Fprintf(e.stderr, "paddock: the command ran out of time (--timeout %s)\n", *timeout)
	}
	if code != 0 {
		return exitError{code}
	}
	return nil
}

func cmdJobs(e *env, args []string) error {
	fs := flags("jobs")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("give one box name (or 'current')")
	}
	name, c, err := e.connect(fs.Arg(0))
	if err != nil {
		return err
	}
	js, err := c.Jobs(e.ctx, name)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, js)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tEXIT\tSTARTED\tCOMMAND")
	for _, j := range js {
		code := "-"
		if j.ExitCode != nil {
			code = fmt.Sprint(*j.ExitCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%q\n", j.ID, j.State, code, j.Started.Local().Format(time.RFC3339), j.Cmd)
	}
	return tw.Flush()
}

func cmdLogs(e *env, args []string) error {
	fs := flags("logs")
	follow := fs.BoolP("follow", "f", false, "keep printing until the job ends")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("give a box and a job id")
	}
	name, c, err := e.connect(fs.Arg(0))
	if err != nil {
		return err
	}
	if err := c.JobLog(e.ctx, name, fs.Arg(1), *follow, e.stdout); err != nil || !*follow {
		return err
	}
	// Followed to its end: exit as the job did.
	j, err := c.Job(e.ctx, name, fs.Arg(1))
	if err != nil {
		return err
	}
	code, err := jobCode(j)
	if err == nil && code != 0 {
		return exitError{code}
	}
	return err
}

// jobCode is the exit code of a job that has ended.
func jobCode(j api.Job) (int, error) {
	switch {
	case j.State == "running":
		return 0, fmt.Errorf("job %s is still running", j.ID)
	case j.ExitCode != nil:
		return *j.ExitCode, nil
	}
	return 0, fmt.Errorf("job %s was lost (state %s): its exit code is not known", j.ID, j.State)
}

// cmdWait waits for a job to end and prints its exit code (as docker wait
// does: the command itself exits 0 unless the job's code is not known).
func cmdWait(e *env, args []string) error {
	fs := flags("wait")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("give a box and a job id")
	}
	name, c, err := e.connect(fs.Arg(0))
	if err != nil {
		return err
	}
	for pause := 100 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		j, err := c.Job(e.ctx, name, fs.Arg(1))
		if err != nil {
			return err
		}
		if j.State != "running" {
			code, err := jobCode(j)
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, code)
			return nil
		}
		select {
		case <-e.ctx.Done():
			return e.ctx.Err()
		case <-time.After(pause):
		}
	}
}

func cmdScreenshot(e *env, args []string) error {
	fs := flags("screenshot")
	out := fs.StringP("output", "o", "", "PNG file to write (default BOX-TIME.png)")
	if err := parse(fs, args); err != nil {
		return err
	}
	box, err := boxOrCurrent(fs.Args())
	if err != nil {
		return err
	}
	name, c, err := e.connect(box)
	if err != nil {
		return err
	}
	png, err := c.Screenshot(e.ctx, name)
	if err != nil {
		return err
	}
	path := *out
	if path == "" {
		path = fmt.Sprintf("%s-%s.png", name, time.Now().Format("20060102-150405"))
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, path)
	return nil
}
