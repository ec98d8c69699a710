package rules

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/server"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/testbed/harness"
)

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	root, err := harness.Root()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// The CLI runs on laptops (Linux, macOS, Windows): it must not drag in the
// engine client, nftables, Caddy or SQLite.
func TestCLIImportGraph(t *testing.T) {
	forbidden := []string{
		"github.com/moby/", "github.com/docker/", "github.com/google/nftables",
		"github.com/caddyserver/", "modernc.org/sqlite", "github.com/mattn/go-sqlite3",
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		t.Setenv("GOOS", goos)
		deps := goList(t, "-deps", "./cmd/paddock")
		if len(deps) < 10 {
			t.Fatalf("%s: only %d deps listed; is the list right?", goos, len(deps))
		}
		for _, d := range deps {
			for _, f := range forbidden {
				if strings.HasPrefix(d, f) {
					t.Errorf("%s: cmd/paddock depends on %s", goos, d)
				}
			}
		}
	}
}

// Every package says what it is for.
func TestEveryPackageHasADocComment(t *testing.T) {
	for _, line := range goList(t, "-e", "-f", "{{.ImportPath}}|{{.Doc}}", "./...") {
		path, doc, _ := strings.Cut(line, "|")
		if strings.TrimSpace(doc) == "" {
			t.Errorf("package %s has no doc comment", path)
		}
	}
}

// Mains stay thin: a few lines calling into a package.
func TestMainsAreThin(t *testing.T) {
	root, err := harness.Root()
	if err != nil {
		t.Fatal(err)
	}
	mains, _ := filepath.Glob(filepath.Join(root, "cmd", "*", "main.go"))
	if len(mains) < 2 {
		t.Fatalf("found %d mains", len(mains))
	}
	for _, m := range mains {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\n")); n > 20 {
			t.Errorf("%s has %d lines; move the logic into a package", m, n)
		}
	}
}

// The top level is fixed.
func TestTopLevelLayout(t *testing.T) {
	root, err := harness.Root()
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"install": true, "cmd": true, "appliance": true, "units": true, "caddy": true,
		"boxfiles": true, "policies": true, "testbed": true, "go.mod": true, "go.sum": true,
		"Vagrantfile": true, "LICENSE": true, "README.md": true, ".ci": true, "sdk": true,
		".git": true, ".gitignore": true, "bin": true,
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !allowed[e.Name()] {
			t.Errorf("%s does not belong at the top level", e.Name())
		}
	}
}

// A capability (a folder of its own that registers its API routes, as
// server.Capabilities lists them) stands on the core below it, never on
// another capability, the core's god object (package service) or a view
// (server, dashboard, preview, mcpserver, sshgate, client):
// what it needs of the core it names in an interface of its own.
func TestCapabilitiesStandOnTheCoreOnly(t *testing.T) {
	caps := server.Capabilities(&service.Service{})
	if len(caps) == 0 {
		t.Fatal("no capabilities listed")
	}
	mine := map[string]bool{}
	for _, c := range caps {
		mine[reflect.TypeOf(c).Elem().PkgPath()] = true
	}
	const app = "github.com/paddock-dev/paddock/appliance/"
	views := []string{"service", "server", "dashboard", "preview", "mcpserver", "sshgate", "client", "daemon"}
	for pkg := range mine {
		for _, imp := range goList(t, "-f", "{{join .Imports \"\\n\"}}", pkg) {
			if imp != pkg && mine[imp] {
				t.Errorf("capability %s imports capability %s", pkg, imp)
			}
			for _, v := range views {
				if imp == app+v {
					t.Errorf("capability %s imports %s", pkg, imp)
				}
			}
		}
	}
}

// The front ends find the caller through package caller (a bearer token,
// the dashboard's session) and do not lean on one another: the dashboard,
// previews, the SSH gate and the MCP server import none of the others
// (package server, which serves them all on one listener, composes them).
func TestViewsStandApart(t *testing.T) {
	const app = "github.com/paddock-dev/paddock/appliance/"
	views := []string{"dashboard", "preview", "sshgate", "mcpserver", "server"}
	for _, v := range views[:4] {
		for _, imp := range goList(t, "-f", "{{join .Imports \"\\n\"}}", app+v) {
			for _, other := range views {
				if other != v && imp == app+other {
					t.Errorf("view %s imports %s", v, imp)
				}
			}
		}
	}
}
