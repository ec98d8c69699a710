package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README's command table names every command of the CLI's own table
// (and no command the CLI does not have).
func TestReadmeListsEveryCommand(t *testing.T) {
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## Commands\n")
	if !ok {
		t.Fatal("the README has no Commands section")
	}
	table, _, _ = strings.Cut(table, "\n\n`")
	listed := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) < 2 {
			continue
		}
		for _, m := range regexp.MustCompile("`([a-z][a-z-]*)").FindAllStringSubmatch(cells[0], -1) {
			listed[m[1]] = true
		}
	}
	have := map[string]bool{}
	for _, c := range commands {
		have[c.name] = true
		if !listed[c.name] {
			t.Errorf("the README's command table does not list %q", c.name)
		}
	}
	for name := range listed {
		if !have[name] {
			t.Errorf("the README's command table lists %q, which the CLI does not have", name)
		}
	}
}
