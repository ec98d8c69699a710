package nodes

import (
	"fmt"
	"testing"

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
