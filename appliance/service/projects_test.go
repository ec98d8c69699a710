package service

import (
	"context"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// A project's last apply is recorded (by whom, the serial it left), and
// its drift is the plan its Boxfile would make now: nothing right after
// the apply; the changed box once someone sets its policy outside the Boxfile;
// nothing after a destroy, which forgets the project.
func TestProjectsDrift(t *testing.T) {
	s, _ := newService(t)
	ctx := caller.With(context.Background(), store.User{ID: 1, Name: "olga", Role: store.RoleOwner})
	req := api.PlanRequest{Spec: api.ProjectSpec{Project: "shop", Boxes: []api.BoxSpec{{Name: "web"}}}}
	p, err := projectsOf(s).MakePlan(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := projectsOf(s).Apply(ctx, api.ApplyRequest{PlanRequest: req, Serial: p.Serial}); err != nil {
		t.Fatal(err)
	}
	serial, _ := s.Store.Serial()
	ps, err := projectsOf(s).List(ctx)
	if err != nil || len(ps) != 1 {
		t.Fatalf("projects: %+v %v", ps, err)
	}
	got := ps[0]
	if got.Name != "shop" || got.AppliedBy != "olga" || got.AppliedAt == nil || got.Serial != p.Serial+1 || got.Serial > serial || len(got.Boxes) != 1 || len(got.Drift) != 0 {
		t.Fatalf("after the apply: %+v (serial now %d)", got, serial)
	}
	if _, err := policiesOf(s).Set(ctx, "web", api.PolicyDenyAll); err != nil {
		t.Fatal(err)
	}
	ps, _ = projectsOf(s).List(ctx)
	if len(ps) != 1 || len(ps[0].Drift) != 1 || ps[0].Drift[0].Address != "box.web" {
		t.Fatalf("after a policy change outside the Boxfile, drift %+v", ps)
	}
	// A member sees nothing of it.
	if mine, err := projectsOf(s).List(caller.With(context.Background(), store.User{ID: 2, Name: "mia", Role: store.RoleMember})); err != nil || len(mine) != 0 {
		t.Fatalf("a member sees %+v %v", mine, err)
	}
	req.Destroy = true
	p, _ = projectsOf(s).MakePlan(ctx, req)
	if _, err := projectsOf(s).Apply(ctx, api.ApplyRequest{PlanRequest: req, Serial: p.Serial}); err != nil {
		t.Fatal(err)
	}
	if ps, _ = projectsOf(s).List(ctx); len(ps) != 0 {
		t.Fatalf("after a destroy: %+v", ps)
	}
}
