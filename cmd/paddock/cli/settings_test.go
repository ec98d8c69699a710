package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// The current box lives in its own file: new, use and rm change it and
// leave config.json (server and token) as it was, byte for byte; a
// config.json from before keeps its "current" until the first change,
// and removing the current box leaves none even then.
func TestCurrentBoxBesideTheSettings(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/boxes":
			var p api.BoxPost
			json.NewDecoder(r.Body).Decode(&p)
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(api.Box{Name: p.Name, Status: "running"})
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			json.NewEncoder(w).Encode(api.Box{Name: strings.TrimPrefix(r.URL.Path, "/v1/boxes/"), Status: "running"})
		}
	}))
	defer ts.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	old := `{"server": "` + ts.URL + `", "token": "pdk_x", "current": "old"}` + "\n"
	if err := os.WriteFile(cfg, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"PADDOCK_CONFIG_DIR": dir}
	call := func(args ...string) (string, int) {
		var out strings.Builder
		e := &cmdenv.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: func(k string) string { return vars[k] }, Ctx: context.Background()}
		code := run(e, args)
		return strings.TrimSpace(out.String()), code
	}
	paddock := func(args ...string) string {
		t.Helper()
		out, code := call(args...)
		if code != 0 {
			t.Fatalf("paddock %s: exit %d, %s", strings.Join(args, " "), code, out)
		}
		return out
	}
	same := func() {
		t.Helper()
		b, err := os.ReadFile(cfg)
		if err != nil || string(b) != old {
			t.Fatalf("config.json changed: %q, %v", b, err)
		}
	}
	if c := paddock("current"); c != "old" {
		t.Fatalf("current from an older config.json: %q", c)
	}
	paddock("rm", "--force", "old")
	same()
	if out, code := call("current"); code == 0 {
		t.Fatalf("a removed current box is still current: %q", out)
	}
	paddock("new", "--name", "web")
	same()
	if c := paddock("current"); c != "web" {
		t.Fatalf("current after new: %q", c)
	}
	paddock("use", "db")
	same()
	if c := paddock("current"); c != "db" {
		t.Fatalf("current after use: %q", c)
	}
	if fi, err := os.Stat(filepath.Join(dir, "current")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("current file: %v, %v", fi, err)
	}
	// logout forgets the token and the current box.
	paddock("logout")
	b, _ := os.ReadFile(cfg)
	if strings.Contains(string(b), "current") || strings.Contains(string(b), "pdk_x") {
		t.Fatalf("config.json after logout: %s", b)
	}
	if c, _ := os.ReadFile(filepath.Join(dir, "current")); len(c) != 0 {
		t.Fatalf("current after logout: %q", c)
	}
}
