package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/version"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// The SDKs' own test suites, run against a real paddockd: each creates
// boxes, runs commands in them, copies files and applies a project. Each
// runs against the package as a user installs it: the Python suite
// imports the SDK from the wheel pip builds (offline: the build backend
// is in the tree), the TypeScript suite from the tarball npm pack makes.
func TestPythonSDK(t *testing.T) {
	py := harness.Tool(t, "python3")
	dir, _ := filepath.Abs("../../sdk/python")
	work := t.TempDir()
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(py, args...)
		cmd.Dir = work // not the source tree: python -m puts the working directory on the path
		cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1"), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python3 %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run(nil, "-m", "pip", "wheel", "--no-deps", "-w", work+"/wheel", dir)
	wheels, _ := filepath.Glob(work + "/wheel/paddock_sdk-" + version.Release + "-py3-none-any.whl")
	if len(wheels) != 1 {
		t.Fatalf("pip wheel made no paddock_sdk-%s wheel", version.Release)
	}
	run(nil, "-m", "pip", "install", "--no-deps", "--target", work+"/site", wheels[0])
	site := []string{"PYTHONPATH=" + work + "/site"}
	if got := strings.TrimSpace(run(site, "-c", "import paddock; print(paddock.__file__, paddock.__version__)")); got != work+"/site/paddock/__init__.py "+version.Release {
		t.Fatalf("the installed SDK is %q, not the wheel's", got)
	}
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	cmd := exec.Command(py, "-m", "unittest", "discover", "-v", "-s", dir+"/tests", "-t", dir+"/tests")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), sdkEnv(t, d)...)
	cmd.Env = append(cmd.Env, site[0], "PYTHONDONTWRITEBYTECODE=1")
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
	// The package's own types, as a user's code meets them (compiled,
	// with await using; a field that is not in the model must not compile).
	run(nil, filepath.Join(dir, "node_modules", ".bin", "tsc"), "-p", "test/types")
	// npm pack, then install the tarball where a user's project would.
	work := t.TempDir()
	run(nil, npm, "pack", "--pack-destination", work)
	tgz := filepath.Join(work, "paddock-dev-sdk-"+version.Release+".tgz")
	list, err := exec.Command("tar", "-tzf", tgz).Output()
	if err != nil {
		t.Fatalf("npm pack made no %s: %v", tgz, err)
	}
	for _, f := range []string{"package/dist/index.js", "package/dist/index.d.ts", "package/dist/models.d.ts", "package/package.json"} {
		if !strings.Contains(string(list), f+"\n") {
			t.Errorf("the package lacks %s:\n%s", f, list)
		}
	}
	user := filepath.Join(work, "project")
	os.MkdirAll(user, 0o755)
	os.WriteFile(filepath.Join(user, "package.json"), []byte(`{"name":"user-project","private":true}`), 0o644)
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--offline", tgz)
	cmd.Dir = user
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s: %v\n%s", tgz, err, out)
	}
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	installed := "file://" + filepath.Join(user, "node_modules", "@paddock-dev", "sdk", "dist", "index.js")
	run(append(sdkEnv(t, d), "PADDOCK_SDK="+installed), "node", "--test", "test/")
}
