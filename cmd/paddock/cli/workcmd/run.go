package workcmd

import (
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// Run runs code in a box's code interpreter and prints what it gave:
// its output on stdout and stderr, the last expression's value, images
// written to files; an error's traceback on stderr (exit 1), a timeout
// exit 124.
func Run(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("run")
	lang := fs.String("lang", "python", "python, node or bash (a Jupyter kernel for it must be in the box)")
	cctx := fs.String("context", "", "the context to run in (default: the language's own)")
	timeout := fs.String("timeout", "", "interrupt the code after this long (default 60s)")
	file := fs.StringP("file", "f", "", "run this file's code ('-': this command's input)")
	dir := fs.StringP("output-dir", "o", ".", "where images (a figure's PNG) are written")
	asJSON := fs.Bool("json", false, "print the result as JSON (images base64)")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		return cmdenv.Usagef("give a box, then the code (or -f FILE)")
	}
	code := strings.Join(fs.Args()[1:], " ")
	switch {
	case *file != "" && code != "":
		return cmdenv.Usagef("give the code or -f FILE, not both")
	case *file == "-":
		b, err := io.ReadAll(e.Stdin)
		if err != nil {
			return err
		}
		code = string(b)
	case *file != "":
		b, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		code = string(b)
	case code == "":
		return cmdenv.Usagef("give the code (or -f FILE, '-f -' for this command's input)")
	}
	name, c, err := e.Connect(fs.Arg(0))
	if err != nil {
		return err
	}
	r, err := c.RunCode(e.Ctx, name, api.RunPost{Code: code, Lang: *lang, Context: *cctx, Timeout: *timeout})
	if err != nil {
		return err
	}
	if *asJSON {
		if err := cmdenv.PrintJSON(e.Stdout, r); err != nil {
			return err
		}
	} else {
		if r.Started {
			fmt.Fprintf(e.Stderr, "paddock: context %s started (a new kernel: nothing of earlier runs is in it)\n", r.Context)
		}
		io.WriteString(e.Stdout, r.Stdout)
		io.WriteString(e.Stderr, r.Stderr)
		shown := append(append([]map[string]any{}, r.Display...), r.Result)
		for i, d := range shown {
			if d == nil {
				continue
			}
			if png, ok := d["image/png"].(string); ok {
				b, err := base64.StdEncoding.DecodeString(png)
				if err != nil {
					return fmt.Errorf("the server's image: %w", err)
				}
				path := filepath.Join(*dir, fmt.Sprintf("%s-%s-%d-%d.png", name, r.Context, r.ExecutionCount, i))
				if err := os.WriteFile(path, b, 0o644); err != nil {
					return err
				}
				fmt.Fprintf(e.Stdout, "[image: %s]\n", path)
				continue
			}
			if t, ok := d["text/plain"].(string); ok && i == len(shown)-1 {
				fmt.Fprintln(e.Stdout, t)
			}
		}
		if r.Error != nil {
			fmt.Fprintln(e.Stderr, strings.Join(r.Error.Traceback, "\n"))
			if len(r.Error.Traceback) == 0 {
				fmt.Fprintf(e.Stderr, "%s: %s\n", r.Error.Name, r.Error.Value)
			}
		}
	}
	switch {
	case r.TimedOut:
		fmt.Fprintf(e.Stderr, "paddock: the code ran out of time and was interrupted; context %s keeps its state\n", r.Context)
		return cmdenv.ExitError{Code: 124}
	case r.Error != nil:
		return cmdenv.ExitError{Code: 1}
	}
	return nil
}

// Contexts lists a box's interpreter contexts (one argument: the
// box), or makes, restarts or removes one (new, restart, rm, then the
// box: two or more arguments, which a box name alone never is).
func Contexts(e *cmdenv.Env, args []string) error {
	if len(args) > 1 && (args[0] == "new" || args[0] == "restart" || args[0] == "rm") {
		return contextsDo(e, args[0], args[1:])
	}
	fs := cmdenv.Flags("contexts")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return cmdenv.Usagef("give one box")
	}
	name, c, err := e.Connect(fs.Arg(0))
	if err != nil {
		return err
	}
	cs, err := c.Contexts(e.Ctx, name)
	if err != nil {
		return err
	}
	if *asJSON {
		return cmdenv.PrintJSON(e.Stdout, cs)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTEXT\tLANG\tKERNEL\tSTATE\tSTARTED")
	for _, x := range cs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", x.Name, x.Lang, x.Kernel, x.State, x.Started.Local().Format("2006-01-02 15:04:05"))
	}
	return tw.Flush()
}

func contextsDo(e *cmdenv.Env, verb string, args []string) error {
	fs := cmdenv.Flags("contexts")
	lang := fs.String("lang", "python", "new: python, node or bash")
	asJSON := fs.Bool("json", false, "print the context as JSON")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 || (verb != "new" && fs.NArg() != 2) {
		return cmdenv.Usagef("give a box and a context's name")
	}
	name, c, err := e.Connect(fs.Arg(0))
	if err != nil {
		return err
	}
	var x api.CodeContext
	switch verb {
	case "new":
		x, err = c.CreateContext(e.Ctx, name, api.ContextPost{Name: fs.Arg(1), Lang: *lang})
	case "restart":
		x, err = c.RestartContext(e.Ctx, name, fs.Arg(1))
	case "rm":
		if err := c.RemoveContext(e.Ctx, name, fs.Arg(1)); err != nil {
			return err
		}
		fmt.Fprintf(e.Stderr, "removed context %s\n", fs.Arg(1))
		return nil
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return cmdenv.PrintJSON(e.Stdout, x)
	}
	fmt.Fprintln(e.Stdout, x.Name)
	return nil
}
