package boxfiles

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/testbed/golden"
)

// Every class of error is reported with its file:line:col, all at once.
func TestDiagnosticsGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/diags/*.hcl")
	if len(files) < 8 {
		t.Fatalf("only %d diagnostic cases", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, diags := Load(f, Inputs{})
			if !diags.HasErrors() {
				t.Fatal("no error reported")
			}
			var b bytes.Buffer
			WriteDiagnostics(&b, cfg.Files, diags, 100)
			golden.Check(t, strings.TrimSuffix(f, ".hcl")+".golden", b.Bytes())
		})
	}
}

func TestDiagnosticsJSON(t *testing.T) {
	cfg, diags := Load("testdata/diags/values.hcl", Inputs{})
	js := DiagnosticsJSON(cfg.Files, diags)
	if len(js) != len(diags) || len(js) < 6 {
		t.Fatalf("%d JSON diagnostics for %d", len(js), len(diags))
	}
	first := js[0]
	if first.Range == nil || first.Range.Start.Line != 2 || !strings.Contains(first.Snippet, "allow_domains") {
		t.Fatalf("first diagnostic %+v", first)
	}
}

func TestGoodBoxfile(t *testing.T) {
	cfg, diags := Load("testdata/good.hcl", Inputs{Environ: []string{"PADDOCK_VAR_env=prod"}})
	if diags.HasErrors() {
		var b bytes.Buffer
		WriteDiagnostics(&b, cfg.Files, diags, 100)
		t.Fatal(b.String())
	}
	got, _ := json.MarshalIndent(cfg.Spec, "", "  ")
	golden.Check(t, "testdata/good.json", append(got, '\n'))
	if err := api.ValidateProject(cfg.Spec); err != nil {
		t.Fatalf("the server would refuse what the decoder accepts: %v", err)
	}
	if r, ok := cfg.Ranges["box.web.image"]; !ok || r.Start.Line != 24 {
		t.Fatalf("range of box.web.image: %v", r)
	}
}

func TestVariablePrecedence(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Boxfile.hcl"), []byte(`
variable "t" { default = "small" }
variable "n" {
  type    = number
  default = 1
}
box "web" {
  type = var.t
  ttl  = var.n
}
`), 0o644)
	vf := filepath.Join(t.TempDir(), "vars.hcl")
	os.WriteFile(vf, []byte(`t = "large"`+"\n"+`n = 30`), 0o644)
	in := Inputs{Environ: []string{"PADDOCK_VAR_t=medium", "PADDOCK_VAR_n=20"}}
	check := func(in Inputs, typ, ttl string) {
		t.Helper()
		cfg, diags := Load(dir, in)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		b := cfg.Spec.Boxes[0]
		if b.Type != typ || b.TTL != ttl {
			t.Fatalf("type %q ttl %q, want %q %q", b.Type, b.TTL, typ, ttl)
		}
		if cfg.Spec.Project != projectName(filepath.Base(dir)) {
			t.Fatalf("project %q from dir %q", cfg.Spec.Project, dir)
		}
	}
	check(Inputs{}, "small", "1")
	check(in, "medium", "20")
	in.VarFiles = []string{vf}
	check(in, "large", "30")
	in.Vars = []string{"t=small", "n=40"}
	check(in, "small", "40")
}

func TestSeveralFilesAreOneConfiguration(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.hcl"), []byte(`drive "cache" {}`), 0o644)
	os.WriteFile(filepath.Join(dir, "b.hcl"), []byte(`box "web" {
  mount "cache" {}
}`), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte(`not hcl {`), 0o644)
	cfg, diags := Load(dir, Inputs{})
	if diags.HasErrors() || len(cfg.Spec.Boxes) != 1 || cfg.Spec.Boxes[0].Mounts[0].Path != "/mnt/cache" {
		t.Fatalf("%v %+v", diags, cfg.Spec)
	}
}

func TestFormat(t *testing.T) {
	got := string(Format([]byte("box \"web\" {\ntype=\"small\"\n    ttl =   \"1h\"\n}\n")))
	want := "box \"web\" {\n  type = \"small\"\n  ttl  = \"1h\"\n}\n"
	if got != want {
		t.Fatalf("got %q", got)
	}
}

func TestFileAndEnvFunctions(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "version.txt"), []byte("v7\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "Boxfile.hcl"), []byte(`box "web" {
  env = { V = chomp(file("version.txt")), H = env("SOME_HOST"), P = env("PADDOCK_VAR_x") }
}
variable "x" {}`), 0o644)
	environ := []string{"SOME_HOST=h1", "PADDOCK_VAR_x=px"}
	cfg, diags := Load(dir, Inputs{Environ: environ, AllowEnv: true})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if e := cfg.Spec.Boxes[0].Env; e["V"] != "v7" || e["H"] != "h1" || e["P"] != "px" {
		t.Fatalf("env %v", e)
	}
	// Without --allow-env, env() reads PADDOCK_VAR_* only: the error is at
	// the call.
	_, diags = Load(dir, Inputs{Environ: environ})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "Boxfile.hcl:2,47-51") || !strings.Contains(diags.Error(), "reads only PADDOCK_VAR_*") {
		t.Fatalf("env() of another variable without --allow-env: %v", diags)
	}
}

// A Boxfile from someone else's repository reads and pushes nothing from
// outside its project directory: no absolute path, no "..", no symlink out.
func TestBoxfileStaysInItsProject(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "id_ed25519"), []byte("PRIVATE KEY"), 0o600)
	dir := filepath.Join(home, "project")
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	os.Symlink(home, filepath.Join(dir, "homelink"))
	os.Symlink(filepath.Join(home, "id_ed25519"), filepath.Join(dir, "keylink"))
	for _, src := range []string{
		"box \"b\" {\n  env = { K = file(\"../id_ed25519\") }\n}",
		"box \"b\" {\n  env = { K = file(\"" + filepath.Join(home, "id_ed25519") + "\") }\n}",
		"box \"b\" {\n  env = { K = file(\"keylink\") }\n}",
		"box \"b\" {\n  env = { K = file(\"homelink/id_ed25519\") }\n}",
		"box \"b\" {\n  push \"../\" {\n    to = \"/config/x\"\n  }\n}",
		"box \"b\" {\n  push \"" + home + "\" {\n    to = \"/config/x\"\n  }\n}",
		"box \"b\" {\n  push \"./homelink\" {\n    to = \"/config/x\"\n  }\n}",
		"box \"b\" {\n  files = { \"keylink\" = \"/config/x\" }\n}",
	} {
		os.WriteFile(filepath.Join(dir, "Boxfile.hcl"), []byte(src), 0o644)
		_, diags := Load(dir, Inputs{})
		if !diags.HasErrors() {
			t.Errorf("a Boxfile reached outside its project: %s", src)
		} else if !strings.Contains(diags.Error(), "Boxfile.hcl:2,") || strings.Contains(diags.Error(), "Argument definition required") {
			t.Errorf("%s: the error has no place: %v", src, diags)
		}
	}
	os.WriteFile(filepath.Join(dir, "Boxfile.hcl"), []byte("box \"b\" {\n  push \"./src\" {\n    to = \"/config/x\"\n  }\n}"), 0o644)
	if _, diags := Load(dir, Inputs{}); diags.HasErrors() {
		t.Fatalf("a push from inside the project: %v", diags)
	}
}

// FuzzDecode: no input makes the decoder panic, and what it accepts the
// server's validation accepts too.
func FuzzDecode(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/diags/*.hcl")
	seeds = append(seeds, "testdata/good.hcl")
	for _, s := range seeds {
		b, _ := os.ReadFile(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, diags := Decode(".", []string{"Boxfile.hcl"}, map[string][]byte{"Boxfile.hcl": src}, Inputs{})
		if diags.HasErrors() {
			var b bytes.Buffer
			WriteDiagnostics(&b, cfg.Files, diags, 80)
			return
		}
		if err := api.ValidateProject(cfg.Spec); err != nil {
			t.Fatalf("decoder accepted what validation refuses: %v\n%s", err, src)
		}
	})
}

// BenchmarkDecode200 decodes a Boxfile of 200 boxes that share a policy, a
// drive and a variable: the work paddock validate and plan do before they
// contact the server.
func BenchmarkDecode200(b *testing.B) {
	var src bytes.Buffer
	src.WriteString("project = \"big\"\nvariable \"ttl\" {\n  default = \"1h\"\n}\n")
	src.WriteString("policy \"reg\" {\n  allow_domains = [\"example.com\", \"*.example.org\"]\n  allow_cidrs = [\"10.1.0.0/16\"]\n}\n")
	src.WriteString("drive \"cache\" {}\n")
	for i := range 200 {
		fmt.Fprintf(&src, "box \"b%d\" {\n  type = \"small\"\n  ttl = var.ttl\n  policy = policy.reg\n  env = { N = \"%d\" }\n  mount \"cache\" {\n    readonly = true\n  }\n}\n", i, i)
	}
	srcs := map[string][]byte{"Boxfile.hcl": src.Bytes()}
	b.ReportAllocs()
	for b.Loop() {
		cfg, diags := Decode(".", []string{"Boxfile.hcl"}, srcs, Inputs{})
		if diags.HasErrors() || len(cfg.Spec.Boxes) != 200 {
			b.Fatal(diags)
		}
	}
}
