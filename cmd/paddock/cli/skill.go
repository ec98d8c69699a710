package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/paddock-dev/paddock/appliance/skill"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// skillDirs is where each agent reads user-level skills from.
var skillDirs = map[string][]string{
	"claude":   {".claude", "skills"},
	"codex":    {".agents", "skills"},
	"opencode": {".config", "opencode", "skills"},
	"pi":       {".pi", "agent", "skills"},
}

// commandReference is every command's help, as 'paddock help CMD' prints it.
func commandReference(e *cmdenv.Env) string {
	var b strings.Builder
	for _, c := range commands {
		if c.name == "help" {
			continue
		}
		probe := *e
		probe.Stdout = &b
		fmt.Fprintf(&b, "## paddock %s\n\n```\n", c.name)
		showHelp(&probe, c)
		b.WriteString("```\n\n")
	}
	return b.String()
}

func cmdSkill(e *cmdenv.Env, args []string) error {
	if len(args) == 0 {
		return cmdenv.Usagef("give show or install")
	}
	switch args[0] {
	case "show":
		fs := cmdenv.Flags("skill show")
		all := fs.Bool("all", false, "print every file of the skill, not only SKILL.md")
		if err := cmdenv.Parse(fs, args[1:]); err != nil {
			return err
		}
		files := skill.Files(commandReference(e))
		if !*all {
			_, err := e.Stdout.Write(files["SKILL.md"])
			return err
		}
		for _, p := range skill.Paths(files) {
			fmt.Fprintf(e.Stdout, "==> %s <==\n%s\n", p, files[p])
		}
		return nil
	case "install":
		fs := cmdenv.Flags("skill install")
		agent := fs.String("agent", "all", "claude, codex, opencode, pi or all")
		dir := fs.String("dir", "", "write the skill into DIR/paddock instead of the agents' own folders")
		if err := cmdenv.Parse(fs, args[1:]); err != nil {
			return err
		}
		if e.HelpOnly {
			return cmdenv.ErrHelpOnly
		}
		var targets []string
		if *dir != "" {
			targets = []string{*dir}
		} else {
			home, err := os.UserHomeDir()
			if err != nil {
				return err
			}
			names := []string{*agent}
			if *agent == "all" {
				names = []string{"claude", "codex", "opencode", "pi"}
			}
			for _, a := range names {
				parts, ok := skillDirs[a]
				if !ok {
					return cmdenv.Invalidf("no agent %q: use claude, codex, opencode, pi or all", a)
				}
				targets = append(targets, filepath.Join(append([]string{home}, parts...)...))
			}
		}
		files := skill.Files(commandReference(e))
		for _, t := range targets {
			root := filepath.Join(t, skill.Name)
			for _, p := range skill.Paths(files) {
				dst := filepath.Join(root, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(dst, files[p], 0o644); err != nil {
					return err
				}
			}
			fmt.Fprintf(e.Stdout, "wrote the paddock skill to %s\n", root)
		}
		return nil
	}
	return cmdenv.Usagef("unknown skill command %q: use show or install", args[0])
}
