package service

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/desktop"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Whatever removes a box (rm, a Boxfile applied without it, a Boxfile's
// destroy), every item of state the server keeps of it outside the
// engine (boxState) goes with its tombstone: a later box of the same name
// sees none of it, and none of it stays on disk. Driven from boxState, so
// that a new kind of per-box state without its line here fails.
func TestRemovedBoxLeavesNothingBehind(t *testing.T) {
	ctx := context.Background()
	yes := true
	// What the test makes of each item for the box, what a box of that
	// name sees of it, and the files it is kept in.
	type item struct {
		make  func(t *testing.T, s *Service, box string)
		seen  func(t *testing.T, s *Service, box string) int
		files func(s *Service) []string
	}
	// The desktop keeps its gallery, and the jobs their logs, here
	// (KeepsOfBox); each run makes its own over its own service.
	var dk *desktop.Desktop
	items := map[string]item{
		"job logs": {
			make: func(t *testing.T, s *Service, box string) {
				j, err := jobsOf(s).Start(box, api.ExecPost{Cmd: []string{"job"}})
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; ; i++ {
					if j, _ := jobsOf(s).Get(box, j.ID); j.State != "running" {
						break
					}
					if i == 500 {
						t.Fatal("the job did not end")
					}
					time.Sleep(10 * time.Millisecond)
				}
			},
			seen: func(t *testing.T, s *Service, box string) int {
				js, err := jobsOf(s).List(box)
				if err != nil {
					t.Fatal(err)
				}
				return len(js)
			},
			files: func(s *Service) []string {
				m, _ := filepath.Glob(filepath.Join(s.Cfg.StateDir, "jobs", "*"))
				return m
			},
		},
		"staging leftovers": {
			make: func(t *testing.T, s *Service, box string) {
				if err := s.Store.AddLeftover(store.Leftover{Kind: "box", Target: box, Path: "/config/.paddock-push-left"}); err != nil {
					t.Fatal(err)
				}
			},
			seen: func(t *testing.T, s *Service, box string) int {
				ls, _ := s.Store.Leftovers()
				n := 0
				for _, l := range ls {
					if l.Kind == "box" && l.Target == box {
						n++
					}
				}
				return n
			},
			files: func(s *Service) []string {
				ls, _ := s.Store.Leftovers()
				var out []string
				for _, l := range ls {
					out = append(out, l.Path)
				}
				return out
			},
		},
		"screenshots": {
			make: func(t *testing.T, s *Service, box string) {
				if _, err := dk.TakeScreenshot(ctx, box); err != nil {
					t.Fatal(err)
				}
			},
			seen: func(t *testing.T, s *Service, box string) int {
				shots, err := dk.Screenshots(box)
				if err != nil {
					t.Fatal(err)
				}
				return len(shots)
			},
			files: func(s *Service) []string {
				m, _ := filepath.Glob(filepath.Join(s.Cfg.StateDir, "screenshots", "*", "*"))
				return m
			},
		},
	}
	lines := func(t *testing.T, s *Service) {
		for _, st := range boxState {
			if _, ok := items[st.What]; !ok {
				t.Fatalf("per-box state %q has no line in this test", st.What)
			}
		}
		for _, k := range s.keptOfBox() {
			if _, ok := items[k.What]; !ok {
				t.Fatalf("per-box state %q (a capability's) has no line in this test", k.What)
			}
		}
	}
	spec := func(boxes ...api.BoxSpec) api.PlanRequest {
		return api.PlanRequest{Spec: api.ProjectSpec{Project: "p", Boxes: boxes}}
	}
	web := api.BoxSpec{Name: "web", Desktop: &yes}
	for _, path := range []struct {
		name   string
		remove func(t *testing.T, s *Service)
	}{
		{"rm", func(t *testing.T, s *Service) {
			if err := s.RemoveBox(ctx, "web"); err != nil {
				t.Fatal(err)
			}
		}},
		{"Boxfile applied without it", func(t *testing.T, s *Service) {
			planApply(t, s, spec(api.BoxSpec{Name: "other"}))
		}},
		{"Boxfile destroy", func(t *testing.T, s *Service) {
			req := spec(web)
			req.Destroy = true
			planApply(t, s, req)
		}},
	} {
		t.Run(path.name, func(t *testing.T) {
			s, drv := newService(t)
			s.Rec.Forget = s.ForgetBox
			dk = desktop.New(s, s.Log, filepath.Join(s.Cfg.StateDir, "screenshots"))
			jobsOf(s) // the jobs keep their logs here (KeepsOfBox)
			lines(t, s)
			drv.ExecFunc = func(_ string, spec driver.ExecSpec) (int, error) {
				if spec.Stdout != nil {
					spec.Stdout.Write(append(append([]byte{}, pngMagic...), "output"...))
				}
				return 0, nil
			}
			planApply(t, s, spec(web))
			for what, it := range items {
				it.make(t, s, "web")
				if it.seen(t, s, "web") == 0 || len(it.files(s)) == 0 {
					t.Fatalf("%s: the test made none", what)
				}
			}
			path.remove(t, s)
			if _, err := s.Rec.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CreateBox(ctx, api.BoxPost{Name: "web", Desktop: &yes}); err != nil {
				t.Fatalf("a new box of the name: %v", err)
			}
			for what, it := range items {
				if n := it.seen(t, s, "web"); n != 0 {
					t.Errorf("%s: the new box of the name sees %d of the removed box's", what, n)
				}
				if f := it.files(s); len(f) != 0 {
					t.Errorf("%s: the removed box's are still on disk: %v", what, f)
				}
			}
			if _, err := os.Stat(s.Cfg.StateDir); err != nil {
				t.Fatal(err)
			}
		})
	}
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")
