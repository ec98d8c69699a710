package workcmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// Watch prints the changes to a path in a box as they happen, until
// Ctrl-C (or --count changes).
func Watch(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("watch")
	recursive := fs.BoolP("recursive", "r", false, "the folders under the path too")
	count := fs.Int("count", 0, "end after this many changes (created, modified, removed, renamed)")
	asJSON := fs.Bool("json", false, "print each event as a JSON line")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return cmdenv.Usagef("give a box and an absolute path in it")
	}
	if *count < 0 {
		return cmdenv.Invalidf("--count %d: give a number of changes, or 0 for no end", *count)
	}
	name, c, err := e.Connect(fs.Arg(0))
	if err != nil {
		return err
	}
	s, err := c.WatchDir(e.Ctx, name, fs.Arg(1), *recursive)
	if err != nil {
		return err
	}
	defer s.Close()
	seen := 0
	for {
		kind, data, err := s.Next()
		if err != nil {
			if e.Ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, io.EOF) {
				fmt.Fprintln(e.Stderr, "paddock: the server ended the watch")
				return nil
			}
			return err
		}
		var ev api.WatchEvent
		if json.Unmarshal(data, &ev) != nil {
			continue
		}
		if *asJSON {
			fmt.Fprintf(e.Stdout, "%s\n", data)
		}
		switch kind {
		case "ready":
			fmt.Fprintf(e.Stderr, "watching %s in %s (%s); Ctrl-C ends\n", ev.Path, name, cmdenv.Plural(int64(ev.Watches), "folder", "folders"))
		case "dropped":
			fmt.Fprintf(e.Stderr, "paddock: %d events were dropped (this client read too slowly)\n", ev.Count)
		case "overflow":
			fmt.Fprintf(e.Stderr, "paddock: events were lost in the box: %s\n", ev.Message)
		case "error":
			return fmt.Errorf("the watch: %s", ev.Message)
		default:
			if !*asJSON {
				line := fmt.Sprintf("%-9s %-5s %s", ev.Type, ev.Kind, ev.Path)
				if ev.From != "" {
					line = fmt.Sprintf("%-9s %-5s %s -> %s", ev.Type, ev.Kind, ev.From, ev.Path)
				}
				if ev.Size != nil && ev.Kind == "file" {
					line += fmt.Sprintf(" (%d bytes)", *ev.Size)
				}
				fmt.Fprintln(e.Stdout, line)
			}
			seen++
			if *count > 0 && seen >= *count {
				return nil
			}
		}
	}
}
