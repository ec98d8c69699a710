package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	// The server serves the wheel at /sdk/ (as its installer lays out a
	// release), and pip installs it from there, as the README says.
	d := servingSDK(t, wheels[0])
	run(nil, "-m", "pip", "install", "--no-deps", "--target", work+"/site", "http://"+d.Listen+"/sdk/"+filepath.Base(wheels[0]))
	site := []string{"PYTHONPATH=" + work + "/site"}
	if got := strings.TrimSpace(run(site, "-c", "import paddock; print(paddock.__file__, paddock.__version__)")); got != work+"/site/paddock/__init__.py "+version.Release {
		t.Fatalf("the installed SDK is %q, not the wheel's", got)
	}
	// With no host nor token, the client takes the CLI's login.
	who := exec.Command(py, "-c", "import paddock; print(paddock.Client().whoami()['user'])")
	who.Dir, who.Env = work, append(cliLoginEnv(t, d), site[0], "PYTHONDONTWRITEBYTECODE=1")
	if out, err := who.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != loginUser(t, d) {
		t.Fatalf("the Python SDK on the CLI's login: %v\n%s", err, out)
	}
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

// cliLoginEnv is an environment with no PADDOCK_HOST nor PADDOCK_TOKEN,
// and the configuration folder of a real 'paddock login' to the daemon.
func cliLoginEnv(t *testing.T, d *harness.Daemon) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PADDOCK_HOST=") && !strings.HasPrefix(kv, "PADDOCK_TOKEN=") && !strings.HasPrefix(kv, "PADDOCK_CONFIG_DIR=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PADDOCK_CONFIG_DIR="+t.TempDir())
	login := exec.Command(bins.Paddock, "login", "http://"+d.Listen, "--token", d.Token)
	login.Env = env
	if out, err := login.CombinedOutput(); err != nil {
		t.Fatalf("paddock login: %v\n%s", err, out)
	}
	return env
}

// loginUser is the name of the daemon's token's user.
func loginUser(t *testing.T, d *harness.Daemon) string {
	w, err := d.Client().Whoami(t.Context())
	if err != nil || w.User == "" {
		t.Fatalf("whoami: %+v %v", w, err)
	}
	return w.User
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
	// npm pack alone builds the package (prepack), from no build at all;
	// then the tarball is installed where a user's project would have it.
	if err := os.RemoveAll(filepath.Join(dir, "dist")); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	run(nil, npm, "pack", "--pack-destination", work)
	// The package's own types, as a user's code meets them (compiled,
	// with await using; a field that is not in the model must not compile).
	run(nil, filepath.Join(dir, "node_modules", ".bin", "tsc"), "-p", "test/types")
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
	// The server serves the tarball at /sdk/ (as its installer lays out a
	// release), and npm installs it from there into a fresh project, as
	// the README says.
	d := servingSDK(t, tgz)
	user := filepath.Join(work, "project")
	os.MkdirAll(user, 0o755)
	os.WriteFile(filepath.Join(user, "package.json"), []byte(`{"name":"user-project","private":true}`), 0o644)
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--prefer-offline", "http://"+d.Listen+"/sdk/"+filepath.Base(tgz))
	cmd.Dir = user
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s from the server: %v\n%s", tgz, err, out)
	}
	installed := "file://" + filepath.Join(user, "node_modules", "@paddock-dev", "sdk", "dist", "index.js")
	// With no host nor token, the client takes the CLI's login.
	who := exec.Command("node", "--input-type=module", "-e", "const m = await import(process.argv[1]); console.log((await new m.Client().whoami()).user);", installed)
	who.Dir, who.Env = user, cliLoginEnv(t, d)
	if out, err := who.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != loginUser(t, d) {
		t.Fatalf("the TypeScript SDK on the CLI's login: %v\n%s", err, out)
	}
	run(append(sdkEnv(t, d), "PADDOCK_SDK="+installed), "node", "--test", "test/")
}

// servingSDK starts a paddockd whose client folder (cli_dir) holds pkg
// and SHA256SUMS with its sum, as the installer lays them out; its /sdk/
// page lists pkg, with the checksum.
func servingSDK(t *testing.T, pkg string) *harness.Daemon {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(pkg)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	hexSum := hex.EncodeToString(sum[:])
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(hexSum+"  "+filepath.Base(pkg)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDaemon(t, t.TempDir())
	d.Env = append(d.Env, "PADDOCK_CLI_DIR="+dir)
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Cleanup)
	resp, err := http.Get("http://" + d.Listen + "/sdk/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "install http://"+d.Listen+"/sdk/"+filepath.Base(pkg)) || !strings.Contains(string(page), hexSum) {
		t.Fatalf("/sdk/ does not offer %s with its sum:\n%s", filepath.Base(pkg), page)
	}
	return d
}

// sdkMethods reads the public methods of a client class and the names of
// their positional arguments (those without a default): from the
// TypeScript source (camelCase, turned to snake_case) or the Python one.
func sdkMethods(t *testing.T, path string) map[string][]string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	ts := strings.HasSuffix(path, ".ts")
	var body string
	if ts {
		_, body, _ = strings.Cut(src, "\nexport class Client {\n")
		body, _, _ = strings.Cut(body, "\n}\n")
	} else {
		_, body, _ = strings.Cut(src, "\nclass Client:\n")
		body, _, _ = strings.Cut(body, "\nclass ")
	}
	head := regexp.MustCompile(`(?m)^    def ([a-z][a-z0-9_]*)\(self`)
	if ts {
		head = regexp.MustCompile(`(?m)^  (?:async )?\*?([a-z][A-Za-z0-9]*)\(`)
	}
	snake := regexp.MustCompile(`([a-z0-9])([A-Z]+)`)
	out := map[string][]string{}
	for _, m := range head.FindAllStringSubmatchIndex(body, -1) {
		name := body[m[2]:m[3]]
		if name == "constructor" {
			continue
		}
		// The arguments: up to the parenthesis that closes the list.
		depth, i := 1, m[1]
		for ; i < len(body) && depth > 0; i++ {
			switch body[i] {
			case '(', '{', '[', '<':
				depth++
			case ')', '}', ']', '>':
				depth--
			}
		}
		args := body[m[1] : i-1]
		var pos []string
		depth, start := 0, 0
		for j := 0; j <= len(args); j++ {
			if j < len(args) {
				switch args[j] {
				case '(', '{', '[', '<':
					depth++
					continue
				case ')', '}', ']', '>':
					depth--
					continue
				}
				if args[j] != ',' || depth > 0 {
					continue
				}
			}
			a := strings.TrimSpace(args[start:j])
			start = j + 1
			if a == "" || strings.HasPrefix(a, "*") || strings.Contains(a, "=") || strings.Contains(a, "?:") {
				continue
			}
			a, _, _ = strings.Cut(a, ":")
			pos = append(pos, strings.TrimSpace(a))
		}
		if ts {
			name = strings.ToLower(snake.ReplaceAllString(name, "${1}_${2}"))
		}
		out[name] = pos
	}
	return out
}

// The two SDKs name the same operations the same way and take the same
// arguments in the same order; what one has and the other has not is
// listed here, each with why.
func TestSDKsAgree(t *testing.T) {
	tsM := sdkMethods(t, "../../sdk/typescript/src/index.ts")
	pyM := sdkMethods(t, "../../sdk/python/paddock/client.py")
	if len(tsM) < 60 || len(pyM) < 60 {
		t.Fatalf("read %d TypeScript and %d Python methods: the parse is broken", len(tsM), len(pyM))
	}
	apart := map[string]string{
		"close":               "TypeScript: frees the kept-alive connections (Python keeps none)",
		"create_handle":       "TypeScript: a handle for await using; Python's is Box.create, a context manager",
		"box_handle":          "Python: a Box of an existing box; TypeScript makes handles of new boxes only",
		"backup_drive_stream": "TypeScript: a stream; Python's backup_drive streams into a file given as to",
		"pull_stream":         "TypeScript: a stream; Python's pull streams into a file given as to",
	}
	same := map[string]string{"job_id": "id"} // Python cannot name an argument id
	for name, pos := range tsM {
		py, ok := pyM[name]
		if _, known := apart[name]; known {
			if ok {
				t.Errorf("%s is listed as in one SDK only, and both have it", name)
			}
			continue
		}
		if !ok {
			t.Errorf("the TypeScript SDK has %s and the Python one has not", name)
			continue
		}
		for i := range py {
			if s, ok := same[py[i]]; ok {
				py[i] = s
			}
		}
		if strings.Join(pos, ",") != strings.Join(py, ",") {
			t.Errorf("%s takes (%s) in TypeScript and (%s) in Python", name, strings.Join(pos, ", "), strings.Join(py, ", "))
		}
	}
	for name := range pyM {
		if _, ok := tsM[name]; !ok {
			if _, known := apart[name]; !known {
				t.Errorf("the Python SDK has %s and the TypeScript one has not", name)
			}
		}
	}
}
