// Package reconcile makes the engine match the declared state. Plan is a pure
// function from (desired, observed) to an ordered list of changes; Apply
// carries them out through a driver.Driver. Running Plan again after a
// successful Apply yields no changes, and a crash at any point is repaired by
// the next run, because every decision is taken from what is observed, never
// from what a previous run meant to do.
//
// Data is never destroyed by inference: a drive's volume and a snapshot's
// image are removed only when their declaration has been turned into a
// tombstone ("deleting"), never because a declaration is missing. Containers
// and a box's /var/lib/docker volume that no declared box owns are swept.
package reconcile

import (
	"fmt"
	"sort"

	"github.com/paddock-dev/paddock/appliance/driver"
)

// Action is what a change does.
type Action string

// Actions, in the order Apply runs them within a plan.
const (
	CreateVolume   Action = "create-volume"
	TakeSnapshot   Action = "take-snapshot"
	MarkSnapshot   Action = "mark-snapshot-ready" // the image exists; record it
	FailSnapshot   Action = "fail-snapshot"
	RemoveBox      Action = "remove-box"
	ReplaceBox     Action = "replace-box"
	CreateBox      Action = "create-box"
	StartBox       Action = "start-box"
	StopBox        Action = "stop-box"
	RemoveVolume   Action = "remove-volume"
	RemoveSnapshot Action = "remove-snapshot"
	ForgetSnapshot Action = "forget-snapshot"
	ForgetDrive    Action = "forget-drive"
)

// DesiredBox is a declared box as the engine should have it.
type DesiredBox struct {
	// Spec.Name is the name of the box's engine objects; Box is the box's
	// own, which it answers to (its hostname). They differ for a box
	// claimed from the warm pool; a pool box has its key as both.
	Spec    driver.BoxSpec
	Box     string
	Running bool
	// Pool: a box of the warm pool, not a user's.
	Pool bool
	// Node is the server it is on ("" the control plane's).
	Node string
}

func (b DesiredBox) name() string {
	if b.Box != "" {
		return b.Box
	}
	return b.Spec.Name
}

// DesiredSnapshot is a declared snapshot.
type DesiredSnapshot struct {
	ID  string
	Box string
	// Key names the box's engine objects (see DesiredBox).
	Key   string
	State string // pending, ready, failed, deleting
	Node  string
}

// Desired is the declared state.
type Desired struct {
	Boxes     []DesiredBox
	Drives    map[string]string // name → state (ready | deleting)
	Snapshots []DesiredSnapshot
	// DriveNodes is the server of each drive that is not the control
	// plane's.
	DriveNodes map[string]string
}

// Without is the declared state of the servers that are not down: what
// is on a server that did not answer is neither made, started, stopped
// nor removed until it answers again.
func (d Desired) Without(down map[string]error) Desired {
	if len(down) == 0 {
		return d
	}
	out := Desired{Drives: map[string]string{}, DriveNodes: d.DriveNodes}
	for _, b := range d.Boxes {
		if _, ok := down[b.Node]; !ok {
			out.Boxes = append(out.Boxes, b)
		}
	}
	for name, st := range d.Drives {
		if _, ok := down[d.DriveNodes[name]]; !ok {
			out.Drives[name] = st
		}
	}
	for _, s := range d.Snapshots {
		if _, ok := down[s.Node]; !ok {
			out.Snapshots = append(out.Snapshots, s)
		}
	}
	return out
}

// Observed is what the engine has.
type Observed struct {
	Boxes     []driver.BoxState
	Volumes   []driver.VolumeRef
	Snapshots []driver.SnapshotState
}

// Change is one step of a plan.
type Change struct {
	Action Action
	// Box is the box's name, which addresses the change; Key names its
	// engine objects (the same but for a box claimed from the warm pool).
	Box      string
	Key      string
	Pool     bool // about a box of the warm pool
	Spec     *driver.BoxSpec
	Volume   driver.VolumeRef
	Snapshot string
	Reason   string
}

// Address names the object a change is about, e.g. "box.web".
func (c Change) Address() string {
	switch c.Action {
	case CreateVolume, RemoveVolume:
		return "volume." + c.Volume.Kind + "." + c.Volume.Name
	case TakeSnapshot, MarkSnapshot, FailSnapshot, RemoveSnapshot, ForgetSnapshot:
		return "snapshot." + c.Snapshot
	case ForgetDrive:
		return "drive." + c.Volume.Name
	}
	return "box." + c.Box
}

func (c Change) String() string {
	s := string(c.Action) + " " + c.Address()
	if c.Reason != "" {
		s += " (" + c.Reason + ")"
	}
	return s
}

// BoxDataPath is where a box's own Docker keeps its data: a per-box volume,
// so it is not part of snapshots.
const BoxDataPath = "/var/lib/docker"

// Plan computes the changes that make observed match desired. It does no
// I/O.
func Plan(desired Desired, observed Observed) []Change {
	var changes []Change
	add := func(c Change) { changes = append(changes, c) }

	boxes := map[string]driver.BoxState{}
	for _, b := range observed.Boxes {
		boxes[b.Name] = b
	}
	vols := map[driver.VolumeRef]bool{}
	for _, v := range observed.Volumes {
		vols[v] = true
	}
	images := map[string]bool{}
	for _, s := range observed.Snapshots {
		images[s.ID] = true
	}
	declared := map[string]DesiredBox{}
	for _, b := range desired.Boxes {
		declared[b.Spec.Name] = b
	}

	// Volumes that declared boxes and drives need.
	need := map[driver.VolumeRef]bool{}
	for _, b := range sortedBoxes(desired.Boxes) {
		for _, m := range b.Spec.Mounts {
			if m.Volume.Kind == driver.KindDrive && desired.Drives[m.Volume.Name] != "ready" {
				continue // an undeclared drive is an error for the box, not a volume to make
			}
			need[m.Volume] = true
		}
	}
	for _, name := range sortedKeys(desired.Drives) {
		if st := desired.Drives[name]; st == "ready" || st == restoring {
			need[driver.VolumeRef{Kind: driver.KindDrive, Name: name}] = true
		}
	}
	for _, v := range sortedRefs(need) {
		if !vols[v] {
			add(Change{Action: CreateVolume, Volume: v})
		}
	}

	// Snapshots come before anything that replaces their box. A box that
	// is to stop stops first and is committed stopped: the engine need
	// not pause it for the commit, and what its processes write as they
	// end is in the snapshot. (A stop that fails leaves the commit to
	// pause the running box, as before.)
	stopped := map[string]bool{}
	for _, s := range desired.Snapshots {
		key := s.Key
		if key == "" {
			key = s.Box
		}
		switch s.State {
		case "pending":
			switch {
			case images[s.ID]:
				add(Change{Action: MarkSnapshot, Snapshot: s.ID, Box: s.Box, Key: key})
			case boxes[key].ID != "":
				if b, ok := declared[key]; ok && !stopped[key] && !b.Running && boxes[key].Running &&
					boxes[key].SpecHash == b.Spec.Hash() && missingDrives(b.Spec, desired.Drives) == "" {
					add(Change{Action: StopBox, Box: b.name(), Key: key, Pool: b.Pool})
					stopped[key] = true
				}
				add(Change{Action: TakeSnapshot, Snapshot: s.ID, Box: s.Box, Key: key})
			default:
				add(Change{Action: FailSnapshot, Snapshot: s.ID, Box: s.Box, Key: key, Reason: "the box has no container to snapshot"})
			}
		}
	}

	// Containers nothing declares.
	for _, b := range sortedStates(observed.Boxes) {
		if _, ok := declared[b.Name]; !ok {
			add(Change{Action: RemoveBox, Box: b.Name, Key: b.Name, Reason: "not declared"})
		}
	}

	for _, b := range sortedBoxes(desired.Boxes) {
		spec := b.Spec
		name, key := b.name(), spec.Name
		if missing := missingDrives(spec, desired.Drives); missing != "" {
			continue // reported by Status; nothing can be made
		}
		obs, ok := boxes[key]
		switch {
		case !ok:
			add(Change{Action: CreateBox, Box: name, Key: key, Pool: b.Pool, Spec: &spec, Reason: "no container"})
			if b.Running {
				add(Change{Action: StartBox, Box: name, Key: key, Pool: b.Pool})
			}
			continue
		case obs.SpecHash != spec.Hash():
			add(Change{Action: ReplaceBox, Box: name, Key: key, Pool: b.Pool, Spec: &spec, Reason: "spec changed"})
			if b.Running {
				add(Change{Action: StartBox, Box: name, Key: key, Pool: b.Pool})
			}
			continue
		}
		switch {
		case b.Running && !obs.Running:
			add(Change{Action: StartBox, Box: name, Key: key, Pool: b.Pool, Reason: "container " + obs.Status})
		case !b.Running && obs.Running && !stopped[key]:
			add(Change{Action: StopBox, Box: name, Key: key, Pool: b.Pool})
		}
	}

	// Volumes of boxes that are gone, and drives marked for deletion.
	for _, v := range sortedRefs(vols) {
		switch v.Kind {
		case driver.KindBoxData:
			if _, ok := declared[v.Name]; !ok {
				add(Change{Action: RemoveVolume, Volume: v, Reason: "its box is gone"})
			}
		case driver.KindDrive:
			if desired.Drives[v.Name] == "deleting" {
				add(Change{Action: RemoveVolume, Volume: v, Reason: "drive removed"})
			}
		}
	}
	for _, name := range sortedKeys(desired.Drives) {
		v := driver.VolumeRef{Kind: driver.KindDrive, Name: name}
		if desired.Drives[name] == "deleting" && !vols[v] {
			add(Change{Action: ForgetDrive, Volume: v})
		}
	}
	inUse := map[string]bool{}
	for _, b := range observed.Boxes {
		inUse[b.Snapshot] = true
	}
	for _, s := range desired.Snapshots {
		if s.State != "deleting" || inUse[s.ID] {
			continue // kept while a box is made from it
		}
		if images[s.ID] {
			add(Change{Action: RemoveSnapshot, Snapshot: s.ID, Box: s.Box, Key: s.Key})
		} else {
			add(Change{Action: ForgetSnapshot, Snapshot: s.ID, Box: s.Box, Key: s.Key})
		}
	}
	return changes
}

// restoring is the state Load gives a ready drive whose restore is under
// way: like an undeclared one, no box that mounts it is made or started,
// but its volume stays.
const restoring = "restoring"

// missingDrives names the first drive a box mounts that is not declared
// (or is being restored).
func missingDrives(spec driver.BoxSpec, drives map[string]string) string {
	for _, m := range spec.Mounts {
		if m.Volume.Kind == driver.KindDrive && drives[m.Volume.Name] != "ready" {
			return m.Volume.Name
		}
	}
	return ""
}

func sortedBoxes(in []DesiredBox) []DesiredBox {
	out := append([]DesiredBox(nil), in...)
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Name < out[j].Spec.Name })
	return out
}

func sortedStates(in []driver.BoxState) []driver.BoxState {
	out := append([]driver.BoxState(nil), in...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedRefs(m map[driver.VolumeRef]bool) []driver.VolumeRef {
	out := make([]driver.VolumeRef, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Summary counts a plan's changes by action, for logs.
func Summary(changes []Change) string {
	if len(changes) == 0 {
		return "no changes"
	}
	n := map[Action]int{}
	for _, c := range changes {
		n[c.Action]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d %s", n[Action(k)], k)
	}
	return s
}
