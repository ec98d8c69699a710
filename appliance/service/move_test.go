package service

import (
	"context"
	"fmt"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// What a drain moves in one go: boxes that share drives, by any chain of
// them, go together with those drives; a drive no box mounts goes alone;
// nothing of another server is taken.
func TestMoveGroups(t *testing.T) {
	box := func(name, node string, drives ...string) store.Box {
		b := store.Box{Name: name, Node: node}
		for _, d := range drives {
			b.Mounts = append(b.Mounts, store.Mount{Drive: d, Path: "/mnt/" + d})
		}
		return b
	}
	boxes := []store.Box{
		box("a", "n2", "x"),
		box("b", "n2", "x", "y"),
		box("c", "n2", "y"),
		box("d", "n2"),
		box("e", "n2", "z"),
		box("f", "n3", "w"),
	}
	drives := []store.Drive{
		{Name: "w", Node: "n3", State: "ready"}, {Name: "x", Node: "n2", State: "ready"}, {Name: "y", Node: "n2", State: "ready"},
		{Name: "z", Node: "n2", State: "ready"}, {Name: "lone", Node: "n2", State: "ready"}, {Name: "gone", Node: "n2", State: "deleting"},
	}
	var got []string
	for _, g := range moveGroups(boxes, drives, "n2") {
		got = append(got, fmt.Sprint(boxNames(g.boxes), g.drives))
	}
	want := []string{"[a b c] [x y]", "[d] []", "[e] [z]", "[] [lone]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("groups:\n got %q\nwant %q", got, want)
	}
}

// A box asked for on a server takes a pool box of that server, if it has
// one ready, and is made cold there if not; never a pool box elsewhere.
func TestPoolClaimOnTheServerAsked(t *testing.T) {
	s, nodes := clustered(t)
	s.Cfg.WarmPool = map[string]int{"small": 3}
	s.Cfg.DesktopDefault = false
	for _, n := range nodes {
		drv := n.Driver
		drv.ExecFunc = func(box string, _ driver.ExecSpec) (int, error) {
			if drv.Hostname(box) == "" {
				return -1, fmt.Errorf("%w: box %s does not run", driver.ErrNotFound, box)
			}
			return 0, nil
		}
	}
	fillPool(t, s, 3)
	pool, _ := s.Store.ListPool()
	on := map[string]string{}
	for _, p := range pool {
		on[p.Node] = p.Key
	}
	if len(on) < 2 {
		t.Fatalf("the pool is on %d server(s): %v", len(on), on)
	}
	ctx := context.Background()
	for i, n := range []string{"n2", "n3"} {
		name := fmt.Sprintf("x%d", i)
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name, Node: n}); err != nil {
			t.Fatal(err)
		}
		b, _ := s.Store.GetBox(name)
		if b.Node != n {
			t.Fatalf("box %s asked for on %s is on %q", name, n, b.Node)
		}
		if key, ok := on[n]; ok && b.Engine != key {
			t.Fatalf("box %s asked for on %s: engine name %q, not %s's pool box %s", name, n, b.Engine, n, key)
		}
		if _, ok := on[n]; !ok && b.Engine != "" {
			t.Fatalf("box %s asked for on %s took pool box %q of another server", name, n, b.Engine)
		}
	}
}
