package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/skill"
)

// skillCommands are the commands the skill tells an agent to run: the
// lines of the fenced block of "The usual work", then every `paddock …`
// of "Recipes", in the order the text gives them.
func skillCommands(t *testing.T) []string {
	text := string(skill.Files("")["SKILL.md"])
	section := func(title string) string {
		_, rest, ok := strings.Cut(text, "\n## "+title+"\n")
		if !ok {
			t.Fatalf("SKILL.md has no section %q", title)
		}
		body, _, _ := strings.Cut(rest, "\n## ")
		return body
	}
	var cmds []string
	_, block, _ := strings.Cut(section("The usual work"), "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	for _, l := range strings.Split(block, "\n") {
		l, _, _ = strings.Cut(l, "  #")
		if l = strings.TrimSpace(l); l != "" {
			cmds = append(cmds, l)
		}
	}
	for _, m := range regexp.MustCompile("`(paddock [^`]+)`").FindAllStringSubmatch(section("Recipes"), -1) {
		cmds = append(cmds, strings.Join(strings.Fields(m[1]), " "))
	}
	return cmds
}

// Each recipe of the skill runs, as the skill writes it, against a real
// server and box, in a project folder as an agent would have: it does
// what the skill says it does. The outcomes that are not success are
// listed with why (an agent with no credentials on this test server is
// refused, which the skill says to tell the user).
func TestSkillRecipes(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	cmds := skillCommands(t)
	if len(cmds) < 12 {
		t.Fatalf("only %d commands found in the skill's recipes: %q", len(cmds), cmds)
	}
	// The project an agent works on: a test that writes coverage, npm
	// told to ask no registry (nothing leaves this machine), and a
	// Boxfile.
	proj := t.TempDir()
	for name, body := range map[string]string{
		"package.json":      `{"name": "demo", "version": "1.0.0", "scripts": {"test": "mkdir -p coverage && echo covered > coverage/index.txt"}}`,
		"package-lock.json": `{"name": "demo", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "demo", "version": "1.0.0"}}}`,
		".npmrc":            "offline=true\naudit=false\nfund=false\nupdate-notifier=false\n",
		"Boxfile.hcl":       "project = \"recipes\"\n\nbox \"app\" {\n  ttl = \"1h\"\n}\n",
	} {
		if err := os.WriteFile(filepath.Join(proj, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	refused := map[string]string{
		`paddock prompt web --agent claude "fix the failing test"`: `agent "claude" has no credentials in box "web"`,
	}
	env := append(os.Environ(), d.CLIEnv()...)
	env = append(env, "PATH="+filepath.Dir(bins.Paddock)+":"+os.Getenv("PATH"), "PADDOCK_CONFIG_DIR="+t.TempDir(), "DISPLAY=")
	ran := 0
	for _, c := range cmds {
		cmd := exec.Command("sh", "-c", c)
		cmd.Dir, cmd.Env = proj, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		switch want, isRefused := refused[c]; {
		case isRefused:
			if code != 1 || !strings.Contains(out.String(), want) {
				t.Fatalf("%s: exit %d, want 1 and %q\n%s", c, code, want, out.String())
			}
		case strings.HasPrefix(c, "paddock plan"):
			if code != 2 {
				t.Fatalf("%s: exit %d, want 2 (changes)\n%s", c, code, out.String())
			}
		case code != 0:
			t.Fatalf("a recipe of the skill failed: %s: exit %d\n%s", c, code, out.String())
		}
		ran++
		t.Logf("ran %s (exit %d)", c, code)
	}
	// What the recipes said they would do.
	if b, err := os.ReadFile(filepath.Join(proj, "coverage", "index.txt")); err != nil || string(b) != "covered\n" {
		t.Errorf("the pulled coverage: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(proj, "shot.png")); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("the desktop recipe's screenshot: %d bytes, %v", len(b), err)
	}
	if _, err := d.Client().Box(t.Context(), "app"); err != nil {
		t.Errorf("the Boxfile recipe's box: %v", err)
	}
	t.Logf("%d commands of the skill's recipes ran", ran)
}
