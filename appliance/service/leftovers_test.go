package service

import (
	"context"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// CleanLeftovers removes what uploads of an earlier process left, and
// never the staging folder of an upload this process is carrying out (the
// load test found a push whose folder went from under it).
func TestCleanLeftoversSparesUploadsInProgress(t *testing.T) {
	s, drv := newService(t)
	ctx := context.Background()
	var removed []string
	drv.ExecFunc = func(box string, spec driver.ExecSpec) (int, error) {
		removed = append(removed, box+":"+strings.Join(spec.Cmd, " "))
		return 0, nil
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "up"}); err != nil {
		t.Fatal(err)
	}
	live := store.Leftover{Kind: "box", Target: "up", Path: "/config/.paddock-push-live"}
	dead := store.Leftover{Kind: "box", Target: "up", Path: "/config/.paddock-push-dead"}
	gone := store.Leftover{Kind: "box", Target: "nobox", Path: "/x/.paddock-push-gone"}
	liveVol := store.Leftover{Kind: "volume", Target: "dr", Path: "restore-live"}
	deadVol := store.Leftover{Kind: "volume", Target: "dr", Path: "restore-dead"}
	if err := s.AddLeftover(live); err != nil {
		t.Fatal(err)
	}
	if err := s.AddLeftover(liveVol); err != nil {
		t.Fatal(err)
	}
	for _, l := range []store.Leftover{dead, gone, deadVol} {
		if err := s.Store.AddLeftover(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CleanLeftovers(ctx); err != nil {
		t.Fatal(err)
	}
	ls, err := s.Store.Leftovers()
	if err != nil {
		t.Fatal(err)
	}
	left := map[store.Leftover]bool{}
	for _, l := range ls {
		left[l] = true
	}
	if !left[live] || !left[liveVol] || !left[deadVol] || left[dead] || left[gone] || len(ls) != 3 {
		t.Fatalf("after cleaning: %v", ls)
	}
	if strings.Join(removed, ";") != "up:rm -rf -- /config/.paddock-push-dead" {
		t.Fatalf("removed in boxes: %q", removed)
	}
	s.DoneLeftover(liveVol)
	if err := s.CleanLeftovers(ctx); err != nil {
		t.Fatal(err)
	}
	if ls, _ := s.Store.Leftovers(); len(ls) != 1 || ls[0] != live {
		t.Fatalf("once the restore ended: %v", ls)
	}
}
