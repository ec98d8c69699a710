package cli

import (
	"os"
	"reflect"
	"regexp"
	"runtime"
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
		for _, m := range regexp.MustCompile("`([a-z][a-z0-9-]*)").FindAllStringSubmatch(cells[0], -1) {
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

// The README's map of commands to folders names every command of the
// CLI's table once (and none it does not have), with the CLI folder its
// function is in (read from the function itself), and every folder and
// file it names is there: a newcomer finds a verb's code from it.
func TestReadmeMapsEveryCommand(t *testing.T) {
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## Where each command lives\n")
	if !ok {
		t.Fatal("the README has no 'Where each command lives' section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	listed := map[string]int{}
	rowOf := map[string]string{}
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) != 2 {
			continue
		}
		rows++
		for _, m := range regexp.MustCompile("`([a-z][a-z0-9-]*)`").FindAllStringSubmatch(cells[0], -1) {
			listed[m[1]]++
			rowOf[m[1]] = cells[1]
		}
		// Each folder, and the files named after it in parentheses.
		for _, m := range regexp.MustCompile("`([a-z][a-z/]*)`(?: \\(([a-z_, .]+)\\))?").FindAllStringSubmatch(cells[1], -1) {
			dir := "../../../" + m[1]
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				t.Errorf("the map names %s, which is not a folder", m[1])
				continue
			}
			for _, f := range strings.Split(m[2], ", ") {
				if f = strings.TrimSpace(f); strings.HasSuffix(f, ".go") {
					if _, err := os.Stat(dir + "/" + f); err != nil {
						t.Errorf("the map names %s/%s, which is not there", m[1], f)
					}
				}
			}
		}
	}
	if rows < 10 {
		t.Fatalf("only %d rows read from the map", rows)
	}
	have := map[string]bool{}
	for _, c := range commands {
		have[c.name] = true
		if listed[c.name] != 1 {
			t.Errorf("the README's map names %q %d times, want once", c.name, listed[c.name])
		}
		// github.com/…/cmd/paddock/cli/boxcmd.New → cmd/paddock/cli/boxcmd
		fn := runtime.FuncForPC(reflect.ValueOf(c.run).Pointer()).Name()
		pkg := fn[:strings.LastIndex(fn, "/")+1] + strings.SplitN(fn[strings.LastIndex(fn, "/")+1:], ".", 2)[0]
		_, folder, _ := strings.Cut(pkg, "/paddock/cmd/")
		if folder = "cmd/" + folder; !strings.Contains(rowOf[c.name], "`"+folder+"`") {
			t.Errorf("the README's map does not name %s for %q (its function is %s)", folder, c.name, fn)
		}
	}
	for name := range listed {
		if !have[name] {
			t.Errorf("the README's map names %q, which the CLI does not have", name)
		}
	}
}
