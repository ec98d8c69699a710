package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
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
		e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }, ctx: context.Background()}
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
	if wantsHelp([]string{"box", "--", "ls", "-h"}) {
		t.Error("a -h after -- was taken as a request for help")
	}
	if code, _, errs := call("new", "--no-such-flag"); code != 2 || !strings.Contains(errs, "usage: paddock new") {
		t.Errorf("a wrong flag: exit %d, %q", code, errs)
	}
}
