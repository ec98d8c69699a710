package service

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/paddock-dev/paddock/appliance/access"
	"github.com/paddock-dev/paddock/appliance/agents"
	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
	"github.com/paddock-dev/paddock/appliance/drives"
	"github.com/paddock-dev/paddock/appliance/grants"
	"github.com/paddock-dev/paddock/appliance/jobs"
	"github.com/paddock-dev/paddock/appliance/policy"
	"github.com/paddock-dev/paddock/appliance/project"
	"github.com/paddock-dev/paddock/appliance/reconcile"
	"github.com/paddock-dev/paddock/appliance/secrets"
	"github.com/paddock-dev/paddock/appliance/store"
)

func newService(t testing.TB) (*Service, *fake.Driver) {
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg, err := config.Load(nil, []string{"PADDOCK_CONFIG=" + os.DevNull, "PADDOCK_STATE_DIR=" + dir, "PADDOCK_IMAGE=img"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Images = []string{"img2"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	drv := fake.New("img", "img2", "owner-snapshot:1", "sha256:0123abcd")
	rec := &reconcile.Reconciler{Store: st, Driver: drv, Types: Types(cfg), Log: log}
	return &Service{Store: st, Rec: rec, Driver: drv, Cfg: cfg, Log: log, Life: context.Background()}, drv
}

// accesses are the users' verbs (package access) of each service a test
// made: one each, as paddockd has, since sign-in links, device logins and
// mint budgets are kept in memory.
var accesses sync.Map

// accessOf is the users' verbs over s.
func accessOf(s *Service) *access.Access {
	a, _ := accesses.LoadOrStore(s, access.New(s, s.Store, &s.Cfg, s.Log))
	return a.(*access.Access)
}

// jobses are the jobs (package jobs) of each service a test made: one
// each, as paddockd has (running jobs are kept in memory).
var jobses sync.Map

// jobsOf is the jobs over s.
func jobsOf(s *Service) *jobs.Jobs {
	if j, ok := jobses.Load(s); ok {
		return j.(*jobs.Jobs)
	}
	j := jobs.New(s, s.Store, s.Driver, &s.Cfg, s.Log, s.Life)
	jobses.Store(s, j)
	return j
}

// secretsOf is the secrets (package secrets) over s: what they keep is
// in the store, so one made at each call is as good as paddockd's.
func secretsOf(s *Service) *secrets.Secrets { return secrets.New(s, s.Store, s.Log) }

// agentsOf is the agents (package agents) over s, whose prompts run as
// jobsOf(s)'s jobs.
func agentsOf(s *Service) *agents.Agents { return agents.New(s, s.Store, jobsOf(s), &s.Cfg) }

// projectsOf is the projects (package project) over s: what they keep
// is in the store, so one made at each call is as good as paddockd's.
func projectsOf(s *Service) *project.Projects {
	return project.New(s, s.Store, s.Rec, s.Driver, &s.Cfg)
}

// drivesOf is the drive verbs (package drives) over s.
func drivesOf(s *Service) *drives.Drives { return drives.New(s, s.Store, s.Driver, &s.Cfg, s.Log) }

// sharesOf is the box shares (package grants) over s.
func sharesOf(s *Service) *grants.Grants { return grants.New(s, s.Store) }

// policiesOf is the policy verbs (package policy) over s.
func policiesOf(s *Service) *policy.Policies { return policy.New(s, s.Store, s.Rec, nil) }

type fataler interface {
	Helper()
	Fatalf(string, ...any)
}

func planApply(t fataler, s *Service, req api.PlanRequest) (api.Plan, api.ApplyResult) {
	t.Helper()
	ctx := context.Background()
	p, err := projectsOf(s).MakePlan(ctx, req)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	res, err := projectsOf(s).Apply(ctx, api.ApplyRequest{PlanRequest: req, Serial: p.Serial})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if len(res.Failed) > 0 {
		t.Fatalf("apply failed: %v", res.Failed)
	}
	return p, res
}

func genSpec(t *rapid.T) api.ProjectSpec {
	spec := api.ProjectSpec{Project: "p"}
	drives := rapid.SliceOfDistinct(rapid.SampledFrom([]string{"d1", "d2", "d3"}), func(s string) string { return s }).Draw(t, "drives")
	for _, d := range drives {
		spec.Drives = append(spec.Drives, api.DriveSpec{Name: d, Size: rapid.SampledFrom([]string{"", "1GiB"}).Draw(t, "size")})
	}
	hasPolicy := rapid.Bool().Draw(t, "policy")
	if hasPolicy {
		spec.Policies = []api.PolicySpec{{Name: "pol", AllowCIDRs: []string{rapid.SampledFrom([]string{"10.0.0.0/8", "10.1.0.0/16"}).Draw(t, "cidr")}}}
	}
	names := rapid.SliceOfDistinct(rapid.SampledFrom([]string{"a", "b", "c", "d"}), func(s string) string { return s }).Draw(t, "boxes")
	for _, n := range names {
		b := api.BoxSpec{
			Name:  n,
			Type:  rapid.SampledFrom([]string{"", "small", "medium"}).Draw(t, "type"),
			Image: rapid.SampledFrom([]string{"", "img", "img2"}).Draw(t, "image"),
			TTL:   rapid.SampledFrom([]string{"", "1h", "30m"}).Draw(t, "ttl"),
			Env:   map[string]string{"K": rapid.SampledFrom([]string{"1", "2"}).Draw(t, "env")},
		}
		if hasPolicy && rapid.Bool().Draw(t, "usepol") {
			b.Policy = "pol"
		}
		if len(drives) > 0 && rapid.Bool().Draw(t, "mount") {
			d := rapid.SampledFrom(drives).Draw(t, "mdrive")
			b.Mounts = []api.Mount{{Drive: d, Path: "/mnt/" + d}}
		}
		spec.Boxes = append(spec.Boxes, b)
	}
	return spec
}

// Properties: applying a plan and planning again gives no changes; a drive
// is destroyed only when its declaration was removed and Drives was given.
func TestProjectProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s, drv := newService(t)
		ctx := context.Background()
		for step := 0; step < 3; step++ {
			spec := genSpec(rt)
			req := api.PlanRequest{Spec: spec, Drives: rapid.Bool().Draw(rt, "drivesflag"), Destroy: rapid.Float64Range(0, 1).Draw(rt, "destroy") < 0.15}
			drv.Ops = nil
			planApply(rt, s, req)
			// Settle: removing a drive takes the reconciler a pass after its box goes.
			s.Reconcile(ctx)
			for _, op := range drv.Ops {
				name, ok := strings.CutPrefix(op, "remove-volume drive/")
				if !ok {
					continue
				}
				declared := false
				for _, d := range spec.Drives {
					declared = declared || d.Name == name
				}
				if !req.Drives || (declared && !req.Destroy) {
					rt.Fatalf("step %d: drive %s destroyed (declared %v, drives flag %v, destroy %v)", step, name, declared, req.Drives, req.Destroy)
				}
			}
			if !req.Destroy {
				// What was declared is what the spec says.
				for _, b := range spec.Boxes {
					got, err := s.GetBox(b.Name)
					if err != nil {
						rt.Fatal(err)
					}
					want := api.BoxSpec{Type: b.Type, Image: b.Image, Policy: b.Policy}
					if want.Type == "" {
						want.Type = "small"
					}
					if want.Image == "" {
						want.Image = "img"
					}
					if want.Policy == "" {
						want.Policy = api.PolicyAllowAll
					}
					ttl, _ := api.ParseTTL(b.TTL)
					if got.Type != want.Type || got.Image != want.Image || got.Policy != want.Policy ||
						got.TTLSeconds != int64(ttl.Seconds()) || got.Env["K"] != b.Env["K"] || len(got.Mounts) != len(b.Mounts) {
						rt.Fatalf("step %d: box %s declared as %+v, spec %+v", step, b.Name, got, b)
					}
					if got.Status != "running" {
						rt.Fatalf("step %d: box %s is %s", step, b.Name, got.Status)
					}
				}
			}
			again, err := projectsOf(s).MakePlan(ctx, req)
			if err != nil {
				rt.Fatal(err)
			}
			if len(again.Changes) != 0 {
				rt.Fatalf("step %d: not converged: %+v", step, again.Changes)
			}
		}
	})
}

func TestApplyRefusesAStalePlan(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	req := api.PlanRequest{Spec: api.ProjectSpec{Project: "p", Boxes: []api.BoxSpec{{Name: "web"}}}}
	p, err := projectsOf(s).MakePlan(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drivesOf(s).Create(ctx, api.DrivePost{Name: "other"}); err != nil {
		t.Fatal(err)
	}
	_, err = projectsOf(s).Apply(ctx, api.ApplyRequest{PlanRequest: req, Serial: p.Serial})
	if e, ok := err.(*api.Error); !ok || e.Code != api.CodeConflict || !strings.Contains(e.Message, "plan again") {
		t.Fatalf("stale apply: %v", err)
	}
	if bs, _ := s.ListBoxes(ctx); len(bs) != 0 {
		t.Fatalf("a stale plan changed something: %v", bs)
	}
}

func TestProjectsDoNotTouchEachOther(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "adhoc"}); err != nil {
		t.Fatal(err)
	}
	planApply(t, s, api.PlanRequest{Spec: api.ProjectSpec{Project: "one", Boxes: []api.BoxSpec{{Name: "web"}}}})
	p, err := projectsOf(s).MakePlan(ctx, api.PlanRequest{Spec: api.ProjectSpec{Project: "two", Boxes: []api.BoxSpec{{Name: "api"}}}, Destroy: false})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 1 || p.Changes[0].Address != "box.api" {
		t.Fatalf("project two plans %+v", p.Changes)
	}
	_, err = projectsOf(s).MakePlan(ctx, api.PlanRequest{Spec: api.ProjectSpec{Project: "two", Boxes: []api.BoxSpec{{Name: "web"}}}})
	if e, ok := err.(*api.Error); !ok || e.Field != "box.web" || !strings.Contains(e.Message, `project "one"`) {
		t.Fatalf("taking another project's name: %v", err)
	}
	_, err = projectsOf(s).MakePlan(ctx, api.PlanRequest{Spec: api.ProjectSpec{Project: "two", Boxes: []api.BoxSpec{{Name: "adhoc"}}}})
	if err == nil || !strings.Contains(err.Error(), "paddock new") {
		t.Fatalf("taking a 'paddock new' box's name: %v", err)
	}
	// Destroying project one leaves the others alone.
	planApply(t, s, api.PlanRequest{Spec: api.ProjectSpec{Project: "one"}, Destroy: true})
	bs, _ := s.ListBoxes(ctx)
	if len(bs) != 1 || bs[0].Name != "adhoc" {
		t.Fatalf("boxes after destroying project one: %v", fmt.Sprint(bs))
	}
}

func TestFailedSetupForcesReplacement(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	req := api.PlanRequest{Spec: api.ProjectSpec{Project: "p", Boxes: []api.BoxSpec{{Name: "web", Setup: []string{"false"}}}}}
	_, res := planApply(t, s, req)
	if len(res.Setup) != 1 || res.Setup[0] != "web" {
		t.Fatalf("setup list %v", res.Setup)
	}
	if err := projectsOf(s).SetupDone("web", api.SetupPost{OK: false, Error: "step 1 exited with code 1"}); err != nil {
		t.Fatal(err)
	}
	b, _ := s.GetBox("web")
	if b.Status != "failed" || !strings.Contains(b.Error, "code 1") {
		t.Fatalf("box after failed setup: %+v", b)
	}
	p, err := projectsOf(s).MakePlan(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 1 || p.Changes[0].Action != api.ActionReplace {
		t.Fatalf("plan after failed setup: %+v", p.Changes)
	}
	_, res = planApply(t, s, req)
	if len(res.Setup) != 1 {
		t.Fatalf("setup not asked again: %+v", res)
	}
}
