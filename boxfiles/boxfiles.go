// Package boxfiles is the Boxfile language: HCL files (hashicorp/hcl/v2)
// that declare a project's boxes, drives and egress policies, with
// variables, locals, references between blocks and functions. Load decodes a
// file or a directory of *.hcl files into the desired-state model
// (api.ProjectSpec) and returns every problem at once as hcl.Diagnostics,
// each with a source range, kept typed until they reach a person (text with
// file:line:col and the source line) or a tool (JSON).
//
// The language:
//
//	project = "NAME"                 # default: the directory's name
//	variable "x" { type = string, default = "...", description = "...",
//	               validation { condition = ..., error_message = "..." } }
//	locals { a = "..." }             # may refer to var, local and path
//	policy "registries" { allow_domains = ["*.example.org"], allow_cidrs = ["10.1.0.0/16"] }
//	drive "cache" { size = "10GiB", labels = { team = "web" } }
//	box "web" {
//	  type = "small"  image = "..."  ttl = "1h"  agent = "claude"  desktop = true
//	  policy = policy.registries     # or "allow-all" (default) / "deny-all"
//	  env    = { NODE_ENV = "test" }
//	  mount "cache" { path = "/mnt/cache"  readonly = false }
//	  push "./src" { to = "/config/project" }    # once, after the box is made
//	  setup = ["cd /config/project && npm ci"]   # once, after push; bash -lc
//	}
//
// Expressions may use var.NAME, local.NAME, policy.NAME (an object with
// name, allow_domains and allow_cidrs), drive.NAME (an object with name),
// path.root, the usual cty standard library functions, file(PATH) (relative
// to path.root) and env(NAME). Variables are set, lowest to highest
// precedence, by their default, PADDOCK_VAR_NAME, -var-file and -var.
package boxfiles

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/paddock-dev/paddock/appliance/api"
)

// Config is a decoded Boxfile configuration.
type Config struct {
	Spec api.ProjectSpec
	// Root is the directory the configuration was read from (path.root).
	Root string
	// Files are the parsed sources, for printing diagnostics.
	Files map[string]*hcl.File
	// Ranges maps addresses ("box.web") and attributes ("box.web.image")
	// to where they are declared, so that an error the server reports
	// about an object can be shown at its source.
	Ranges map[string]hcl.Range
}

// Inputs are the values given for variables from outside the files.
type Inputs struct {
	// Vars are -var NAME=VALUE pairs, in order.
	Vars []string
	// VarFiles are -var-file paths, in order.
	VarFiles []string
	// Environ is the environment, for PADDOCK_VAR_NAME and env().
	Environ []string
	// AllowEnv lets env() read any variable; without it env() reads only
	// PADDOCK_VAR_* ones, so that a Boxfile from someone else's repository
	// cannot put the user's credentials (AWS_SECRET_ACCESS_KEY, ...) into
	// a box.
	AllowEnv bool
}

// Files lists the Boxfile sources at path: the file itself, or every *.hcl
// file in the directory (sorted).
func Files(path string) (root string, files []string, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", nil, err
	}
	if !fi.IsDir() {
		return filepath.Dir(path), []string{path}, nil
	}
	matches, err := filepath.Glob(filepath.Join(path, "*.hcl"))
	if err != nil {
		return "", nil, err
	}
	sort.Strings(matches)
	return path, matches, nil
}

// Load reads and decodes the configuration at path (a file or a directory).
func Load(path string, in Inputs) (*Config, hcl.Diagnostics) {
	root, names, err := Files(path)
	if err != nil {
		return &Config{Files: map[string]*hcl.File{}}, hcl.Diagnostics{{
			Severity: hcl.DiagError, Summary: "Cannot read Boxfile", Detail: err.Error(),
		}}
	}
	if len(names) == 0 {
		return &Config{Files: map[string]*hcl.File{}}, hcl.Diagnostics{{
			Severity: hcl.DiagError, Summary: "No Boxfile",
			Detail: "There are no *.hcl files in " + path + ". Create Boxfile.hcl, or name a file with -f.",
		}}
	}
	srcs := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return &Config{Files: map[string]*hcl.File{}}, hcl.Diagnostics{{
				Severity: hcl.DiagError, Summary: "Cannot read Boxfile", Detail: err.Error(),
			}}
		}
		srcs[n] = b
	}
	return Decode(root, names, srcs, in)
}

// Decode decodes sources already in memory; names gives their order.
func Decode(root string, names []string, srcs map[string][]byte, in Inputs) (*Config, hcl.Diagnostics) {
	p := hclparse.NewParser()
	cfg := &Config{Root: root, Files: map[string]*hcl.File{}, Ranges: map[string]hcl.Range{}}
	var diags hcl.Diagnostics
	var files []*hcl.File
	for _, n := range names {
		f, d := p.ParseHCL(srcs[n], n)
		diags = append(diags, d...)
		if f != nil {
			cfg.Files[n] = f
			files = append(files, f)
		}
	}
	if diags.HasErrors() {
		return cfg, diags
	}
	d := &decoder{cfg: cfg, in: in, root: root}
	diags = append(diags, d.decode(hcl.MergeFiles(files))...)
	if cfg.Spec.Project == "" {
		abs, err := filepath.Abs(root)
		if err == nil {
			cfg.Spec.Project = projectName(filepath.Base(abs))
		}
	}
	return cfg, diags
}

// projectName turns a directory name into a valid project name.
func projectName(dir string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(dir) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 63 {
		s = strings.Trim(s[:63], "-")
	}
	if s == "" {
		s = "default"
	}
	return s
}
