package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/skill"
	"github.com/paddock-dev/paddock/boxfiles"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// words splits a shell command line: spaces, single and double quotes.
func words(line string) []string {
	var out []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

var (
	frontMatter = regexp.MustCompile(`(?s)\A---\n(.*?)\n---\n(.*)\z`)
	skillName   = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	inlineCode  = regexp.MustCompile("`(paddock [^`]+)`")
	hclBlock    = regexp.MustCompile("(?s)```hcl\n(.*?)```")
)

// The skill keeps the Agent Skills format's rules, and every paddock
// command it shows (in code blocks and inline) passes the real CLI's
// argument parsing; its Boxfile example decodes with the real decoder.
func TestSkill(t *testing.T) {
	e := &cmdenv.Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }, Ctx: context.Background()}
	files := skill.Files(commandReference(e))
	m := frontMatter.FindStringSubmatch(string(files["SKILL.md"]))
	if m == nil {
		t.Fatal("SKILL.md has no front matter")
	}
	fields := map[string]string{}
	for _, line := range strings.Split(m[1], "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("front matter line %q is not key: value", line)
		}
		fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if n := fields["name"]; n != skill.Name || !skillName.MatchString(n) || len(n) > 64 {
		t.Errorf("name %q", n)
	}
	if d := fields["description"]; d == "" || len(d) > 1024 || strings.ContainsAny(d, "<>") {
		t.Errorf("description of %d characters: %q", len(d), d)
	}
	if lines := strings.Count(m[2], "\n"); lines >= 500 {
		t.Errorf("the body has %d lines", lines)
	}
	checked := 0
	for p, b := range files {
		if p != "SKILL.md" && !regexp.MustCompile(`^references/[^/]+\.md$`).MatchString(p) {
			t.Errorf("%s: files other than SKILL.md belong in references/, one level deep", p)
		}
		var cmds []string
		inBlock := false
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "```") {
				inBlock = !inBlock
				continue
			}
			if inBlock && strings.HasPrefix(line, "paddock ") {
				if i := strings.Index(line, "  #"); i >= 0 {
					line = line[:i]
				}
				cmds = append(cmds, strings.TrimSpace(line))
			}
			if !inBlock {
				for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
					cmds = append(cmds, m[1])
				}
			}
		}
		for _, line := range cmds {
			args := words(line)[1:]
			var c *command
			for i := range commands {
				if commands[i].name == args[0] {
					c = &commands[i]
				}
			}
			if c == nil {
				t.Errorf("%s: %q: no command %q", p, line, args[0])
				continue
			}
			probe := *e
			probe.HelpOnly = true
			err := c.run(&probe, args[1:])
			var ue cmdenv.UsageError
			if errors.As(err, &ue) {
				t.Errorf("%s: %q: %v", p, line, err)
			}
			checked++
		}
		for _, m := range hclBlock.FindAllStringSubmatch(string(b), -1) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "site"), 0o755)
			name := filepath.Join(dir, "Boxfile.hcl")
			if _, diags := boxfiles.Decode(dir, []string{name}, map[string][]byte{name: []byte(m[1])}, boxfiles.Inputs{}); diags.HasErrors() {
				t.Errorf("%s: the Boxfile example: %v", p, diags)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d paddock commands found in the skill", checked)
	}
	t.Logf("%d commands in the skill parse; files %v", checked, skill.Paths(files))
}

// 'skill install --dir' writes the whole skill; 'skill show' prints
// SKILL.md; the command reference has every command of the table.
func TestSkillInstall(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	e := &cmdenv.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }, Ctx: context.Background()}
	if code := run(e, []string{"skill", "install", "--dir", dir}); code != 0 {
		t.Fatalf("install: %d %s", code, out.String())
	}
	ref, err := os.ReadFile(filepath.Join(dir, "paddock", "references", "commands.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range commands {
		if c.name != "help" && !strings.Contains(string(ref), "## paddock "+c.name+"\n") {
			t.Errorf("the command reference lacks %s", c.name)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "paddock", "SKILL.md")); err != nil || !strings.HasPrefix(string(b), "---\nname: paddock\n") {
		t.Fatalf("SKILL.md: %v", err)
	}
	out.Reset()
	if code := run(e, []string{"skill", "show"}); code != 0 || !strings.HasPrefix(out.String(), "---\nname: paddock\n") {
		t.Fatalf("show: %d %.100q", code, out.String())
	}
}
