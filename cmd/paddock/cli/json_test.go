package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
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
		case strings.HasSuffix(r.URL.Path, "/quota"):
			v = api.UserQuota{User: "u", Role: "member", Own: []string{}}
		case r.URL.Path == "/v1/audit/verify":
			v = api.AuditCheck{OK: true, Entries: 2, First: 1, Last: 2}
		case r.URL.Path == "/v1/nodes/joins":
			v = api.NodeJoin{Token: "pdkjoin_x", Command: "paddockd node --join …"}
		case strings.HasSuffix(r.URL.Path, "/watch"):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: ready\ndata: {\"type\":\"ready\",\"path\":\"/w\"}\n\nevent: created\ndata: {\"type\":\"created\",\"path\":\"/w/a\"}\n\n")
			return
		case strings.HasSuffix(r.URL.Path, "/run"):
			v = api.RunResult{Context: "python", Lang: "python"}
		case strings.HasSuffix(r.URL.Path, "/desktop"):
			v = api.DesktopTicket{Ticket: "t", Path: "/desktop/web#t"}
		case strings.Contains(r.URL.Path, "/grants/"):
			v = api.Grant{User: "mia", Access: "viewer"}
		case strings.HasPrefix(r.URL.Path, "/v1/images/"):
			v = api.Image{Name: "web:latest", Ref: "u/web:latest", ID: "sha256:0123"}
		case r.URL.Path == "/v1/boxes/web" || r.URL.Path == "/v1/boxes/web/ttl":
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
	// A current box, for the forms whose box may be left out.
	if err := os.WriteFile(filepath.Join(vars["PADDOCK_CONFIG_DIR"], "current"), []byte("web\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Every form of every command whose usage line takes --json, from the
	// real table: its words before the flag, a placeholder (BOX) as "web".
	// The Boxfile commands (-f PATH) read files, and their JSON is the
	// Boxfile tests'.
	var forms [][]string
	for _, c := range commands {
		if strings.Contains(c.args, "-f PATH") {
			continue
		}
		for _, alt := range alternatives(c.args) {
			before, _, ok := strings.Cut(alt, "[--json]")
			if !ok {
				continue
			}
			args := []string{c.name}
			before = regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(before, "")
			for _, w := range strings.Fields(before) {
				switch {
				case w == "DURATION":
					args = append(args, "1h")
				case strings.ToUpper(w) == w:
					args = append(args, "web")
				default:
					args = append(args, w)
				}
			}
			forms = append(forms, args)
		}
	}
	if len(forms) < 15 {
		t.Fatalf("the table's --json forms look short: %v", forms)
	}
	for _, args := range forms {
		var out, errb strings.Builder
		e := &cmdenv.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }, Ctx: context.Background()}
		code := run(e, append(append([]string{}, args...), "--json"))
		// One JSON value; or, for a stream (watch, top), one a line.
		var v any
		isJSON := json.Unmarshal([]byte(out.String()), &v) == nil
		if lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"); !isJSON && len(lines) > 1 {
			isJSON = true
			for _, l := range lines {
				isJSON = isJSON && json.Unmarshal([]byte(l), &v) == nil
			}
		}
		if code != 0 || !isJSON {
			t.Errorf("paddock %s --json: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out.String(), errb.String())
		}
	}
}
