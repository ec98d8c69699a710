package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// Completion, driven from the real command table: every command's name
// completes; after a command, "-" completes to exactly the flags its
// --help lists; subcommands, shells, box and drive names complete; after
// "--" nothing does (the shell completes files).
func TestCompletion(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/boxes":
			json.NewEncoder(w).Encode([]api.Box{{Name: "web"}, {Name: "worker"}, {Name: "api"}})
		case "/v1/policies":
			json.NewEncoder(w).Encode([]api.Policy{{PolicySpec: api.PolicySpec{Name: "registries"}}})
		case "/v1/drives":
			json.NewEncoder(w).Encode([]api.Drive{{Name: "cache"}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	vars := map[string]string{"PADDOCK_HOST": ts.URL, "PADDOCK_TOKEN": "pdk_x", "PADDOCK_CONFIG_DIR": t.TempDir()}
	call := func(args ...string) string {
		var out strings.Builder
		e := &cmdenv.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: func(k string) string { return vars[k] }, Ctx: context.Background()}
		if code := run(e, args); code != 0 {
			t.Fatalf("paddock %v: exit %d: %s", args, code, out.String())
		}
		return out.String()
	}
	lines := func(s string) []string { return strings.Fields(s) }
	flagRE := regexp.MustCompile(`(?m)^\s+(?:(-\w), )?(--[\w-]+)`)
	for _, c := range commands {
		if got := lines(call("__complete", c.name[:2])); !contains(got, c.name) {
			t.Errorf("%q does not complete to %s: %v", c.name[:2], c.name, got)
		}
		if c.name == "help" {
			continue
		}
		help := call(c.name, "--help")
		got := lines(call("__complete", c.name, "-"))
		var want []string
		for _, m := range flagRE.FindAllStringSubmatch(help, -1) {
			want = append(want, m[2])
			if m[1] != "" {
				want = append(want, m[1])
			}
		}
		for _, f := range want {
			if !contains(got, f) {
				t.Errorf("paddock %s -<TAB> lacks %s (help lists it): %v", c.name, f, got)
			}
		}
		if len(got) != len(want)+1 { // and --help
			t.Errorf("paddock %s -<TAB> gives %v; help lists %v", c.name, got, want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pu"}, "pull push"},
		{[]string{"exec", "w"}, "web worker"},
		{[]string{"show", ""}, "api web worker"},
		{[]string{"rm", "web", "w"}, "web worker"},
		{[]string{"user", ""}, "invite invites ls quota revoke rm"},
		{[]string{"drive", "backup", ""}, "cache"},
		{[]string{"policy", "set", ""}, "api web worker"},
		{[]string{"policy", "set", "web", ""}, "allow-all deny-all registries"},
		{[]string{"policy", "rm", ""}, "registries"},
		{[]string{"new", "--policy", "r"}, "registries"},
		{[]string{"new", "--drive", ""}, "cache"},
		{[]string{"new", "--type", ""}, "large medium small"},
		{[]string{"skill", "install", "--agent", ""}, "all claude codex opencode pi"},
		{[]string{"user", "invite", "--role", ""}, "admin member owner viewer"},
		{[]string{"completion", ""}, "bash fish powershell zsh"},
		{[]string{"help", "da"}, "dashboard"},
		{[]string{"exec", "web", "--", "l"}, ""},
		{[]string{"push", "web", ""}, ""},
	} {
		got := strings.Join(lines(call(append([]string{"__complete"}, tc.args...)...)), " ")
		if got != tc.want {
			t.Errorf("paddock %v<TAB>: %q, want %q", tc.args, got, tc.want)
		}
	}
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		if s := call("completion", sh); !strings.Contains(s, "paddock __complete") {
			t.Errorf("the %s script does not ask paddock: %s", sh, s)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
