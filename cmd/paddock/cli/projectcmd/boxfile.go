// Package projectcmd is the paddock CLI's Boxfile commands: plan, apply,
// destroy, validate and fmt, and how a plan and an apply are printed.
package projectcmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/archive"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/appliance/images/imagefmt"
	"github.com/paddock-dev/paddock/boxfiles"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/filecmd"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/servercmd"
)

// Exit codes of plan (as terraform plan -detailed-exitcode): 0 no changes,
// 1 an error, 2 changes present.
const exitPlanChanges = 2

// boxfileFlags are the flags shared by the Boxfile commands. Terraform's
// single-dash spellings (-var, -out, ...) are accepted too.
type boxfileFlags struct {
	file     string
	vars     []string
	varFiles []string
	asJSON   bool
	allowEnv bool
}

func (f *boxfileFlags) add(fs *pflag.FlagSet) {
	fs.StringVarP(&f.file, "file", "f", ".", "Boxfile or directory of *.hcl files")
	fs.StringArrayVar(&f.vars, "var", nil, "set a variable: NAME=VALUE (repeatable)")
	fs.StringArrayVar(&f.varFiles, "var-file", nil, "read variables from an HCL file (repeatable)")
	fs.BoolVar(&f.asJSON, "json", false, "print JSON for tools")
	fs.BoolVar(&f.allowEnv, "allow-env", false, "let env() in the Boxfile read any environment variable (otherwise PADDOCK_VAR_* only)")
}

// longDash turns Terraform-style -flag into --flag for the known names.
func longDash(args []string, names ...string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		for _, n := range names {
			if a == "-"+n || strings.HasPrefix(a, "-"+n+"=") {
				out[i] = "-" + a
			}
		}
	}
	return out
}

var boxfileFlagNames = []string{"var", "var-file", "json", "out", "auto-approve", "destroy", "drives", "check", "file", "allow-env"}

// load decodes the Boxfile and prints diagnostics; nothing is sent on error.
func loadBoxfile(e *cmdenv.Env, f boxfileFlags) (*boxfiles.Config, error) {
	cfg, diags := boxfiles.Load(f.file, boxfiles.Inputs{Vars: f.vars, VarFiles: f.varFiles, Environ: os.Environ(), AllowEnv: f.allowEnv})
	if diags.HasErrors() {
		printDiags(e, cfg.Files, diags, f.asJSON)
		n := 0
		for _, d := range diags {
			if d.Severity == hcl.DiagError {
				n++
			}
		}
		return nil, cmdenv.ErrShown{Err: fmt.Errorf("%d error(s) in the Boxfile; nothing was changed", n)}
	}
	return cfg, nil
}

func printDiags(e *cmdenv.Env, files map[string]*hcl.File, diags hcl.Diagnostics, asJSON bool) {
	if asJSON {
		boxfiles.WriteDiagnosticsJSON(e.Stdout, files, diags)
		return
	}
	width := uint(100)
	if f, ok := e.Stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			width = uint(w)
		}
	}
	boxfiles.WriteDiagnostics(e.Stderr, files, diags, width)
}

// serverDiag shows an error the server reported about an object at the
// object's place in the Boxfile, when it has one.
func serverDiag(e *cmdenv.Env, cfg *boxfiles.Config, err error, asJSON bool) error {
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Field == "" {
		return err
	}
	field := ae.Field
	for field != "" {
		if r, ok := cfg.Ranges[field]; ok {
			rr := r
			printDiags(e, cfg.Files, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Refused by the server", Detail: ae.Message, Subject: &rr}}, asJSON)
			return cmdenv.ErrShown{Err: errors.New("the server refused the Boxfile; nothing was changed")}
		}
		i := strings.LastIndexByte(field, '.')
		if i < 0 {
			break
		}
		field = field[:i]
	}
	return err
}

func Validate(e *cmdenv.Env, args []string) error {
	var f boxfileFlags
	fs := cmdenv.Flags("validate")
	f.add(fs)
	if err := cmdenv.Parse(fs, longDash(args, boxfileFlagNames...)); err != nil {
		return err
	}
	cfg, err := loadBoxfile(e, f)
	if err != nil {
		return err
	}
	if f.asJSON {
		return cmdenv.PrintJSON(e.Stdout, boxfiles.DiagnosticsJSON(cfg.Files, nil))
	}
	fmt.Fprintf(e.Stdout, "The Boxfile is valid: project %q, %s, %s, %s.\n", cfg.Spec.Project,
		cmdenv.Plural(int64(len(cfg.Spec.Boxes)), "box", "boxes"), cmdenv.Plural(int64(len(cfg.Spec.Drives)), "drive", "drives"), cmdenv.Plural(int64(len(cfg.Spec.Policies)), "policy", "policies"))
	return nil
}

func Fmt(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("fmt")
	file := fs.StringP("file", "f", ".", "Boxfile or directory")
	check := fs.Bool("check", false, "change nothing; exit 3 if a file is not in canonical form")
	if err := cmdenv.Parse(fs, longDash(args, boxfileFlagNames...)); err != nil {
		return err
	}
	_, names, err := boxfiles.Files(*file)
	if err != nil {
		return err
	}
	unformatted := 0
	for _, n := range names {
		src, err := os.ReadFile(n)
		if err != nil {
			return err
		}
		out := boxfiles.Format(src)
		if string(out) == string(src) {
			continue
		}
		unformatted++
		fmt.Fprintln(e.Stdout, n)
		if !*check {
			if err := rewriteFile(n, out); err != nil {
				return err
			}
		}
	}
	if *check && unformatted > 0 {
		return cmdenv.ExitError{Code: 3}
	}
	return nil
}

// rewriteFile replaces a file's content, keeping its mode.
func rewriteFile(name string, b []byte) error {
	fi, err := os.Stat(name)
	if err != nil {
		return err
	}
	return cmdenv.WriteFileAtomic(name, b, fi.Mode().Perm(), false)
}

// savedPlan is the file 'plan -out' writes and 'apply FILE' reads.
type savedPlan struct {
	Version int             `json:"version"`
	Root    string          `json:"root"`
	Request api.PlanRequest `json:"request"`
	Plan    api.Plan        `json:"plan"`
}

func Plan(e *cmdenv.Env, args []string) error {
	var f boxfileFlags
	fs := cmdenv.Flags("plan")
	f.add(fs)
	out := fs.String("out", "", "save the plan to FILE for 'apply FILE'")
	destroy := fs.Bool("destroy", false, "plan the removal of the project's boxes")
	drives := fs.Bool("drives", false, "also delete drives that are no longer declared (their data goes)")
	if err := cmdenv.Parse(fs, longDash(args, boxfileFlagNames...)); err != nil {
		return err
	}
	cfg, err := loadBoxfile(e, f)
	if err != nil {
		return err
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	if err := digestImages(e, cfg, f.asJSON); err != nil {
		return err
	}
	req := api.PlanRequest{Spec: cfg.Spec, Destroy: *destroy, Drives: *drives}
	plan, err := c.Plan(e.Ctx, req)
	if err != nil {
		return serverDiag(e, cfg, err, f.asJSON)
	}
	if f.asJSON {
		cmdenv.PrintJSON(e.Stdout, plan)
	} else {
		renderPlan(e.Stdout, plan)
	}
	if *out != "" {
		b, _ := json.MarshalIndent(savedPlan{Version: 1, Root: absOr(cfg.Root), Request: req, Plan: plan}, "", "  ")
		if err := os.WriteFile(*out, append(b, '\n'), 0o600); err != nil {
			return err
		}
		if !f.asJSON {
			fmt.Fprintf(e.Stdout, "\nSaved the plan to %s; apply it with: paddock apply %s\n", *out, *out)
		}
	}
	if len(plan.Changes) > 0 {
		return cmdenv.ExitError{Code: exitPlanChanges}
	}
	return nil
}

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func Apply(e *cmdenv.Env, args []string) error { return applyOrDestroy(e, "apply", args) }

func Destroy(e *cmdenv.Env, args []string) error { return applyOrDestroy(e, "destroy", args) }

func applyOrDestroy(e *cmdenv.Env, verb string, args []string) error {
	var f boxfileFlags
	fs := cmdenv.Flags(verb)
	f.add(fs)
	auto := fs.Bool("auto-approve", false, "do not ask for confirmation")
	drives := fs.Bool("drives", false, "also delete drives that are no longer declared (destroy: all the project's drives); their data goes")
	if err := cmdenv.Parse(fs, longDash(args, boxfileFlagNames...)); err != nil {
		return err
	}
	c, err := e.Client()
	if err != nil {
		return err
	}

	var saved savedPlan
	var cfg *boxfiles.Config
	if verb == "apply" && fs.NArg() == 1 {
		b, err := os.ReadFile(fs.Arg(0))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &saved); err != nil || saved.Version != 1 {
			return fmt.Errorf("%s is not a saved plan", fs.Arg(0))
		}
		*auto = true // a saved plan was already reviewed
	} else if fs.NArg() > 0 {
		return cmdenv.Usagef("unexpected argument %q", fs.Arg(0))
	} else {
		if cfg, err = loadBoxfile(e, f); err != nil {
			return err
		}
		if err := digestImages(e, cfg, f.asJSON); err != nil {
			return err
		}
		saved.Root = absOr(cfg.Root)
		saved.Request = api.PlanRequest{Spec: cfg.Spec, Destroy: verb == "destroy", Drives: *drives}
		if saved.Plan, err = c.Plan(e.Ctx, saved.Request); err != nil {
			return serverDiag(e, cfg, err, f.asJSON)
		}
		if !f.asJSON {
			renderPlan(e.Stdout, saved.Plan)
		}
		if len(saved.Plan.Changes) == 0 && len(saved.Plan.Notes) == 0 {
			return nil
		}
		if len(saved.Plan.Changes) > 0 && !*auto {
			if err := e.Confirm(fmt.Sprintf("\nDo you want to %s these changes to project %q? Only 'yes' will be accepted: ", verb, saved.Plan.Project), "yes", "--auto-approve"); err != nil {
				return err
			}
			if verb == "destroy" && *drives {
				if err := e.Confirm(fmt.Sprintf("This also deletes the data on the project's drives. Type the project name (%s) to confirm: ", saved.Plan.Project), saved.Plan.Project, "--auto-approve"); err != nil {
					return err
				}
			}
		}
	}

	if built, err := buildImages(e, c, saved); err != nil {
		return err
	} else if built {
		// A build's builder box moved the serial: the plan is made again,
		// and applied if it is what was shown, less the images now built.
		again, err := c.Plan(e.Ctx, saved.Request)
		if err != nil {
			return err
		}
		if changeList(again, false) != changeList(saved.Plan, true) {
			return fmt.Errorf("the project's state changed while its images were built: plan again (the images are built; nothing else was changed)")
		}
		saved.Plan.Serial = again.Serial
	}
	res, err := c.Apply(e.Ctx, api.ApplyRequest{PlanRequest: saved.Request, Serial: saved.Plan.Serial})
	if err != nil {
		if cfg != nil {
			return serverDiag(e, cfg, err, f.asJSON)
		}
		return err
	}
	if f.asJSON {
		cmdenv.PrintJSON(e.Stdout, res)
	} else {
		fmt.Fprintln(e.Stdout)
		renderApply(e.Stdout, res)
	}
	setupFailed := runSetups(e, c, saved, res)
	if len(res.Failed) > 0 || setupFailed > 0 {
		return fmt.Errorf("%d object(s) failed, %d setup(s) failed; fix the cause and run '%s' again to finish", len(res.Failed), setupFailed, verb)
	}
	if !f.asJSON {
		add, change, destroy := res.Plan.Counts()
		title := strings.ToUpper(verb[:1]) + verb[1:]
		fmt.Fprintf(e.Stdout, "\n%s complete: %d added, %d changed, %d destroyed.\n", title, add, change, destroy)
	}
	return nil
}

// runSetups pushes files and runs setup commands in the boxes the apply
// made, and reports each outcome to the server. It returns how many failed.
func runSetups(e *cmdenv.Env, c *client.Client, saved savedPlan, res api.ApplyResult) int {
	specs := map[string]api.BoxSpec{}
	for _, b := range saved.Request.Spec.Boxes {
		specs[b.Name] = b
	}
	failed := 0
	for _, name := range res.Setup {
		b := specs[name]
		err := setupBox(e, c, saved.Root, b)
		post := api.SetupPost{OK: err == nil}
		if err != nil {
			failed++
			post.Error = err.Error()
			fmt.Fprintf(e.Stdout, "box.%s: setup failed: %v\n", name, err)
		} else {
			fmt.Fprintf(e.Stdout, "box.%s: setup done\n", name)
		}
		if rerr := c.SetupDone(e.Ctx, name, post); rerr != nil {
			fmt.Fprintf(e.Stderr, "box.%s: recording the setup result: %v\n", name, rerr)
		}
	}
	return failed
}

func setupBox(e *cmdenv.Env, c *client.Client, root string, b api.BoxSpec) error {
	for _, p := range b.Push {
		local := p.Local
		if !filepath.IsAbs(local) {
			local = filepath.Join(root, local)
		}
		fmt.Fprintf(e.Stdout, "box.%s: pushing %s to %s\n", b.Name, p.Local, p.To)
		push := archive.StartPush(local, true, nil)
		err := c.Push(e.Ctx, b.Name, p.To, push)
		ig, st, _ := push.End(err)
		if err != nil {
			return fmt.Errorf("push %s: %w", p.Local, err)
		}
		fmt.Fprintf(e.Stdout, "box.%s: %s\n", b.Name, filecmd.PushSummary(b.Name, p.To, st, ig))
	}
	for i, cmd := range b.Setup {
		fmt.Fprintf(e.Stdout, "box.%s: setup %d/%d: %s\n", b.Name, i+1, len(b.Setup), cmd)
		code, err := c.Exec(e.Ctx, b.Name, api.ExecPost{Cmd: []string{"bash", "-lc", cmd}}, client.ExecIO{Stdout: e.Stdout, Stderr: e.Stderr})
		if err != nil {
			return fmt.Errorf("setup step %d: %w", i+1, err)
		}
		if code != 0 {
			return fmt.Errorf("setup step %d (%s) exited with code %d", i+1, cmd, code)
		}
	}
	return nil
}

// digestImages reads each image block's context folder for its digest
// (what the plan compares with the image's last build). A context that
// is not there, or has no Dockerfile, is an error at the block.
func digestImages(e *cmdenv.Env, cfg *boxfiles.Config, asJSON bool) error {
	for i, im := range cfg.Spec.Images {
		dir := im.Context
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cfg.Root, dir)
		}
		d, ok, err := servercmd.ContextDigest(dir, im.Dockerfile)
		if err == nil && !ok {
			err = fmt.Errorf("the context %s has no %s", im.Context, im.Dockerfile)
		}
		if err != nil {
			addr := "image." + im.Name + ".context"
			if _, ok := cfg.Ranges[addr]; !ok {
				addr = "image." + im.Name
			}
			return serverDiag(e, cfg, &api.Error{Code: api.CodeInvalid, Field: addr, Message: err.Error()}, asJSON)
		}
		cfg.Spec.Images[i].ContextDigest = d
	}
	return nil
}

// buildImages builds the images a plan creates or changes, from their
// contexts, before the rest is applied (boxes may be made from them). A
// context that changed since the plan was made is refused.
func buildImages(e *cmdenv.Env, c *client.Client, saved savedPlan) (bool, error) {
	specs := map[string]api.ImageSpec{}
	for _, im := range saved.Request.Spec.Images {
		specs[im.Name] = im
	}
	built := false
	for _, ch := range saved.Plan.Changes {
		name, ok := strings.CutPrefix(ch.Address, "image.")
		if !ok {
			continue
		}
		im := specs[name]
		dir := im.Context
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(saved.Root, dir)
		}
		d, _, err := servercmd.ContextDigest(dir, im.Dockerfile)
		if err != nil {
			return built, fmt.Errorf("image.%s: %w", name, err)
		}
		if d != im.ContextDigest {
			return built, fmt.Errorf("image.%s: its context %s changed since the plan was made: plan again", name, im.Context)
		}
		ignore, err := servercmd.ReadDockerignore(filepath.Join(dir, ".dockerignore"))
		if err != nil {
			return built, err
		}
		fmt.Fprintf(e.Stdout, "image.%s: building %s:%s\n", name, im.Name, im.Tag)
		im2, err := c.BuildImage(e.Ctx, client.ImageBuild{Name: im.Name, Tag: im.Tag, Dockerfile: im.Dockerfile, Policy: im.Policy, Project: saved.Request.Spec.Project},
			servercmd.PackContext(dir, ignore), func(line string) { fmt.Fprintln(e.Stderr, line) })
		if err != nil {
			return built, fmt.Errorf("image.%s: %w; the rest was not applied", name, err)
		}
		built = true
		fmt.Fprintf(e.Stdout, "image.%s: built %s (%s)\n", name, im2.Ref, imagefmt.Short(im2.ID))
	}
	return built, nil
}

// changeList is a plan's changes, one "ACTION ADDRESS" a line, without
// the images' (noImages) when they have been built since.
func changeList(p api.Plan, noImages bool) string {
	var b strings.Builder
	for _, c := range p.Changes {
		if noImages && strings.HasPrefix(c.Address, "image.") {
			continue
		}
		fmt.Fprintf(&b, "%s %s\n", c.Action, c.Address)
	}
	return b.String()
}
