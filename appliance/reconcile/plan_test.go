package reconcile

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/driver"
)

func spec(name string) driver.BoxSpec {
	return driver.BoxSpec{Name: name, Image: "img", CPUs: 1, MemoryBytes: 1 << 30, Mounts: []driver.Mount{
		{Volume: driver.VolumeRef{Kind: driver.KindBoxData, Name: name}, Path: BoxDataPath},
	}}
}

func observedOf(name string, s driver.BoxSpec, running bool) driver.BoxState {
	return driver.BoxState{Name: name, ID: "id-" + name, SpecHash: s.Hash(), Running: running, Snapshot: s.Snapshot}
}

func render(cs []Change) string {
	var lines []string
	for _, c := range cs {
		lines = append(lines, c.String())
	}
	return strings.Join(lines, "\n")
}

func TestPlan(t *testing.T) {
	web := spec("web")
	changed := web
	changed.Image = "img2"
	data := driver.VolumeRef{Kind: driver.KindBoxData, Name: "web"}
	cache := driver.VolumeRef{Kind: driver.KindDrive, Name: "cache"}
	withDrive := web
	withDrive.Mounts = append([]driver.Mount{{Volume: cache, Path: "/mnt/cache"}}, web.Mounts...)

	tests := []struct {
		name     string
		desired  Desired
		observed Observed
		want     string
	}{
		{
			name:    "new box",
			desired: Desired{Boxes: []DesiredBox{{Spec: web, Running: true}}},
			want: "create-volume volume.boxdata.web\n" +
				"create-box box.web (no container)\n" +
				"start-box box.web",
		},
		{
			name:     "converged",
			desired:  Desired{Boxes: []DesiredBox{{Spec: web, Running: true}}},
			observed: Observed{Boxes: []driver.BoxState{observedOf("web", web, true)}, Volumes: []driver.VolumeRef{data}},
			want:     "",
		},
		{
			name:     "created but not started (a crash between the two)",
			desired:  Desired{Boxes: []DesiredBox{{Spec: web, Running: true}}},
			observed: Observed{Boxes: []driver.BoxState{{Name: "web", ID: "x", SpecHash: web.Hash(), Status: "created"}}, Volumes: []driver.VolumeRef{data}},
			want:     "start-box box.web (container created)",
		},
		{
			name: "stop, then the pending snapshot of the stopped box",
			desired: Desired{
				Boxes:     []DesiredBox{{Spec: web, Running: false}},
				Snapshots: []DesiredSnapshot{{ID: "s1", Box: "web", State: "pending"}},
			},
			observed: Observed{Boxes: []driver.BoxState{observedOf("web", web, true)}, Volumes: []driver.VolumeRef{data}},
			want:     "stop-box box.web\ntake-snapshot snapshot.s1",
		},
		{
			name: "snapshot already taken before a crash is only recorded",
			desired: Desired{
				Boxes:     []DesiredBox{{Spec: web, Running: false}},
				Snapshots: []DesiredSnapshot{{ID: "s1", Box: "web", State: "pending"}},
			},
			observed: Observed{Boxes: []driver.BoxState{observedOf("web", web, true)}, Volumes: []driver.VolumeRef{data}, Snapshots: []driver.SnapshotState{{ID: "s1", Box: "web"}}},
			want:     "mark-snapshot-ready snapshot.s1\nstop-box box.web",
		},
		{
			name:     "spec change replaces",
			desired:  Desired{Boxes: []DesiredBox{{Spec: changed, Running: true}}},
			observed: Observed{Boxes: []driver.BoxState{observedOf("web", web, true)}, Volumes: []driver.VolumeRef{data}},
			want:     "replace-box box.web (spec changed)\nstart-box box.web",
		},
		{
			name:     "undeclared box and its data are swept",
			observed: Observed{Boxes: []driver.BoxState{observedOf("old", spec("old"), true)}, Volumes: []driver.VolumeRef{{Kind: driver.KindBoxData, Name: "old"}}},
			want:     "remove-box box.old (not declared)\nremove-volume volume.boxdata.old (its box is gone)",
		},
		{
			name:     "an undeclared drive volume is kept",
			observed: Observed{Volumes: []driver.VolumeRef{cache}},
			want:     "",
		},
		{
			name:     "a tombstoned drive is removed, then forgotten",
			desired:  Desired{Drives: map[string]string{"cache": "deleting"}},
			observed: Observed{Volumes: []driver.VolumeRef{cache}},
			want:     "remove-volume volume.drive.cache (drive removed)",
		},
		{
			name:    "a tombstoned drive with no volume is forgotten",
			desired: Desired{Drives: map[string]string{"cache": "deleting"}},
			want:    "forget-drive drive.cache",
		},
		{
			name:    "box on an undeclared drive is not made",
			desired: Desired{Boxes: []DesiredBox{{Spec: withDrive, Running: true}}},
			want:    "create-volume volume.boxdata.web",
		},
		{
			name:    "box with a declared drive",
			desired: Desired{Boxes: []DesiredBox{{Spec: withDrive, Running: true}}, Drives: map[string]string{"cache": "ready"}},
			want: "create-volume volume.boxdata.web\ncreate-volume volume.drive.cache\n" +
				"create-box box.web (no container)\nstart-box box.web",
		},
		{
			name: "a snapshot under a forked box is kept",
			desired: Desired{
				Boxes:     []DesiredBox{{Spec: driver.BoxSpec{Name: "kid", Snapshot: "s1"}, Running: true}},
				Snapshots: []DesiredSnapshot{{ID: "s1", Box: "gone", State: "deleting"}},
			},
			observed: Observed{
				Boxes:     []driver.BoxState{observedOf("kid", driver.BoxSpec{Name: "kid", Snapshot: "s1"}, true)},
				Snapshots: []driver.SnapshotState{{ID: "s1", Box: "gone"}},
			},
			want: "",
		},
		{
			name:     "a snapshot of a box with no container fails",
			desired:  Desired{Snapshots: []DesiredSnapshot{{ID: "s1", Box: "web", State: "pending"}}},
			observed: Observed{},
			want:     "fail-snapshot snapshot.s1 (the box has no container to snapshot)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := render(Plan(tt.desired, tt.observed))
			if got != tt.want {
				t.Errorf("plan:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// apply simulates a perfect engine: what Apply would leave behind.
func simulate(d Desired, o Observed, cs []Change) Observed {
	boxes := map[string]driver.BoxState{}
	for _, b := range o.Boxes {
		boxes[b.Name] = b
	}
	vols := map[driver.VolumeRef]bool{}
	for _, v := range o.Volumes {
		vols[v] = true
	}
	snaps := map[string]bool{}
	for _, s := range o.Snapshots {
		snaps[s.ID] = true
	}
	for _, c := range cs {
		switch c.Action {
		case CreateVolume:
			vols[c.Volume] = true
		case RemoveVolume:
			delete(vols, c.Volume)
		case TakeSnapshot:
			snaps[c.Snapshot] = true
		case RemoveSnapshot:
			delete(snaps, c.Snapshot)
		case CreateBox, ReplaceBox:
			boxes[c.Box] = observedOf(c.Box, *c.Spec, false)
		case StartBox, StopBox:
			b := boxes[c.Box]
			b.Running = c.Action == StartBox
			boxes[c.Box] = b
		case RemoveBox:
			delete(boxes, c.Box)
		}
	}
	var out Observed
	for _, b := range boxes {
		out.Boxes = append(out.Boxes, b)
	}
	for v := range vols {
		out.Volumes = append(out.Volumes, v)
	}
	for s := range snaps {
		out.Snapshots = append(out.Snapshots, driver.SnapshotState{ID: s})
	}
	return out
}

func randomWorld(r *rand.Rand) (Desired, Observed) {
	names := []string{"a", "b", "c", "d"}
	drives := []string{"x", "y"}
	d := Desired{Drives: map[string]string{}}
	var o Observed
	for _, dr := range drives {
		switch r.IntN(3) {
		case 0:
			d.Drives[dr] = "ready"
		case 1:
			d.Drives[dr] = "deleting"
		}
		if r.IntN(2) == 0 {
			o.Volumes = append(o.Volumes, driver.VolumeRef{Kind: driver.KindDrive, Name: dr})
		}
	}
	for _, n := range names {
		s := spec(n)
		if r.IntN(3) == 0 && d.Drives["x"] == "ready" {
			s.Mounts = append(s.Mounts, driver.Mount{Volume: driver.VolumeRef{Kind: driver.KindDrive, Name: "x"}, Path: "/mnt/x"})
		}
		if r.IntN(2) == 0 {
			d.Boxes = append(d.Boxes, DesiredBox{Spec: s, Running: r.IntN(2) == 0})
		}
		if r.IntN(2) == 0 {
			obs := s
			if r.IntN(3) == 0 {
				obs.Image = "other"
			}
			o.Boxes = append(o.Boxes, observedOf(n, obs, r.IntN(2) == 0))
		}
		if r.IntN(2) == 0 {
			o.Volumes = append(o.Volumes, driver.VolumeRef{Kind: driver.KindBoxData, Name: n})
		}
	}
	return d, o
}

// Properties over random worlds: a drive volume is destroyed only when its
// declaration is a tombstone; after a perfect apply the next plan is empty
// (Plan is idempotent); Plan is deterministic.
func TestPlanProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		d, o := randomWorld(r)
		cs := Plan(d, o)
		if again := Plan(d, o); !reflect.DeepEqual(cs, again) {
			t.Fatalf("world %d: plan not deterministic", i)
		}
		for _, c := range cs {
			if c.Action == RemoveVolume && c.Volume.Kind == driver.KindDrive && d.Drives[c.Volume.Name] != "deleting" {
				t.Fatalf("world %d: destroys drive %s whose declaration is %q", i, c.Volume.Name, d.Drives[c.Volume.Name])
			}
		}
		after := simulate(d, o, cs)
		if next := Plan(d, after); len(next) != 0 {
			// Forgetting tombstones is a store change the simulation does not make.
			for _, c := range next {
				if c.Action != ForgetDrive {
					t.Fatalf("world %d: not converged after one apply:\n%s\nfirst plan:\n%s", i, render(next), render(cs))
				}
			}
		}
	}
}

func TestSpecHashCoversWhatForcesReplacement(t *testing.T) {
	base := spec("web")
	h := base.Hash()
	for i, mut := range []func(*driver.BoxSpec){
		func(s *driver.BoxSpec) { s.Image = "other" },
		func(s *driver.BoxSpec) { s.Snapshot = "s1" },
		func(s *driver.BoxSpec) { s.CPUs = 2 },
		func(s *driver.BoxSpec) { s.MemoryBytes = 2 },
		func(s *driver.BoxSpec) { s.Mounts = append(s.Mounts, driver.Mount{Path: "/mnt/x"}) },
		func(s *driver.BoxSpec) {
			s.Mounts = []driver.Mount{{Volume: s.Mounts[0].Volume, Path: s.Mounts[0].Path, ReadOnly: true}}
		},
	} {
		s := base
		s.Mounts = append([]driver.Mount(nil), base.Mounts...)
		mut(&s)
		if s.Hash() == h {
			t.Errorf("mutation %d does not change the hash", i)
		}
	}
	if fmt.Sprint(spec("web").Hash()) != h {
		t.Error("hash is not stable")
	}
}

// A container of the box's name made for another box (another id) is
// replaced, never adopted; boxes from before ids keep their hashes.
func TestPlanReplacesAnotherBoxsContainer(t *testing.T) {
	mine, theirs := spec("web"), spec("web")
	mine.UID, theirs.UID = "1111", "2222"
	data := driver.VolumeRef{Kind: driver.KindBoxData, Name: "web"}
	got := render(Plan(Desired{Boxes: []DesiredBox{{Spec: mine, Running: true}}},
		Observed{Boxes: []driver.BoxState{observedOf("web", theirs, true)}, Volumes: []driver.VolumeRef{data}}))
	if !strings.HasPrefix(got, "replace-box box.web") {
		t.Fatalf("plan for another box's container:\n%s", got)
	}
	legacy := spec("web")
	if legacy.Hash() != "b29e871cfa8a7ff6" {
		t.Fatalf("the hash of a box without an id changed (%s): its container would be replaced on upgrade", legacy.Hash())
	}
}
