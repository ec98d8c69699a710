package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// 'paddock mcp install' adds the server to each agent's configuration and
// keeps what was there; a file that is not JSON is refused, untouched.
func TestMCPInstall(t *testing.T) {
	dir := t.TempDir()
	codex := t.TempDir()
	vars := map[string]string{"CODEX_HOME": codex, "PADDOCK_CONFIG_DIR": t.TempDir()}
	call := func(args ...string) (int, string) {
		var out strings.Builder
		e := &cmdenv.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: func(k string) string { return vars[k] }, Ctx: context.Background()}
		return run(e, args), out.String()
	}
	os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers":{"other":{"command":"x"}}}`), 0o644)
	if code, out := call("mcp", "install", "--agent", "claude", "--dir", dir); code != 0 {
		t.Fatalf("claude: %d %s", code, out)
	}
	var m struct {
		MCPServers map[string]struct {
			Command string
			Args    []string
		} `json:"mcpServers"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, ".mcp.json"))
	if err := json.Unmarshal(b, &m); err != nil || m.MCPServers["other"].Command != "x" || m.MCPServers["paddock"].Command != "paddock" || strings.Join(m.MCPServers["paddock"].Args, " ") != "mcp" {
		t.Fatalf(".mcp.json: %s %v", b, err)
	}
	if code, out := call("mcp", "install", "--agent", "opencode", "--dir", dir); code != 0 {
		t.Fatalf("opencode: %d %s", code, out)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "opencode.json"))
	if !strings.Contains(string(b), `"paddock"`) || !strings.Contains(string(b), `"local"`) {
		t.Fatalf("opencode.json: %s", b)
	}
	for i := 0; i < 2; i++ { // the second time changes nothing
		if code, out := call("mcp", "install", "--agent", "codex"); code != 0 {
			t.Fatalf("codex: %d %s", code, out)
		}
	}
	b, _ = os.ReadFile(filepath.Join(codex, "config.toml"))
	if strings.Count(string(b), "[mcp_servers.paddock]") != 1 || !strings.Contains(string(b), `args = ["mcp"]`) {
		t.Fatalf("config.toml: %s", b)
	}
	bad := filepath.Join(dir, "bad")
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, ".mcp.json"), []byte("not json"), 0o644)
	if code, out := call("mcp", "install", "--agent", "claude", "--dir", bad); code == 0 || !strings.Contains(out, "left as it was") {
		t.Fatalf("a broken .mcp.json: %d %s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(bad, ".mcp.json")); string(b) != "not json" {
		t.Fatalf("the broken file was changed: %q", b)
	}
	if code, _ := call("mcp", "install", "--agent", "vim"); code != 2 {
		t.Fatalf("an unknown agent: exit %d", code)
	}
}
