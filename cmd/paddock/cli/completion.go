package cli

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// Shell completion. The scripts that 'paddock completion SHELL' prints
// ask the binary itself for candidates: 'paddock __complete WORDS... CUR'
// prints one candidate per line for the word CUR being typed after WORDS.
// Commands and their flags come from the command table (the flags by the
// same probe that --help uses), subcommands from a command's usage line,
// and box, drive and policy names from the server when it answers within a
// second. No candidates means the shell's own file-name completion.

var completionScripts = map[string]string{
	"bash": `# paddock completion for bash: source it, or put it in
# /etc/bash_completion.d/paddock (or ~/.local/share/bash-completion/completions/paddock).
_paddock() {
  local IFS=$'\n'
  local cur="${COMP_WORDS[COMP_CWORD]}"
  COMPREPLY=($(compgen -W "$(paddock __complete "${COMP_WORDS[@]:1:COMP_CWORD-1}" "$cur" 2>/dev/null)" -- "$cur"))
}
complete -o default -F _paddock paddock
`,
	"zsh": `# paddock completion for zsh: source it from ~/.zshrc.
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
_paddock() {
  local IFS=$'\n'
  local cur="${COMP_WORDS[COMP_CWORD]}"
  COMPREPLY=($(compgen -W "$(paddock __complete "${COMP_WORDS[@]:1:COMP_CWORD-1}" "$cur" 2>/dev/null)" -- "$cur"))
}
complete -o default -F _paddock paddock
`,
	"fish": `# paddock completion for fish: save as ~/.config/fish/completions/paddock.fish
complete -c paddock -a '(paddock __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`,
	"powershell": `# paddock completion for PowerShell: add it to your $PROFILE.
Register-ArgumentCompleter -Native -CommandName paddock -ScriptBlock {
  param($wordToComplete, $commandAst, $cursorPosition)
  $words = @($commandAst.CommandElements | Select-Object -Skip 1 | ForEach-Object { $_.ToString() })
  if ($wordToComplete -ne '') { $words = @($words | Select-Object -SkipLast 1) }
  & paddock __complete @words $wordToComplete 2>$null | Where-Object { $_ -like "$wordToComplete*" } |
    ForEach-Object { [System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_) }
}
`,
}

func cmdCompletion(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("completion")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	shells := make([]string, 0, len(completionScripts))
	for k := range completionScripts {
		shells = append(shells, k)
	}
	sort.Strings(shells)
	if fs.NArg() != 1 {
		return cmdenv.Usagef("name a shell: %s", strings.Join(shells, ", "))
	}
	script, ok := completionScripts[fs.Arg(0)]
	if !ok {
		return cmdenv.Invalidf("no completion for %q: the shells are %s", fs.Arg(0), strings.Join(shells, ", "))
	}
	_, err := io.WriteString(e.Stdout, script)
	return err
}

// complete prints the candidates for the last of words after the others.
func complete(e *cmdenv.Env, words []string) {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	cs := candidates(e, before, cur)
	sort.Strings(cs)
	for _, c := range cs {
		if strings.HasPrefix(c, cur) {
			fmt.Fprintln(e.Stdout, c)
		}
	}
}

func candidates(e *cmdenv.Env, before []string, cur string) []string {
	if len(before) == 0 {
		var out []string
		for _, c := range commands {
			out = append(out, c.name)
		}
		return out
	}
	var cmd *command
	for i := range commands {
		if commands[i].name == before[0] {
			cmd = &commands[i]
		}
	}
	if cmd == nil {
		return nil
	}
	if cmd.name == "help" {
		return candidates(e, nil, cur)
	}
	if strings.HasPrefix(cur, "-") {
		return commandFlags(e, *cmd)
	}
	switch before[len(before)-1] {
	case "--policy":
		return append([]string{"allow-all", "deny-all"}, cmdenv.Names(e, "policies")...)
	case "--drive":
		return cmdenv.Names(e, "drives")
	case "--type":
		return api.BoxTypes
	}
	// A flag whose values the usage line lists ("--agent claude|codex").
	if last := before[len(before)-1]; strings.HasPrefix(last, "--") {
		if m := regexp.MustCompile(regexp.QuoteMeta(last) + ` ([a-z0-9-]+(\|[a-z0-9-]+)+)`).FindStringSubmatch(cmd.args); m != nil {
			return strings.Split(m[1], "|")
		}
	}
	if cmd.name == "completion" {
		return []string{"bash", "fish", "powershell", "zsh"}
	}
	// After "--" comes a command for the box: the shell's own completion.
	for _, w := range before[1:] {
		if w == "--" {
			return nil
		}
	}
	positional := 0
	for _, w := range before[1:] {
		if !strings.HasPrefix(w, "-") {
			positional++
		}
	}
	if subs := subcommands(*cmd); len(subs) > 0 {
		if positional == 0 {
			return subs
		}
		if strings.Contains(cmd.name, "drive") && positional == 1 {
			return cmdenv.Names(e, "drives")
		}
		if cmd.name == "policy" && positional == 1 && (before[len(before)-1] == "set" || before[len(before)-1] == "log") {
			return cmdenv.Names(e, "boxes")
		}
		if cmd.name == "policy" && ((positional == 2 && before[1] == "set") || (positional == 1 && before[len(before)-1] == "rm")) {
			if before[1] == "set" {
				return append([]string{"allow-all", "deny-all"}, cmdenv.Names(e, "policies")...)
			}
			return cmdenv.Names(e, "policies")
		}
		return nil
	}
	if positional == 0 && (strings.HasPrefix(cmd.args, "BOX") || strings.HasPrefix(cmd.args, "[BOX]")) {
		return cmdenv.Names(e, "boxes")
	}
	if cmd.name == "rm" {
		return cmdenv.Names(e, "boxes")
	}
	return nil
}

// subcommands reads "ls | invite [--role R] | rm NAME" or
// "new|ls|rm NAME" from a command's usage line.
func subcommands(c command) []string {
	if !strings.Contains(c.args, "|") || strings.HasPrefix(c.args, "[") || strings.HasPrefix(c.args, "BOX") || strings.HasPrefix(c.args, "-") {
		return nil
	}
	var out []string
	for _, alt := range alternatives(c.args) {
		f := strings.Fields(alt)
		if len(f) > 0 && strings.ToLower(f[0]) == f[0] && !strings.HasPrefix(f[0], "-") && !strings.HasPrefix(f[0], "[") {
			out = append(out, f[0])
		}
	}
	return out
}

// alternatives splits a usage line at its top-level "|": not at those
// of a flag's values in brackets ("[--agent claude|codex]").
func alternatives(usage string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range usage {
		switch r {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '|':
			if depth == 0 {
				out = append(out, usage[start:i])
				start = i + 1
			}
		}
	}
	return append(out, usage[start:])
}

// commandFlags are a command's flags, learnt as --help learns them.
func commandFlags(e *cmdenv.Env, c command) []string {
	return append(commandHelpFlags(e, c).Names, "--help")
}
