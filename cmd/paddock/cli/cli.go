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
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/paddock-dev/paddock/appliance/version"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/accesscmd"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/boxcmd"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/filecmd"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/projectcmd"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/remotecmd"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/servercmd"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/workcmd"
)

type command struct {
	name  string
	args  string
	short string
	run   func(e *cmdenv.Env, args []string) error
}

var commands []command

func init() {
	commands = []command{
		{"login", "URL [--token TOKEN] [--ca-cert FILE]", "log in to a paddockd (in the browser, or with a token) and remember it", accesscmd.Login},
		{"logout", "", "revoke the token and forget the server", accesscmd.Logout},
		{"whoami", "[--json]", "show the user, server and token in use", accesscmd.Whoami},
		{"user", "ls [--json] | invite [--role member|viewer|admin|owner] | invites [--json] | revoke ID | rm NAME | quota [NAME] [--boxes N] [--running N] [--drives N] [--drive-gib G] [--jobs N] [--types T,...] [--default FIELD,...] [--json]", "users of the server (the owner and admins invite them, list and revoke invitations not used yet, remove users, and set each member's quota)", accesscmd.User},
		{"group", "ls [--json] | add GROUP USER | rm GROUP USER | quota GROUP [--boxes N] [--running N] [--drives N] [--drive-gib G] [--jobs N] [--types T,...] [--default FIELD,...] [--json]", "groups of users: their members (by hand, or a sign-in provider's groups) and their quota, which holds for members unless set for them (the owner and admins); share a box with one as @GROUP", accesscmd.Group},
		{"token", "create NAME | ls [--json] | revoke NAME", "API tokens for automation (the value is shown once)", accesscmd.Token},
		{"e2b", "env [--name NAME]", "print the settings that point E2B's SDKs (e2b, @e2b/code-interpreter) at this server, with a new E2B key (a token named NAME, e2b by default)", accesscmd.E2B},
		{"new", "[--type T] [--ttl D] [--name N] [--image I] [--drive D:/mnt/P] [--env K=V] [--policy P] [--desktop] [--node N] [--node-label K=V] [--label K=V]", "create a box; it becomes current", boxcmd.New},
		{"ls", "[--label K=V] [--json]", "list boxes (with --label, those with every label given)", boxcmd.Ls},
		{"show", "[BOX] [--json]", "show one box (the current box when none is given)", boxcmd.Show},
		{"use", "BOX", "make BOX the current box", boxcmd.Use},
		{"current", "", "print the current box", boxcmd.Current},
		{"stop", "[BOX]", "snapshot the box's filesystem, then stop it (the current box when none is given)", boxcmd.Stop},
		{"ttl", "BOX DURATION [--json]", "set how long a box runs before it stops with a snapshot: DURATION is counted from now (3h), added to what it has left with a + (+1h), or off (never)", boxcmd.TTL},
		{"start", "[BOX] [--node NODE]", "start a stopped box (the current box when none is given); with --node, a box whose server is down, on another server from its newest shipped snapshot", boxcmd.Start},
		{"resume", "[BOX]", "same as start", boxcmd.Start},
		{"top", "[BOX] [--sort cpu|memory|disk|net|procs|name] [--since 1h] [--once] [--json]", "what running boxes use (CPU, memory, disk, network, processes), live; with a box, its samples since --since (default 15m)", boxcmd.Top},
		{"share", "BOX [USER|@GROUP [--as viewer|member]] [--json]", "share a box with another user: a viewer reads it (state, jobs and logs, files, screenshots, metrics); a member works in it (all but removing, moving, forking, sharing it or changing its policy); without a user, list who it is shared with", boxcmd.Share},
		{"unshare", "BOX USER", "stop sharing a box with a user", boxcmd.Unshare},
		{"snapshot", "BOX", "snapshot the box's filesystem now", boxcmd.Snapshot},
		{"snapshots", "BOX [--json]", "list a box's snapshots", boxcmd.Snapshots},
		{"restore", "BOX [SNAPSHOT]", "bring back a snapshot (default: the newest)", boxcmd.Restore},
		{"move", "BOX [BOX...] --to NODE", "move boxes, with the drives they mount, to another server: stopped with a snapshot, shipped, made and started there (the owner's)", boxcmd.Move},
		{"fork", "BOX [NEW | --name NEW] [--snapshot S] [--node NODE]", "new box (named NEW, or a generated name) from a snapshot of BOX (default: one taken now), on NODE if given", boxcmd.Fork},
		{"rm", "BOX... [--force]", "remove boxes (drives are kept); a running one is asked about first", boxcmd.Rm},
		{"exec", "[BOX] [-t] [--detach [--stdin]] [--desktop] [--workdir D] [--env K=V] [--timeout D] -- CMD...", "run a command in a box (default: the current box); --detach runs it as a job, whose input --stdin keeps open for 'jobs send'", workcmd.Exec},
		{"jobs", "BOX [--json] | kill [BOX] JOB [--signal TERM|INT|KILL|HUP|QUIT|USR1|USR2] | send [BOX] JOB [--text T] [--eof]", "list a box's detached jobs; signal a running job's process group (kill, TERM by default); send a job started with 'exec --detach --stdin' input (this command's, or --text), --eof ending it", workcmd.Jobs},
		{"watch", "BOX PATH [--recursive] [--count N] [--json]", "print the changes to a folder (or file) of a box as they happen: created, modified, removed, renamed, from inotify in the box", workcmd.Watch},
		{"run", "BOX [--lang python|node|bash] [--context C] [--timeout D] [-o DIR] [-f FILE] CODE... [--json]", "run code in the box's code interpreter, a Jupyter kernel that keeps its state between runs: its output, the last expression's value, figures written as PNG files; an error's traceback (exit 1); interrupted past --timeout (exit 124)", workcmd.Run},
		{"contexts", "BOX [--json] | new BOX [NAME] [--lang L] | restart BOX NAME | rm BOX NAME", "the code interpreter's contexts (kernels, each with its own state): list, start one, start one again (its state gone), end one", workcmd.Contexts},
		{"screenshot", "[BOX] [-o FILE]", "save a PNG of the box's desktop (default: the current box)", remotecmd.Screenshot},
		{"desktop", "[BOX] [--no-open] [--json] | [BOX] [--screenshot] [-o FILE] [--scale S] [--json] -- ACTION ARGS... [-- ACTION ARGS...]", "open the box's desktop in the browser (prints a single-use URL); with actions after --, use its mouse and keyboard: click X Y, type TEXT, key ctrl+s, drag X1 Y1 X2 Y2, scroll X Y down 3, windows, launch APP|URL|FILE, wait_idle, zoom X0 Y0 X1 Y1, cursor_position, ... (Anthropic's computer-use actions)", remotecmd.Desktop},
		{"preview", "BOX [PORT] [--wait D] [--no-open] [--json]", "list what listens in a box, with preview URLs; with a port, print its preview URL (waiting up to --wait, 10s, for a server still starting) and open it in a signed-in browser, or, with no browser here, print a one-time link that signs one in to it", remotecmd.Preview},
		{"dashboard", "[BOX] [--no-open]", "sign a browser in to the web dashboard (prints a single-use URL, good for two minutes)", remotecmd.Dashboard},
		{"prompt", "[BOX] [--agent A] [--workdir D] [--detach] TASK... | --file F", "hand a coding agent a task; follow its output (one argument: the task, for the current box)", workcmd.Prompt},
		{"agents", "[BOX] [--json]", "list the agents the server knows; with a box, which it has and whether each has credentials", workcmd.Agents},
		{"secret", "set NAME [--broker HOST] | broker NAME [HOST...] | ls [--json] | rm NAME", "secrets for agents (value on stdin; never shown back); brokered ones never enter a box", workcmd.Secret},
		{"images", "[--json]", "list the images you may make boxes from: your own, and those shared with you", servercmd.Images},
		{"image", "build -t NAME[:TAG] [-f DOCKERFILE] [--policy P] [CONTEXT] | ls [--json] | show IMAGE [--json] | share IMAGE [--user U] [--group G] [--everyone] | rm IMAGE...", "your own box images, built from a Dockerfile in a builder box (the build's steps reach what --policy lets them); 'new --image NAME:TAG' makes a box from one", servercmd.Image},
		{"key", "add [--name N] FILE | ls [--json] | rm NAME", "SSH public keys that may open sessions to boxes", remotecmd.Key},
		{"ssh", "BOX [SSH OPTIONS] [-- COMMAND]", "ssh into a box through the server's gateway", remotecmd.SSH},
		{"ssh-config", "[BOX...] [--install] [--file PATH]", "print (or write into ~/.ssh/config, in a block of its own) a Host entry per box, BOX.paddock, for ssh, VS Code Remote-SSH and JetBrains Gateway", remotecmd.SSHConfig},
		{"code", "BOX [FOLDER] [--file PATH]", "open VS Code on a box over SSH (Remote-SSH), in FOLDER (default /config)", remotecmd.Code},
		{"logs", "BOX JOB [-f]", "print a job's output (-f: follow it, and exit as the job did); fails for a job its box's stop killed or that was lost", workcmd.Logs},
		{"wait", "BOX JOB", "wait for a job to end, and print its exit code", workcmd.Wait},
		{"push", "BOX LOCAL --to PATH [--exclude PATTERN] [--no-ignore]", "copy a local file or directory into the box (a folder's .paddockignore, else its .gitignore files, say what is left out)", filecmd.Push},
		{"pull", "BOX PATH [--to LOCAL]", "copy a file or directory out of the box", filecmd.Pull},
		{"drive", "new NAME | ls [--json] | rm NAME | backup NAME | restore NAME FILE | move NAME --to NODE", "manage drives (volumes that outlive boxes)", filecmd.Drive},
		{"plan", "[-f PATH] [--var K=V] [--var-file F] [--out FILE] [--destroy] [--drives] [--json]", "show what applying the Boxfile would change (exit 0: none, 2: changes, 1: error)", projectcmd.Plan},
		{"apply", "[FILE | -f PATH ...] [--auto-approve] [--drives] [--json]", "make the project match its Boxfile (or a saved plan)", projectcmd.Apply},
		{"destroy", "[-f PATH] [--drives] [--auto-approve]", "remove the project's boxes (drives only with --drives)", projectcmd.Destroy},
		{"validate", "[-f PATH] [--var K=V] [--json]", "check a Boxfile without contacting the server", projectcmd.Validate},
		{"fmt", "[-f PATH] [--check]", "rewrite Boxfiles in canonical form", projectcmd.Fmt},
		{"policy", "set BOX MODE|NAME | ls [--json] | new NAME [--allow-domain D] [--allow-cidr C] | rm NAME | log BOX [--json]", "egress policies: allow-all, deny-all or an allowlist", servercmd.Policy},
		{"audit", "[--box B] [--user U] [--action A] [--since 1h] [--json] [-f] | verify [--json]", "who did what: the audit log (the owner and admins read all of it; a member, their actions and their boxes), followed with -f; verify checks its chain", accesscmd.Audit},
		{"nodes", "[--json]", "list the servers boxes are placed on (the owner's)", servercmd.Nodes},
		{"node", "add [--json] | label NODE [KEY=VALUE...] | pool NODE [TYPE=COUNT...] | drain NODE | undrain NODE | lost NODE | rm NODE", "let another server join as a node (prints a command with a one-time token), label a node, keep a warm pool of its own on one, drain one (its boxes move to others), declare one that is gone lost (its boxes are made again on others from their shipped snapshots), or forget one that holds nothing (the owner's)", servercmd.Node},
		{"version", "[--json]", "show the client's version and the server's", cmdVersion},
		{"skill", "show [--all] | install [--agent claude|codex|opencode|pi|all] [--dir D]", "the Paddock skill that teaches coding agents to use this CLI: print it, or write it where agents read skills", cmdSkill},
		{"mcp", "[install --agent claude|codex|opencode [--dir D]]", "serve the Model Context Protocol on stdio for a coding agent, as you; or add it to an agent's configuration", cmdMCP},
		{"completion", "bash|zsh|fish|powershell", "print a shell completion script (see 'paddock help completion')", cmdCompletion},
		{"help", "[COMMAND]", "show this help, or a command's", cmdHelp},
	}
}

// Run runs the CLI and returns its exit code.
func Run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return run(&cmdenv.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Ctx: ctx}, args)
}

func run(e *cmdenv.Env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		cmdHelp(e, nil)
		return 0
	}
	if args[0] == "__complete" {
		complete(e, args[1:])
		return 0
	}
	if args[0] == "--version" {
		fmt.Fprintln(e.Stdout, "paddock", version.Version)
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			if cmdenv.WantsHelp(args[1:]) {
				if len(args) > 1 && subUsage(c, args[1]) != "" {
					return showSubHelp(e, c, args[1])
				}
				return showHelp(e, c)
			}
			err := c.run(e, args[1:])
			return report(e, c, err)
		}
	}
	fmt.Fprintf(e.Stderr, "paddock: unknown command %q%s\nRun 'paddock help' for the list.\n", args[0], suggest(args[0]))
	return 2
}

func report(e *cmdenv.Env, c command, err error) int {
	if err == nil {
		return 0
	}
	var ee cmdenv.ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	var ue cmdenv.UsageError
	if errors.As(err, &ue) {
		fmt.Fprintf(e.Stderr, "paddock %s: %s\nusage: paddock %s %s\n", c.name, ue.Msg, c.name, c.args)
		return 2
	}
	var ie cmdenv.InvalidError
	if errors.As(err, &ie) {
		fmt.Fprintf(e.Stderr, "paddock %s: %s\n", c.name, ie.Msg)
		return 2
	}
	var hf cmdenv.HelpFlags
	if errors.As(err, &hf) {
		showHelp(e, c)
		return 0
	}
	var shown cmdenv.ErrShown
	if errors.As(err, &shown) {
		fmt.Fprintf(e.Stderr, "paddock %s: %s\n", c.name, shown.Err)
		return 1
	}
	fmt.Fprintf(e.Stderr, "paddock %s: %s\n", c.name, err)
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

// showHelp prints a command's usage line, what it does and its flags with
// their defaults. The flags are declared where the command runs, so the
// command is run with --help alone, its output discarded, and may not
// reach a server or write the configuration (helpOnly): parse stops it
// there, or client, connect or save do.
func showHelp(e *cmdenv.Env, c command) int {
	hf := commandHelpFlags(e, c)
	fmt.Fprintf(e.Stdout, "usage: %s\n\n%s\n", strings.TrimSpace("paddock "+c.name+" "+c.args), c.short)
	if subs := subcommands(c); len(subs) > 0 {
		fmt.Fprintf(e.Stdout, "\nsubcommands: %s\n", strings.Join(subs, ", "))
	}
	if hf.Usages != "" {
		fmt.Fprintf(e.Stdout, "\nflags:\n%s", hf.Usages)
	}
	if ex := examples[c.name]; len(ex) > 0 {
		fmt.Fprintf(e.Stdout, "\nexamples:\n")
		for _, x := range ex {
			fmt.Fprintf(e.Stdout, "  %s\n", x)
		}
	}
	return 0
}

// commandHelpFlags learns a command's flags by running it with --help
// alone, its output discarded; it may not reach a server or write the
// configuration (helpOnly).
func commandHelpFlags(e *cmdenv.Env, c command) cmdenv.HelpFlags {
	probe := *e
	probe.Stdout, probe.Stderr, probe.HelpOnly, probe.FlagsOnly = io.Discard, io.Discard, true, true
	var hf cmdenv.HelpFlags
	errors.As(c.run(&probe, []string{"--help"}), &hf)
	return hf
}

// showSubHelp prints the help of one of a group's subcommands (secret
// set, jobs kill): its usage line, its group's description, and its own
// flags.
func showSubHelp(e *cmdenv.Env, c command, sub string) int {
	probe := *e
	probe.Stdout, probe.Stderr, probe.HelpOnly, probe.FlagsOnly = io.Discard, io.Discard, true, true
	var hf cmdenv.HelpFlags
	errors.As(c.run(&probe, []string{sub, "--help"}), &hf)
	fmt.Fprintf(e.Stdout, "usage: paddock %s %s\n\n%s\n", c.name, subUsage(c, sub), c.short)
	if hf.Usages != "" {
		fmt.Fprintf(e.Stdout, "\nflags:\n%s", hf.Usages)
	}
	for _, x := range examples[c.name] {
		if strings.HasPrefix(x, "paddock "+c.name+" "+sub) {
			fmt.Fprintf(e.Stdout, "\nexample:\n  %s\n", x)
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

func cmdHelp(e *cmdenv.Env, args []string) error {
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
		return cmdenv.Usagef("no command %q%s", args[0], suggest(args[0]))
	}
	fmt.Fprintln(e.Stdout, "paddock: computers for coding agents\n\nUsage: paddock COMMAND [ARGS...]  ('paddock COMMAND --help' for its own)")
	for _, g := range helpGroups {
		fmt.Fprintf(e.Stdout, "\n%s:\n", g.title)
		for _, l := range g.cmds {
			fmt.Fprintf(e.Stdout, "  %-11s %s\n", l.name, l.summary)
		}
	}
	fmt.Fprintln(e.Stdout, "\n'current' stands for the current box wherever a BOX is asked for.")
	return nil
}
