package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/paddock-dev/paddock/testbed/harness"
)

// The SDKs' own test suites, run against a real paddockd: each creates
// boxes, runs commands in them, copies files and applies a project.
func TestPythonSDK(t *testing.T) {
	py := harness.Tool(t, "python3")
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	dir, _ := filepath.Abs("../../sdk/python")
	cmd := exec.Command(py, "-m", "unittest", "discover", "-v", "-s", "tests")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), sdkEnv(t, d)...)
	cmd.Env = append(cmd.Env, "PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	t.Logf("python3 -m unittest:\n%s", out)
	if err != nil {
		b, _ := os.ReadFile(d.LogPath())
		t.Fatalf("the Python SDK's tests failed: %v\npaddockd log:\n%s", err, b)
	}
}

// sdkEnv points an SDK at the daemon through a proxy that checks every
// exchange against the OpenAPI document; a difference fails the test.
func sdkEnv(t *testing.T, d *harness.Daemon) []string {
	t.Helper()
	url, checker, stop, err := harness.ContractProxy(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		for _, f := range checker.Failures() {
			t.Errorf("OpenAPI contract: %s", f)
		}
		t.Log(checker.Summary())
	})
	return []string{"PADDOCK_HOST=" + url, "PADDOCK_TOKEN=" + d.Token}
}

func TestTypeScriptSDK(t *testing.T) {
	npm := harness.Tool(t, "npm")
	dir, _ := filepath.Abs("../../sdk/typescript")
	run := func(env []string, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		t.Logf("%s %v:\n%s", filepath.Base(name), args, out)
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
	}
	// The compiler comes from the lock file; node_modules is reused when
	// it is there.
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "tsc")); err != nil {
		run(nil, npm, "ci", "--no-audit", "--no-fund")
	}
	run(nil, npm, "run", "build")
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	run(sdkEnv(t, d), "node", "--test", "test/")
}
