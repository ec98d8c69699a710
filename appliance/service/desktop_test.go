package service

import (
	"context"
	"errors"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
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
	p, err := s.PlanProject(ctx, api.PlanRequest{Spec: api.ProjectSpec{Project: "p", Boxes: []api.BoxSpec{{Name: "pb"}, {Name: "pn", Desktop: &no}}}})
	if err != nil || len(p.Changes) != 0 {
		t.Fatalf("second plan: %+v %v", p.Changes, err)
	}
}

// blockingExec is the fake engine with an Exec that waits to be let go.
type blockingExec struct {
	*fake.Driver
	started chan struct{}
	release chan struct{}
}

func (d *blockingExec) Exec(ctx context.Context, name string, spec driver.ExecSpec) (int, error) {
	d.started <- struct{}{}
	<-d.release
	spec.Stdout.Write(pngMagic)
	return 0, nil
}

// At most MaxScreenshots run at once; one more is refused with "too
// many", and once one ends another may start.
func TestScreenshotsBounded(t *testing.T) {
	s, drv := newService(t)
	ctx := context.Background()
	yes := true
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "d", Desktop: &yes}); err != nil {
		t.Fatal(err)
	}
	be := &blockingExec{Driver: drv, started: make(chan struct{}, 10), release: make(chan struct{})}
	s.Driver = be
	done := make(chan error, MaxScreenshots+1)
	for i := 0; i < MaxScreenshots; i++ {
		go func() { _, err := s.Screenshot(ctx, "d"); done <- err }()
		<-be.started
	}
	_, err := s.Screenshot(ctx, "d")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeTooMany {
		t.Fatalf("a screenshot beyond the bound: %v", err)
	}
	be.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { _, err := s.Screenshot(ctx, "d"); done <- err }()
	<-be.started
	close(be.release)
	for i := 0; i < MaxScreenshots; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
