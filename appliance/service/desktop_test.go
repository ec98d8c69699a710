package service

import (
	"context"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
)

// New boxes have a desktop unless they say otherwise or the server's
// desktop_default is off; Boxfile boxes likewise.
func TestDesktopDefault(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	no := false
	for _, c := range []struct {
		name    string
		dflt    bool
		desktop *bool
		want    bool
	}{{"d1", true, nil, true}, {"d2", true, &no, false}, {"d3", false, nil, false}} {
		s.Cfg.DesktopDefault = c.dflt
		b, err := s.CreateBox(ctx, api.BoxPost{Name: c.name, Desktop: c.desktop})
		if err != nil {
			t.Fatal(err)
		}
		if b.Desktop != c.want {
			t.Errorf("box %s (default %v, asked %v): desktop %v", c.name, c.dflt, c.desktop, b.Desktop)
		}
	}
	s.Cfg.DesktopDefault = true
	planApply(t, s, api.PlanRequest{Spec: api.ProjectSpec{Project: "p", Boxes: []api.BoxSpec{{Name: "pb"}, {Name: "pn", Desktop: &no}}}})
	for name, want := range map[string]bool{"pb": true, "pn": false} {
		if b, err := s.GetBox(name); err != nil || b.Desktop != want {
			t.Errorf("Boxfile box %s: desktop %v (%v), want %v", name, b.Desktop, err, want)
		}
	}
	// Applying again changes nothing: the default is not drift.
	p, err := projectsOf(s).MakePlan(ctx, api.PlanRequest{Spec: api.ProjectSpec{Project: "p", Boxes: []api.BoxSpec{{Name: "pb"}, {Name: "pn", Desktop: &no}}}})
	if err != nil || len(p.Changes) != 0 {
		t.Fatalf("second plan: %+v %v", p.Changes, err)
	}
}
