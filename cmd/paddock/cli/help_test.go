package cli

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// Every command of the real table answers --help, -h and 'help CMD' with
// its usage line and what it does (and its flags, where it has any), exits
// 0, and does nothing else: no request reaches the server and no
// configuration is written.
func TestEveryCommandHasHelp(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("help reached the server: %s %s", r.Method, r.URL)
	}))
	defer ts.Close()
	dir := t.TempDir()
	vars := map[string]string{"PADDOCK_HOST": ts.URL, "PADDOCK_TOKEN": "pdk_x", "PADDOCK_CONFIG_DIR": dir}
	call := func(args ...string) (int, string, string) {
		var out, errb strings.Builder
		e := &cmdenv.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }, Ctx: context.Background()}
		return run(e, args), out.String(), errb.String()
	}
	withFlags := 0
	for _, c := range commands {
		if c.name == "help" {
			continue
		}
		code, out, errs := call(c.name, "--help")
		if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: paddock "+c.name) || !strings.Contains(out, c.short) {
			t.Errorf("paddock %s --help: exit %d, stdout %q, stderr %q", c.name, code, out, errs)
		}
		if strings.Contains(out, "\nflags:\n") {
			withFlags++
		}
		for _, other := range [][]string{{c.name, "-h"}, {"help", c.name}} {
			if code, o, _ := call(other...); code != 0 || o != out {
				t.Errorf("paddock %s: exit %d, %q; want what --help prints", strings.Join(other, " "), code, o)
			}
		}
	}
	if withFlags < 15 {
		t.Errorf("only %d commands list flags", withFlags)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("help wrote the configuration: %v", left)
	}
	// After "--" the words belong to the command in the box.
	if cmdenv.WantsHelp([]string{"box", "--", "ls", "-h"}) {
		t.Error("a -h after -- was taken as a request for help")
	}
	if code, _, errs := call("new", "--no-such-flag"); code != 2 || !strings.Contains(errs, "usage: paddock new") {
		t.Errorf("a wrong flag: exit %d, %q", code, errs)
	}
}

// Every command's help has examples, and each example passes the
// command's own argument parsing; a group's help names its subcommands.
func TestEveryCommandHasExamples(t *testing.T) {
	e := &cmdenv.Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }, Ctx: context.Background()}
	for _, c := range commands {
		ex := examples[c.name]
		if len(ex) == 0 {
			t.Errorf("%s has no example", c.name)
		}
		var out strings.Builder
		probe := *e
		probe.Stdout = &out
		showHelp(&probe, c)
		if len(ex) > 0 && !strings.Contains(out.String(), "\nexamples:\n  "+ex[0]+"\n") {
			t.Errorf("%s --help does not show its examples:\n%s", c.name, out.String())
		}
		if subs := subcommands(c); len(subs) > 0 && !strings.Contains(out.String(), "subcommands: "+strings.Join(subs, ", ")) {
			t.Errorf("%s --help does not list its subcommands", c.name)
		}
		// A subcommand is a word, never a piece of a flag's values.
		for _, sub := range subcommands(c) {
			if !regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(sub) || !outsideBrackets(c.args, sub) {
				t.Errorf("%s lists %q as a subcommand", c.name, sub)
			}
		}
		for _, x := range ex {
			args := words(x)
			if args[0] != "paddock" || args[1] != c.name {
				t.Errorf("%s: example %q is not of this command", c.name, x)
				continue
			}
			probe := *e
			probe.HelpOnly = true
			var ue cmdenv.UsageError
			var ie cmdenv.InvalidError
			if err := c.run(&probe, args[2:]); errors.As(err, &ue) || errors.As(err, &ie) {
				t.Errorf("example %q: %v", x, err)
			}
		}
	}
	for name := range examples {
		found := false
		for _, c := range commands {
			found = found || c.name == name
		}
		if !found {
			t.Errorf("examples of %q, which is no command", name)
		}
	}
}

// outsideBrackets says whether word begins an alternative of usage that is
// in no brackets.
func outsideBrackets(usage, word string) bool {
	for i := 0; i <= len(usage)-len(word); i++ {
		if usage[i:i+len(word)] != word || (i > 0 && !strings.HasSuffix(strings.TrimRight(usage[:i], " "), "|")) {
			continue
		}
		if strings.Count(usage[:i], "[") == strings.Count(usage[:i], "]") {
			return true
		}
	}
	return strings.HasPrefix(usage, word)
}

// A value a command does not take is said alone, with exit code 2; a
// command called the wrong way also gets its usage line.
func TestBadValuesAreSaidAlone(t *testing.T) {
	call := func(args ...string) (int, string) {
		var stderr strings.Builder
		e := &cmdenv.Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" }, Ctx: context.Background()}
		return run(e, args), stderr.String()
	}
	for _, args := range [][]string{
		{"new", "--ttl", "soon"}, {"new", "--type", "huge"}, {"new", "--name", "Bad_Name"}, {"new", "--drive", "Bad_Name:/mnt/x"},
		{"new", "--env", "NOEQUALS"}, {"push", "web", ".", "--to", "relative"}, {"pull", "web", "relative"},
		{"skill", "install", "--agent", "nosuch"}, {"completion", "nosuch"},
	} {
		code, stderr := call(args...)
		if code != 2 || strings.Contains(stderr, "usage:") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("paddock %s: exit %d, %q; want 2 and one line that says what is wrong", strings.Join(args, " "), code, stderr)
		}
	}
	if code, stderr := call("show", "a", "b"); code != 2 || !strings.Contains(stderr, "usage: paddock show") {
		t.Errorf("paddock show a b: exit %d, %q; want 2 and the usage line", code, stderr)
	}
}

// Each word borrowed from another tool names real commands, and is not
// itself one (it would never be looked up): checked against the command
// table.
func TestBorrowedWordsNameCommands(t *testing.T) {
	isCommand := func(name string) bool {
		for _, c := range commands {
			if c.name == name {
				return true
			}
		}
		return false
	}
	for word, names := range borrowed {
		if isCommand(word) {
			t.Errorf("%q is a command of its own", word)
		}
		for _, n := range names {
			if !isCommand(n) {
				t.Errorf("%q points at %q, which is no command", word, n)
			}
		}
	}
	if got := suggest("cp"); got != ` (Paddock's is "push" or "pull": 'paddock help push')` {
		t.Errorf("suggest(cp) = %q", got)
	}
	if got := suggest("neww"); got != ` (did you mean "new"?)` {
		t.Errorf("suggest(neww) = %q", got)
	}
}

// 'paddock help' lists every command of the table once, in a group, on
// one short line; a group's subcommand has help of its own, with its own
// flags (paddock secret set --help: --header, --limit, --shared; jobs kill
// --help: --signal), from the command table's usage lines.
func TestHelpIsGroupedAndSubcommandsHaveTheirOwn(t *testing.T) {
	e := func(out *strings.Builder) *cmdenv.Env {
		return &cmdenv.Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: io.Discard, Getenv: func(string) string { return "" }, Ctx: context.Background()}
	}
	var top strings.Builder
	if code := run(e(&top), []string{"help"}); code != 0 {
		t.Fatalf("paddock help: exit %d", code)
	}
	listed := map[string]int{}
	for _, g := range helpGroups {
		if !strings.Contains(top.String(), "\n"+g.title+":\n") {
			t.Errorf("paddock help has no group %q", g.title)
		}
		for _, l := range g.cmds {
			listed[l.name]++
			if len(l.summary) > 60 || strings.Contains(l.summary, "\n") {
				t.Errorf("%s's line is over 60 characters: %q", l.name, l.summary)
			}
		}
	}
	for _, c := range commands {
		if listed[c.name] != 1 {
			t.Errorf("%s is listed %d times in paddock help", c.name, listed[c.name])
		}
		delete(listed, c.name)
	}
	for n := range listed {
		t.Errorf("paddock help lists %s, which the command table does not have", n)
	}
	for _, c := range commands {
		for _, alt := range alternatives(c.args) {
			f := strings.Fields(alt)
			if len(f) == 0 || strings.ToLower(f[0]) != f[0] || strings.HasPrefix(f[0], "-") || strings.HasPrefix(f[0], "[") || c.name == "help" || c.name == "completion" {
				continue
			}
			var out strings.Builder
			if code := run(e(&out), []string{c.name, f[0], "--help"}); code != 0 || !strings.HasPrefix(out.String(), "usage: paddock "+c.name+" "+f[0]) {
				t.Errorf("paddock %s %s --help: exit %d:\n%s", c.name, f[0], code, out.String())
			}
		}
	}
	for cmd, want := range map[string][]string{
		"secret set":   {"--header", "--limit", "--shared", "--broker"},
		"jobs kill":    {"--signal"},
		"jobs send":    {"--text", "--eof"},
		"image build":  {"--policy", "-f,", "-t,"},
		"user invite":  {"--role"},
		"key add":      {"--name"},
		"node add":     {"--json"},
		"drive ls":     {"--json"},
		"policy new":   {"--allow-domain", "--allow-cidr"},
		"contexts new": {"--lang"},
	} {
		var out strings.Builder
		run(e(&out), append(strings.Fields(cmd), "--help"))
		for _, w := range want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("paddock %s --help lacks %s:\n%s", cmd, w, out.String())
			}
		}
	}
}
