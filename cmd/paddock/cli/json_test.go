package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
)

// Every command that prints state takes --json and prints JSON that
// decodes (the list is the one the README documents; a command outside
// it that prints a table is a test to add here).
func TestEveryStateCommandHasJSON(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var v any
		switch {
		case r.URL.Path == "/v1/whoami":
			v = api.Whoami{User: "u", Role: "owner", Server: "s", Token: "t", Version: "v"}
		case r.URL.Path == "/v1/boxes":
			v = []api.Box{{Name: "web", Status: "running"}}
		case strings.HasSuffix(r.URL.Path, "/policy"):
			v = api.PolicyReport{Box: "web", Policy: "deny-all", Drops: map[string]uint64{"policy": 1}}
		case r.URL.Path == "/v1/boxes/web":
			v = api.Box{Name: "web", Status: "running"}
		case strings.HasSuffix(r.URL.Path, "/snapshots") || strings.HasSuffix(r.URL.Path, "/jobs") ||
			strings.HasSuffix(r.URL.Path, "/agents") || r.URL.Path == "/v1/agents":
			v = []any{}
		default:
			v = []any{}
		}
		json.NewEncoder(w).Encode(v)
	}))
	defer ts.Close()
	vars := map[string]string{"PADDOCK_HOST": ts.URL, "PADDOCK_TOKEN": "pdk_x", "PADDOCK_CONFIG_DIR": t.TempDir()}
	for _, args := range [][]string{
		{"ls"}, {"show", "web"}, {"jobs", "web"}, {"snapshots", "web"}, {"drive", "ls"}, {"policy", "ls"},
		{"policy", "log", "web"}, {"user", "ls"}, {"token", "ls"}, {"key", "ls"}, {"secret", "ls"},
		{"whoami"}, {"version"}, {"agents"}, {"agents", "web"},
	} {
		var out, errb strings.Builder
		e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }, ctx: context.Background()}
		code := run(e, append(append([]string{}, args...), "--json"))
		var v any
		if code != 0 || json.Unmarshal([]byte(out.String()), &v) != nil {
			t.Errorf("paddock %s --json: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out.String(), errb.String())
		}
	}
}
