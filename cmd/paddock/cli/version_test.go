package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/version"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// When the server runs another version, version says so and how to get
// the server's own client.
func TestVersionWarnsOnMismatch(t *testing.T) {
	for _, server := range []string{version.Version, "9.9.9"} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"user":"u","role":"owner","server":"s","token":"t","version":"` + server + `"}`))
		}))
		var out, errb strings.Builder
		vars := map[string]string{"PADDOCK_HOST": ts.URL, "PADDOCK_TOKEN": "pdk_x", "PADDOCK_CONFIG_DIR": t.TempDir()}
		e := &cmdenv.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }, Ctx: context.Background()}
		if code := run(e, []string{"version"}); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		if !strings.Contains(out.String(), "client "+version.Version) || !strings.Contains(out.String(), "server "+server) {
			t.Errorf("version printed %q", out.String())
		}
		warned := strings.Contains(errb.String(), "the server is 9.9.9") && strings.Contains(errb.String(), "curl -fsSL "+ts.URL+"/cli/install.sh | sh")
		if warned != (server != version.Version) {
			t.Errorf("server %s: stderr %q", server, errb.String())
		}
		ts.Close()
	}
}
