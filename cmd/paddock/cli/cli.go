// Package cli is the paddock command line: one file per group of verbs, each
// a thin layer over package client. It must build for Linux, macOS and
// Windows, and must not import the engine, nftables, Caddy or SQLite (a test
// checks the import graph).
//
// The CLI keeps the server address and the token in config.json in its
// configuration directory (os.UserConfigDir()/paddock, or
// $PADDOCK_CONFIG_DIR), and the current box's name in the file current
// beside it, both written whole (a new file renamed over the old) with
// mode 0600. config.json is flushed to the disk before the command ends;
// current is not, because new and use write it on every call and a flush
// costs tens of milliseconds on some disks: a crash of the computer just
// after one may leave the current box as it was before (or none). A
// config.json from before current existed keeps its "current" until the
// first change. PADDOCK_HOST and PADDOCK_TOKEN override what is stored.
//
// Exit codes: 0 success; for exec, the command's own code; 1 an error the
// server or the system reported; 2 a usage error.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/appliance/version"
)

// env is what a command runs with; tests may replace its parts.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// ctx ends on Ctrl-C.
	ctx context.Context
	// helpOnly runs a command only to learn its flags (see showHelp): it
	// may not reach a server or write the configuration.
	helpOnly bool
	// flagsOnly: and it was given --help, which its flags' parse stops at.
	flagsOnly bool
}

type command struct {
	name  string
	args  string
	short string
	run   func(e *env, args []string) error
}

var commands []command

func init() {
	commands = []command{
		{"login", "URL [--token TOKEN] [--ca-cert FILE]", "log in to a paddockd (in the browser, or with a token) and remember it", cmdLogin},
		{"logout", "", "revoke the token and forget the server", cmdLogout},
		{"whoami", "[--json]", "show the user, server and token in use", cmdWhoami},
		{"user", "ls [--json] | invite [--role member|viewer|admin|owner] | invites [--json] | revoke ID | rm NAME | quota [NAME] [--boxes N] [--running N] [--drives N] [--drive-gib G] [--jobs N] [--types T,...] [--default FIELD,...] [--json]", "users of the server (the owner and admins invite them, list and revoke invitations not used yet, remove users, and set each member's quota)", cmdUser},
		{"group", "ls [--json] | add GROUP USER | rm GROUP USER | quota GROUP [--boxes N] [--running N] [--drives N] [--drive-gib G] [--jobs N] [--types T,...] [--default FIELD,...] [--json]", "groups of users: their members (by hand, or a sign-in provider's groups) and their quota, which holds for members unless set for them (the owner and admins); share a box with one as @GROUP", cmdGroup},
		{"token", "create NAME | ls [--json] | revoke NAME", "API tokens for automation (the value is shown once)", cmdToken},
		{"new", "[--type T] [--ttl D] [--name N] [--image I] [--drive D:/mnt/P] [--env K=V] [--policy P] [--desktop] [--node N] [--node-label K=V] [--label K=V]", "create a box; it becomes current", cmdNew},
		{"ls", "[--label K=V] [--json]", "list boxes (with --label, those with every label given)", cmdLs},
		{"show", "[BOX] [--json]", "show one box (the current box when none is given)", cmdShow},
		{"use", "BOX", "make BOX the current box", cmdUse},
		{"current", "", "print the current box", cmdCurrent},
		{"stop", "[BOX]", "snapshot the box's filesystem, then stop it (the current box when none is given)", cmdStop},
		{"ttl", "BOX DURATION [--json]", "set how long a box runs before it stops with a snapshot: DURATION is counted from now (3h), added to what it has left with a + (+1h), or off (never)", cmdTTL},
		{"start", "[BOX]", "start a stopped box (the current box when none is given)", cmdStart},
		{"resume", "[BOX]", "same as start", cmdStart},
		{"top", "[BOX] [--sort cpu|memory|disk|net|procs|name] [--since 1h] [--once] [--json]", "what running boxes use (CPU, memory, disk, network, processes), live; with a box, its samples since --since (default 15m)", cmdTop},
		{"share", "BOX [USER|@GROUP [--as viewer|member]] [--json]", "share a box with another user: a viewer reads it (state, jobs and logs, files, screenshots, metrics); a member works in it (all but removing, moving, forking, sharing it or changing its policy); without a user, list who it is shared with", cmdShare},
		{"unshare", "BOX USER", "stop sharing a box with a user", cmdUnshare},
		{"snapshot", "BOX", "snapshot the box's filesystem now", cmdSnapshot},
		{"snapshots", "BOX [--json]", "list a box's snapshots", cmdSnapshots},
		{"restore", "BOX [SNAPSHOT]", "bring back a snapshot (default: the newest)", cmdRestore},
		{"move", "BOX [BOX...] --to NODE", "move boxes, with the drives they mount, to another server: stopped with a snapshot, shipped, made and started there (the owner's)", cmdMove},
		{"fork", "BOX [NEW | --name NEW] [--snapshot S] [--node NODE]", "new box (named NEW, or a generated name) from a snapshot of BOX (default: one taken now), on NODE if given", cmdFork},
		{"rm", "BOX... [--force]", "remove boxes (drives are kept); a running one is asked about first", cmdRm},
		{"exec", "[BOX] [-t] [--detach [--stdin]] [--desktop] [--workdir D] [--env K=V] [--timeout D] -- CMD...", "run a command in a box (default: the current box); --detach runs it as a job, whose input --stdin keeps open for 'jobs send'", cmdExec},
		{"jobs", "BOX [--json] | kill [BOX] JOB [--signal TERM|INT|KILL|HUP|QUIT|USR1|USR2] | send [BOX] JOB [--text T] [--eof]", "list a box's detached jobs; signal a running job's process group (kill, TERM by default); send a job started with 'exec --detach --stdin' input (this command's, or --text), --eof ending it", cmdJobs},
		{"watch", "BOX PATH [--recursive] [--count N] [--json]", "print the changes to a folder (or file) of a box as they happen: created, modified, removed, renamed, from inotify in the box", cmdWatch},
		{"run", "BOX [--lang python|node|bash] [--context C] [--timeout D] [-o DIR] [-f FILE] CODE... [--json]", "run code in the box's code interpreter, a Jupyter kernel that keeps its state between runs: its output, the last expression's value, figures written as PNG files; an error's traceback (exit 1); interrupted past --timeout (exit 124)", cmdRun},
		{"contexts", "BOX [--json] | new BOX [NAME] [--lang L] | restart BOX NAME | rm BOX NAME", "the code interpreter's contexts (kernels, each with its own state): list, start one, start one again (its state gone), end one", cmdContexts},
		{"screenshot", "[BOX] [-o FILE]", "save a PNG of the box's desktop (default: the current box)", cmdScreenshot},
		{"desktop", "[BOX] [--no-open] [--json] | [BOX] [--screenshot] [-o FILE] [--scale S] [--json] -- ACTION ARGS... [-- ACTION ARGS...]", "open the box's desktop in the browser (prints a single-use URL); with actions after --, use its mouse and keyboard: click X Y, type TEXT, key ctrl+s, drag X1 Y1 X2 Y2, scroll X Y down 3, windows, launch APP|URL|FILE, wait_idle, zoom X0 Y0 X1 Y1, cursor_position, ... (Anthropic's computer-use actions)", cmdDesktop},
		{"preview", "BOX [PORT] [--wait D] [--no-open] [--json]", "list what listens in a box, with preview URLs; with a port, print its preview URL (waiting up to --wait, 10s, for a server still starting) and open it in a signed-in browser, or, with no browser here, print a one-time link that signs one in to it", cmdPreview},
		{"dashboard", "[BOX] [--no-open]", "sign a browser in to the web dashboard (prints a single-use URL, good for two minutes)", cmdDashboard},
		{"prompt", "[BOX] [--agent A] [--workdir D] [--detach] TASK... | --file F", "hand a coding agent a task; follow its output (one argument: the task, for the current box)", cmdPrompt},
		{"agents", "[BOX] [--json]", "list the agents the server knows; with a box, which it has and whether each has credentials", cmdAgents},
		{"secret", "set NAME [--broker HOST] | broker NAME [HOST...] | ls [--json] | rm NAME", "secrets for agents (value on stdin; never shown back); brokered ones never enter a box", cmdSecret},
		{"images", "[--json]", "list the images you may make boxes from: your own, and those shared with you", cmdImages},
		{"image", "build -t NAME[:TAG] [-f DOCKERFILE] [--policy P] [CONTEXT] | ls [--json] | show IMAGE [--json] | share IMAGE [--user U] [--group G] [--everyone] | rm IMAGE...", "your own box images, built from a Dockerfile in a builder box (the build's steps reach what --policy lets them); 'new --image NAME:TAG' makes a box from one", cmdImage},
		{"key", "add [--name N] FILE | ls [--json] | rm NAME", "SSH public keys that may open sessions to boxes", cmdKey},
		{"ssh", "BOX [SSH OPTIONS] [-- COMMAND]", "ssh into a box through the server's gateway", cmdSSH},
		{"ssh-config", "[BOX...] [--install] [--file PATH]", "print (or write into ~/.ssh/config, in a block of its own) a Host entry per box, BOX.paddock, for ssh, VS Code Remote-SSH and JetBrains Gateway", cmdSSHConfig},
		{"code", "BOX [FOLDER] [--file PATH]", "open VS Code on a box over SSH (Remote-SSH), in FOLDER (default /config)", cmdCode},
		{"logs", "BOX JOB [-f]", "print a job's output (-f: follow it, and exit as the job did); fails for a job its box's stop killed or that was lost", cmdLogs},
		{"wait", "BOX JOB", "wait for a job to end, and print its exit code", cmdWait},
		{"push", "BOX LOCAL --to PATH [--exclude PATTERN] [--no-ignore]", "copy a local file or directory into the box (a folder's .paddockignore, else its .gitignore files, say what is left out)", cmdPush},
		{"pull", "BOX PATH [--to LOCAL]", "copy a file or directory out of the box", cmdPull},
		{"drive", "new NAME | ls [--json] | rm NAME | backup NAME | restore NAME FILE | move NAME --to NODE", "manage drives (volumes that outlive boxes)", cmdDrive},
		{"plan", "[-f PATH] [--var K=V] [--var-file F] [--out FILE] [--destroy] [--drives] [--json]", "show what applying the Boxfile would change (exit 0: none, 2: changes, 1: error)", cmdPlan},
		{"apply", "[FILE | -f PATH ...] [--auto-approve] [--drives] [--json]", "make the project match its Boxfile (or a saved plan)", cmdApply},
		{"destroy", "[-f PATH] [--drives] [--auto-approve]", "remove the project's boxes (drives only with --drives)", cmdDestroy},
		{"validate", "[-f PATH] [--var K=V] [--json]", "check a Boxfile without contacting the server", cmdValidate},
		{"fmt", "[-f PATH] [--check]", "rewrite Boxfiles in canonical form", cmdFmt},
		{"policy", "set BOX MODE|NAME | ls [--json] | new NAME [--allow-domain D] [--allow-cidr C] | rm NAME | log BOX [--json]", "egress policies: allow-all, deny-all or an allowlist", cmdPolicy},
		{"audit", "[--box B] [--user U] [--action A] [--since 1h] [--json] [-f] | verify [--json]", "who did what: the audit log (the owner and admins read all of it; a member, their actions and their boxes), followed with -f; verify checks its chain", cmdAudit},
		{"nodes", "[--json]", "list the servers boxes are placed on (the owner's)", cmdNodes},
		{"node", "add [--json] | label NODE [KEY=VALUE...] | pool NODE [TYPE=COUNT...] | drain NODE | undrain NODE | rm NODE", "let another server join as a node (prints a command with a one-time token), label a node, keep a warm pool of its own on one, drain one (its boxes move to others), or forget one that holds nothing (the owner's)", cmdNode},
		{"version", "[--json]", "show the client's version and the server's", cmdVersion},
		{"skill", "show [--all] | install [--agent claude|codex|opencode|pi|all] [--dir D]", "the Paddock skill that teaches coding agents to use this CLI: print it, or write it where agents read skills", cmdSkill},
		{"mcp", "[install --agent claude|codex|opencode [--dir D]]", "serve the Model Context Protocol on stdio for a coding agent, as you; or add it to an agent's configuration", cmdMCP},
		{"completion", "bash|zsh|fish|powershell", "print a shell completion script (see 'paddock help completion')", cmdCompletion},
		{"help", "[COMMAND]", "show this help, or a command's", cmdHelp},
	}
}

// usageError is a mistake in how a command was called: exit code 2.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// invalidError is a value a command was given that is not one it takes
// (a bad name, duration, path): exit code 2 like a usage error, with the
// message alone (it says what is wrong; the usage line would not).
type invalidError struct{ msg string }

func (i invalidError) Error() string { return i.msg }

func invalidf(format string, args ...any) error { return invalidError{fmt.Sprintf(format, args...)} }

// exitError carries an exit code chosen by a command (exec).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Run runs the CLI and returns its exit code.
func Run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return run(&env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, ctx: ctx}, args)
}

func run(e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		cmdHelp(e, nil)
		return 0
	}
	if args[0] == "__complete" {
		complete(e, args[1:])
		return 0
	}
	if args[0] == "--version" {
		fmt.Fprintln(e.stdout, "paddock", version.Version)
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			if wantsHelp(args[1:]) {
				if len(args) > 1 && subUsage(c, args[1]) != "" {
					return showSubHelp(e, c, args[1])
				}
				return showHelp(e, c)
			}
			err := c.run(e, args[1:])
			return report(e, c, err)
		}
	}
	fmt.Fprintf(e.stderr, "paddock: unknown command %q%s\nRun 'paddock help' for the list.\n", args[0], suggest(args[0]))
	return 2
}

func report(e *env, c command, err error) int {
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(e.stderr, "paddock %s: %s\nusage: paddock %s %s\n", c.name, ue.msg, c.name, c.args)
		return 2
	}
	var ie invalidError
	if errors.As(err, &ie) {
		fmt.Fprintf(e.stderr, "paddock %s: %s\n", c.name, ie.msg)
		return 2
	}
	var hf helpFlags
	if errors.As(err, &hf) {
		showHelp(e, c)
		return 0
	}
	var shown errShown
	if errors.As(err, &shown) {
		fmt.Fprintf(e.stderr, "paddock %s: %s\n", c.name, shown.error)
		return 1
	}
	fmt.Fprintf(e.stderr, "paddock %s: %s\n", c.name, err)
	return 1
}

// borrowed are the words of the tools people come from (docker, kubectl,
// vagrant, their shells) for what Paddock names otherwise; suggest says
// Paddock's name for them before it looks for a near spelling ("cp" is
// one letter from "mcp", which is not what was meant).
var borrowed = map[string][]string{
	"cp": {"push", "pull"}, "copy": {"push", "pull"}, "scp": {"push", "pull"}, "upload": {"push"}, "download": {"pull"},
	"shell": {"ssh", "exec"}, "sh": {"ssh", "exec"}, "bash": {"ssh", "exec"}, "attach": {"ssh", "exec"}, "console": {"ssh", "exec"}, "connect": {"ssh", "exec"},
	"create": {"new"}, "launch": {"new"}, "up": {"new", "apply"},
	"delete": {"rm"}, "remove": {"rm"}, "del": {"rm"},
	"list": {"ls"}, "ps": {"ls"},
	"halt": {"stop"}, "down": {"stop", "destroy"}, "kill": {"stop", "rm"}, "pause": {"stop"},
	"status": {"show"}, "inspect": {"show"}, "describe": {"show"},
	"clone": {"fork"}, "commit": {"snapshot"},
}

func suggest(name string) string {
	if names, ok := borrowed[name]; ok {
		q := make([]string, len(names))
		for i, n := range names {
			q[i] = strconv.Quote(n)
		}
		return fmt.Sprintf(" (Paddock's is %s: 'paddock help %s')", strings.Join(q, " or "), names[0])
	}
	best, bestD := "", 3
	for _, c := range commands {
		if d := distance(name, c.name); d < bestD {
			best, bestD = c.name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the Levenshtein distance.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// wantsHelp says whether a command's arguments ask for its help (before a
// "--", after which they belong to the command in the box).
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "--help":
			return true
		}
	}
	return false
}

// errHelpOnly stops a command run by showHelp before it does anything.
var errHelpOnly = errors.New("help only")

// helpFlags is what parse returns for --help: the flags to show.
type helpFlags struct {
	usages string
	names  []string // --name and -n of every flag
}

func (helpFlags) Error() string { return "help" }

// showHelp prints a command's usage line, what it does and its flags with
// their defaults. The flags are declared where the command runs, so the
// command is run with --help alone, its output discarded, and may not
// reach a server or write the configuration (helpOnly): parse stops it
// there, or client, connect or save do.
func showHelp(e *env, c command) int {
	hf := commandHelpFlags(e, c)
	fmt.Fprintf(e.stdout, "usage: %s\n\n%s\n", strings.TrimSpace("paddock "+c.name+" "+c.args), c.short)
	if subs := subcommands(c); len(subs) > 0 {
		fmt.Fprintf(e.stdout, "\nsubcommands: %s\n", strings.Join(subs, ", "))
	}
	if hf.usages != "" {
		fmt.Fprintf(e.stdout, "\nflags:\n%s", hf.usages)
	}
	if ex := examples[c.name]; len(ex) > 0 {
		fmt.Fprintf(e.stdout, "\nexamples:\n")
		for _, x := range ex {
			fmt.Fprintf(e.stdout, "  %s\n", x)
		}
	}
	return 0
}

// commandHelpFlags learns a command's flags by running it with --help
// alone, its output discarded; it may not reach a server or write the
// configuration (helpOnly).
func commandHelpFlags(e *env, c command) helpFlags {
	probe := *e
	probe.stdout, probe.stderr, probe.helpOnly, probe.flagsOnly = io.Discard, io.Discard, true, true
	var hf helpFlags
	errors.As(c.run(&probe, []string{"--help"}), &hf)
	return hf
}

// showSubHelp prints the help of one of a group's subcommands (secret
// set, jobs kill): its usage line, its group's description, and its own
// flags.
func showSubHelp(e *env, c command, sub string) int {
	probe := *e
	probe.stdout, probe.stderr, probe.helpOnly, probe.flagsOnly = io.Discard, io.Discard, true, true
	var hf helpFlags
	errors.As(c.run(&probe, []string{sub, "--help"}), &hf)
	fmt.Fprintf(e.stdout, "usage: paddock %s %s\n\n%s\n", c.name, subUsage(c, sub), c.short)
	if hf.usages != "" {
		fmt.Fprintf(e.stdout, "\nflags:\n%s", hf.usages)
	}
	for _, x := range examples[c.name] {
		if strings.HasPrefix(x, "paddock "+c.name+" "+sub) {
			fmt.Fprintf(e.stdout, "\nexample:\n  %s\n", x)
			break
		}
	}
	return 0
}

// subUsage is the usage of a group's subcommand sub ("" when c has none
// of that name).
func subUsage(c command, sub string) string {
	for _, alt := range alternatives(c.args) {
		alt = strings.TrimSpace(alt)
		if f := strings.Fields(alt); len(f) > 0 && f[0] == sub {
			return alt
		}
	}
	return ""
}

func cmdHelp(e *env, args []string) error {
	if len(args) >= 1 {
		for _, c := range commands {
			if c.name == args[0] {
				if len(args) == 2 && subUsage(c, args[1]) != "" {
					showSubHelp(e, c, args[1])
				} else {
					showHelp(e, c)
				}
				return nil
			}
		}
		return usagef("no command %q%s", args[0], suggest(args[0]))
	}
	fmt.Fprintln(e.stdout, "paddock: computers for coding agents\n\nUsage: paddock COMMAND [ARGS...]  ('paddock COMMAND --help' for its own)")
	for _, g := range helpGroups {
		fmt.Fprintf(e.stdout, "\n%s:\n", g.title)
		for _, l := range g.cmds {
			fmt.Fprintf(e.stdout, "  %-11s %s\n", l.name, l.summary)
		}
	}
	fmt.Fprintln(e.stdout, "\n'current' stands for the current box wherever a BOX is asked for.")
	return nil
}

// flags makes a flag set for a command; errors are returned, not printed.
func flags(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			hf := helpFlags{usages: fs.FlagUsages()}
			fs.VisitAll(func(f *pflag.Flag) {
				if f.Hidden {
					return
				}
				hf.names = append(hf.names, "--"+f.Name)
				if f.Shorthand != "" {
					hf.names = append(hf.names, "-"+f.Shorthand)
				}
			})
			return hf
		}
		return usagef("%v", err)
	}
	return nil
}

// settings is the CLI's stored configuration.
type settings struct {
	Server  string `json:"server,omitempty"`
	Token   string `json:"token,omitempty"`
	Current string `json:"current,omitempty"`
	// CACert is a CA certificate (PEM) trusted for the server.
	CACert string `json:"ca_cert,omitempty"`
}

func (e *env) configPath() (string, error) {
	if d := e.getenv("PADDOCK_CONFIG_DIR"); d != "" {
		return filepath.Join(d, "config.json"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "paddock", "config.json"), nil
}

// currentPath is the file of the current box's name, beside config.json.
func (e *env) currentPath() (string, error) {
	p, err := e.configPath()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(p), "current"), nil
}

func (e *env) load() (settings, error) {
	var s settings
	p, err := e.configPath()
	if err != nil {
		return s, err
	}
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return s, err
	}
	if err == nil {
		if err := json.Unmarshal(b, &s); err != nil {
			return s, fmt.Errorf("%s: %w", p, err)
		}
	}
	cp, _ := e.currentPath()
	c, err := os.ReadFile(cp)
	if err == nil {
		s.Current = strings.TrimSpace(string(c))
	} else if !errors.Is(err, os.ErrNotExist) {
		return s, err
	}
	return s, nil
}

// save writes the settings: config.json flushed to the disk, and the
// current box.
func (e *env) save(s settings) error {
	if e.helpOnly {
		return errHelpOnly
	}
	p, err := e.configPath()
	if err != nil {
		return err
	}
	cur := s.Current
	s.Current = ""
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := writeSetting(p, append(b, '\n'), true); err != nil {
		return err
	}
	return e.setCurrent(cur)
}

// writeSetting writes one of the CLI's files (mode 0600), making its
// folder if need be.
func writeSetting(p string, b []byte, flush bool) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return writeFileAtomic(p, b, 0o600, flush)
}

// writeFileAtomic writes a file of the mode through a new file renamed
// over it, so that a reader sees the old content or the new; with flush,
// the new content is on the disk before the rename.
func writeFileAtomic(p string, b []byte, mode os.FileMode, flush bool) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if flush {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), p)
}

// client returns an API client from the environment and stored settings.
func (e *env) client() (*client.Client, error) {
	if e.helpOnly && e.flagsOnly {
		// A command run with --help for its flags reads them after it
		// made its client: one that reaches nothing (a closed loopback
		// port), should anything be asked of it first.
		return client.New("http://127.0.0.1:1", "")
	}
	if e.helpOnly {
		return nil, errHelpOnly
	}
	s, err := e.load()
	if err != nil {
		return nil, err
	}
	server, token := e.server(s), s.Token
	if v := e.getenv("PADDOCK_TOKEN"); v != "" {
		token = v
	}
	if server == "" {
		return nil, errors.New("not logged in: run 'paddock login URL --token TOKEN' (paddockd prints both)")
	}
	if token == "" {
		return nil, errors.New("no token: run 'paddock login' or set PADDOCK_TOKEN")
	}
	return client.NewWithCA(server, token, []byte(s.CACert))
}

// server is the address of the server the CLI talks to.
func (e *env) server(s settings) string {
	if v := e.getenv("PADDOCK_HOST"); v != "" {
		return v
	}
	return s.Server
}

// boxName resolves "current" to the current box.
func (e *env) boxName(name string) (string, error) {
	if name != "current" {
		return name, nil
	}
	s, err := e.load()
	if err != nil {
		return "", err
	}
	if s.Current == "" {
		return "", errors.New("no current box: create one with 'paddock new' or choose one with 'paddock use BOX'")
	}
	return s.Current, nil
}

// setCurrent writes the current box's name (none with ""), without
// flushing it to the disk (see the package doc).
func (e *env) setCurrent(name string) error {
	if e.helpOnly {
		return errHelpOnly
	}
	p, err := e.currentPath()
	if err != nil {
		return err
	}
	// An empty file (not none) stands for no current box, over the
	// "current" of an older config.json.
	if name != "" {
		name += "\n"
	}
	return writeSetting(p, []byte(name), false)
}

// connect resolves a box argument ("current" too) and returns a client.
func (e *env) connect(box string) (string, *client.Client, error) {
	name, err := e.boxName(box)
	if err != nil {
		return "", nil, err
	}
	c, err := e.client()
	return name, c, err
}

// jsonFlag parses a listing's arguments: --json and nothing else.
func jsonFlag(name string, args []string) (bool, error) {
	fs := flags(name)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return false, err
	}
	if fs.NArg() != 0 {
		return false, usagef("%s takes no arguments but --json", name)
	}
	return *asJSON, nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printJSONLine prints v as one line of JSON.
func printJSONLine(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

func parseEnv(pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, invalidf("bad --env %q: use KEY=VALUE", p)
		}
		if err := api.ValidEnvName(k); err != nil {
			return nil, invalidf("%v", err)
		}
		m[k] = v
	}
	return m, nil
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// listing prints a list command's items: as JSON (asJSON: the API's own
// shape), or as a table with header's tab-separated columns and a row of
// cells per item.
func listing[T any](w io.Writer, asJSON bool, items []T, header string, row func(T) []string) error {
	if asJSON {
		return printJSON(w, items)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		fmt.Fprintln(tw, strings.Join(row(it), "\t"))
	}
	return tw.Flush()
}
