package project

import (
	"fmt"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

func declared(spec api.ProjectSpec) State {
	spec = Normalize(spec, "img", false)
	st := State{Serial: 7, Observed: map[string]driver.BoxState{}}
	for _, b := range spec.Boxes {
		ttl, _ := api.ParseTTL(b.TTL)
		sb := store.Box{Name: b.Name, Project: spec.Project, Type: b.Type, Image: b.Image, TTL: ttl, Policy: b.Policy,
			Env: b.Env, Desired: "running", Agent: b.Agent}
		for _, m := range b.Mounts {
			sb.Mounts = append(sb.Mounts, store.Mount{Drive: m.Drive, Path: m.Path, ReadOnly: m.ReadOnly})
		}
		st.Boxes = append(st.Boxes, sb)
		st.Observed[b.Name] = driver.BoxState{Name: b.Name, Running: true, Status: "running"}
	}
	for _, d := range spec.Drives {
		st.Drives = append(st.Drives, store.Drive{Name: d.Name, Project: spec.Project, State: "ready", Size: d.Size, Labels: d.Labels})
	}
	for _, p := range spec.Policies {
		st.Policies = append(st.Policies, store.Policy{Name: p.Name, Project: spec.Project, AllowDomains: p.AllowDomains, AllowCIDRs: p.AllowCIDRs})
	}
	return st
}

func spec(n int) api.ProjectSpec {
	s := api.ProjectSpec{Project: "big", Drives: []api.DriveSpec{{Name: "cache"}},
		Policies: []api.PolicySpec{{Name: "reg", AllowDomains: []string{"*.example.org"}, AllowCIDRs: []string{"10.0.0.0/8"}}}}
	for i := 0; i < n; i++ {
		s.Boxes = append(s.Boxes, api.BoxSpec{Name: fmt.Sprintf("box-%03d", i), Type: "small", TTL: "1h", Policy: "reg",
			Env: map[string]string{"I": fmt.Sprint(i), "MODE": "test"}, Mounts: []api.Mount{{Drive: "cache", Path: "/mnt/cache"}}})
	}
	return s
}

func TestPlanActions(t *testing.T) {
	base := spec(3)
	st := declared(base)
	p, err := Plan(base, st, Options{DefaultImage: "img"})
	if err != nil || len(p.Changes) != 0 || p.Serial != 7 {
		t.Fatalf("converged plan: %+v %v", p, err)
	}

	edited := spec(3)
	edited.Boxes[0].TTL = "2h"                                             // in place
	edited.Boxes[1].Image = "img2"                                         // replace
	edited.Boxes = edited.Boxes[:2]                                        // box-002 deleted
	edited.Boxes = append(edited.Boxes, api.BoxSpec{Name: "new"})          // created
	edited.Policies[0].AllowCIDRs = []string{"10.0.0.0/8", "192.0.2.0/24"} // policy in place
	p, err = Plan(edited, st, Options{DefaultImage: "img"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range p.Changes {
		got[c.Address] = c.Action
	}
	want := map[string]string{"box.box-000": "update", "box.box-001": "replace", "box.box-002": "delete", "box.new": "create", "policy.reg": "update"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("actions %v, want %v", got, want)
	}
	if add, change, destroy := p.Counts(); add != 2 || change != 2 || destroy != 2 {
		t.Fatalf("counts %d %d %d", add, change, destroy)
	}
	if last := p.Changes[len(p.Changes)-1]; last.Action != api.ActionDelete {
		t.Fatalf("deletions must come last: %+v", p.Changes)
	}
	for _, c := range p.Changes {
		if c.Address == "box.box-001" && (len(c.Reasons) != 1 || c.Reasons[0] != "image forces replacement") {
			t.Fatalf("replace reasons %v", c.Reasons)
		}
	}
}

func TestDrivesAreKeptUnlessAsked(t *testing.T) {
	st := declared(spec(0))
	none := api.ProjectSpec{Project: "big", Policies: spec(0).Policies}
	p, _ := Plan(none, st, Options{})
	if len(p.Changes) != 0 || len(p.Notes) != 1 {
		t.Fatalf("without -drives: %+v", p)
	}
	p, _ = Plan(none, st, Options{Drives: true})
	if len(p.Changes) != 1 || p.Changes[0].Address != "drive.cache" || p.Changes[0].Action != api.ActionDelete {
		t.Fatalf("with -drives: %+v", p)
	}
	p, _ = Plan(spec(0), st, Options{Destroy: true})
	for _, c := range p.Changes {
		if c.Address == "drive.cache" {
			t.Fatalf("destroy without -drives deletes the drive: %+v", p)
		}
	}
}

func TestDrift(t *testing.T) {
	s := spec(2)
	st := declared(s)
	delete(st.Observed, "box-000")
	st.Observed["box-001"] = driver.BoxState{Name: "box-001", Status: "exited"}
	p, _ := Plan(s, st, Options{DefaultImage: "img"})
	if len(p.Changes) != 2 || p.Changes[0].Action != api.ActionCreate || p.Changes[1].Action != api.ActionUpdate {
		t.Fatalf("drift plan %+v", p.Changes)
	}
	// A box stopped by its TTL or by 'paddock stop' is not drift.
	st.Boxes[1].Desired = "stopped"
	p, _ = Plan(s, st, Options{DefaultImage: "img"})
	if len(p.Changes) != 1 {
		t.Fatalf("a stopped box counted as drift: %+v", p.Changes)
	}
}

// BenchmarkPlan200 plans a project of 200 boxes against its converged
// state, and against a state where every box's ttl changed.
func BenchmarkPlan200(b *testing.B) {
	s := spec(200)
	st := declared(s)
	edited := spec(200)
	for i := range edited.Boxes {
		edited.Boxes[i].TTL = "2h"
	}
	b.Run("converged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if p, _ := Plan(s, st, Options{DefaultImage: "img"}); len(p.Changes) != 0 {
				b.Fatal("changes")
			}
		}
	})
	b.Run("all-changed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if p, _ := Plan(edited, st, Options{DefaultImage: "img"}); len(p.Changes) != 200 {
				b.Fatal("changes")
			}
		}
	})
}

// A box whose container paddockd has just made again (removed outside
// Paddock; "created" until it starts) and whose push and setup wait says
// both.
func TestPlanSaysSetupWaitsBesideAStoppedContainer(t *testing.T) {
	base := spec(1)
	st := declared(base)
	st.Boxes[0].Setup = "pending"
	st.Observed["box-000"] = driver.BoxState{Name: "box-000", Status: "created"}
	p, err := Plan(base, st, Options{DefaultImage: "img"})
	if err != nil || len(p.Changes) != 1 {
		t.Fatalf("plan %+v %v", p, err)
	}
	c := p.Changes[0]
	if c.Action != api.ActionUpdate || len(c.Reasons) != 2 || c.Reasons[1] != "push and setup have not finished" {
		t.Fatalf("change %+v, want an update that says the container is created and setup waits", c)
	}
}

// What a box made by the apply will run once after it (its pushes and
// setup steps, in full) is in the plan where the box is made or made
// again, and nowhere else: the steps do not run again for a change in
// place, nor for a box that stays.
func TestPlanShowsPushAndSetupWhereTheyRun(t *testing.T) {
	base := spec(3)
	for i := range base.Boxes {
		base.Boxes[i].Push = []api.PushSpec{{Local: "./src", To: "/config/project"}}
		base.Boxes[i].Setup = []string{"cd /config/project && npm ci", "make"}
	}
	st := declared(base)
	edited := base
	edited.Boxes = append([]api.BoxSpec(nil), base.Boxes...)
	edited.Boxes[0].TTL = "2h"     // in place
	edited.Boxes[1].Image = "img2" // replace
	n := base.Boxes[2]
	n.Name = "new"
	edited.Boxes = append(edited.Boxes, n) // created; box-002 stays as it is
	p, err := Plan(edited, st, Options{DefaultImage: "img"})
	if err != nil {
		t.Fatal(err)
	}
	once := `push "./src"="/config/project" setup[0]="cd /config/project && npm ci" setup[1]="make"`
	want := map[string]bool{"box.box-001": true, "box.new": true}
	seen := 0
	for _, c := range p.Changes {
		var got []string
		for _, a := range c.Attrs {
			if strings.HasPrefix(a.Name, "push ") || strings.HasPrefix(a.Name, "setup[") {
				if a.Before != "" || a.Forces {
					t.Errorf("%s: %s is a change from %q (forces %v)", c.Address, a.Name, a.Before, a.Forces)
				}
				got = append(got, a.Name+"="+a.After)
			}
		}
		if g := strings.Join(got, " "); want[c.Address] != (g == once) || (!want[c.Address] && g != "") {
			t.Errorf("%s (%s): push and setup %q", c.Address, c.Action, g)
		}
		if want[c.Address] {
			seen++
		}
	}
	if seen != len(want) {
		t.Fatalf("changes %+v", p.Changes)
	}
}
