// Package fake is an in-memory driver.Driver for unit tests of the logic
// above the driver (the reconciler, the API). It keeps only what the
// reconciler observes, runs no commands, and passes the same lifecycle
// contract tests (drivertest.Lifecycle) as the Docker driver.
package fake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/paddock-dev/paddock/appliance/driver"
)

type box struct {
	spec    driver.BoxSpec
	running bool
	// pid is a new number at each start, as a real first process is;
	// hostname is what the box would say, the spec's name after a start.
	pid      int
	hostname string
}

// Driver is the fake engine.
type Driver struct {
	mu        sync.Mutex
	images    map[string]bool
	boxes     map[string]*box
	volumes   map[driver.VolumeRef]bool
	snapshots map[string]string // id → box
	imageIDs  map[string]string
	pids      int
	// Fail, when it returns an error for an operation ("create web",
	// "start web", "snapshot ID", ...), makes that operation fail; tests use
	// it to stop a run half way, as a crash would.
	Fail func(op string) error
	// Ops records every operation that changed something, in order.
	Ops []string
	// Usage is what DiskUsage reports per box, and VolumeUsage per
	// volume as "kind:name" (set by tests).
	Usage map[string]int64
	// Use is what BoxUsage reports for a box (set by tests).
	Use map[string]driver.Usage
	// ExecFunc, when set, answers Exec (the fake runs no commands).
	ExecFunc func(box string, spec driver.ExecSpec) (int, error)
	// WriteVolumeFunc, when set, answers WriteVolume of an existing volume
	// (the fake keeps no files).
	WriteVolumeFunc func(v driver.VolumeRef, tar io.Reader) error
}

var _ driver.Driver = (*Driver)(nil)

// New returns an empty fake engine that has the given images.
func New(images ...string) *Driver {
	d := &Driver{images: map[string]bool{}, boxes: map[string]*box{}, volumes: map[driver.VolumeRef]bool{}, snapshots: map[string]string{}}
	for _, im := range images {
		d.images[im] = true
	}
	return d
}

func (d *Driver) op(format string, args ...any) error {
	op := fmt.Sprintf(format, args...)
	if d.Fail != nil {
		if err := d.Fail(op); err != nil {
			return err
		}
	}
	d.Ops = append(d.Ops, op)
	return nil
}

func notFound(what string) error { return fmt.Errorf("%w: %s", driver.ErrNotFound, what) }
func inUse(what string) error    { return fmt.Errorf("%w: %s", driver.ErrInUse, what) }

// AddImage gives the fake an image by reference.
func (d *Driver) AddImage(ref string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.images[ref] = true
}

// Prepare does nothing.
func (d *Driver) Prepare(context.Context) error { return nil }

// ImageExists reports whether the fake has the image.
func (d *Driver) ImageExists(_ context.Context, ref string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.images[ref], nil
}

// Boxes lists boxes by name.
func (d *Driver) Boxes(context.Context) ([]driver.BoxState, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []driver.BoxState
	for name, b := range d.boxes {
		st := "exited"
		if b.running {
			st = "running"
		}
		pid := 0
		if b.running {
			pid = b.pid
		}
		out = append(out, driver.BoxState{Name: name, ID: "fake-" + name, SpecHash: b.spec.Hash(), Running: b.running, Status: st, Snapshot: b.spec.Snapshot, Pid: pid})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CreateBox records a box.
func (d *Driver) CreateBox(_ context.Context, spec driver.BoxSpec) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.boxes[spec.Name]; ok {
		return inUse("box " + spec.Name + " exists")
	}
	if spec.Snapshot != "" {
		if _, ok := d.snapshots[spec.Snapshot]; !ok {
			return notFound("snapshot " + spec.Snapshot)
		}
	} else if !d.images[spec.Image] {
		return notFound("image " + spec.Image)
	}
	for _, m := range spec.Mounts {
		if !d.volumes[m.Volume] {
			// Docker makes a missing named volume on the fly; so does the fake.
			d.volumes[m.Volume] = true
		}
	}
	if err := d.op("create %s", spec.Name); err != nil {
		return err
	}
	d.boxes[spec.Name] = &box{spec: spec}
	return nil
}

func (d *Driver) setRunning(name string, running bool, verb string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.boxes[name]
	if !ok {
		return notFound("box " + name)
	}
	if err := d.op("%s %s", verb, name); err != nil {
		return err
	}
	if running && !b.running {
		d.pids++
		b.pid, b.hostname = 1000+d.pids, b.spec.Name
	}
	b.running = running
	return nil
}

var (
	_ driver.Hostnamer = (*Driver)(nil)
	_ driver.ImageIDer = (*Driver)(nil)
)

// SetHostname sets what a running box says its hostname is, until it
// starts again.
func (d *Driver) SetHostname(_ context.Context, name, hostname string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.boxes[name]
	if !ok {
		return notFound("box " + name)
	}
	if !b.running {
		return fmt.Errorf("box %s is not running", name)
	}
	if err := d.op("hostname %s %s", name, hostname); err != nil {
		return err
	}
	b.hostname = hostname
	return nil
}

// Hostname is what a running box says its hostname is ("" when it does
// not run).
func (d *Driver) Hostname(name string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if b, ok := d.boxes[name]; ok && b.running {
		return b.hostname
	}
	return ""
}

// ImageID is the image's id: "id-" and its name, until SetImageID moves it.
func (d *Driver) ImageID(_ context.Context, ref string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.images[ref] {
		return "", nil
	}
	if id, ok := d.imageIDs[ref]; ok {
		return id, nil
	}
	return "id-" + ref, nil
}

// SetImageID points an image name at another image, as a new build or pull
// under the same tag does.
func (d *Driver) SetImageID(ref, id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.imageIDs == nil {
		d.imageIDs = map[string]string{}
	}
	d.imageIDs[ref] = id
}

// StartBox marks a box running.
func (d *Driver) StartBox(_ context.Context, name string) error {
	return d.setRunning(name, true, "start")
}

// StopBox marks a box stopped.
func (d *Driver) StopBox(_ context.Context, name string) error {
	return d.setRunning(name, false, "stop")
}

// RemoveBox forgets a box.
func (d *Driver) RemoveBox(_ context.Context, name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.boxes[name]; !ok {
		return notFound("box " + name)
	}
	if err := d.op("remove %s", name); err != nil {
		return err
	}
	delete(d.boxes, name)
	return nil
}

// Snapshots lists snapshots.
func (d *Driver) Snapshots(context.Context) ([]driver.SnapshotState, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []driver.SnapshotState
	for id, b := range d.snapshots {
		out = append(out, driver.SnapshotState{ID: id, Box: b})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Snapshot records a snapshot of an existing box.
func (d *Driver) Snapshot(_ context.Context, box, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.boxes[box]; !ok {
		return notFound("box " + box)
	}
	if err := d.op("snapshot %s", id); err != nil {
		return err
	}
	d.snapshots[id] = box
	return nil
}

// RemoveSnapshot forgets a snapshot that no box is made from.
func (d *Driver) RemoveSnapshot(_ context.Context, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.snapshots[id]; !ok {
		return notFound("snapshot " + id)
	}
	for name, b := range d.boxes {
		if b.spec.Snapshot == id {
			return inUse("snapshot " + id + " is used by box " + name)
		}
	}
	if err := d.op("remove-snapshot %s", id); err != nil {
		return err
	}
	delete(d.snapshots, id)
	return nil
}

// Volumes lists volumes.
func (d *Driver) Volumes(context.Context) ([]driver.VolumeRef, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []driver.VolumeRef
	for v := range d.volumes {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// CreateVolume records a volume; an existing one is kept.
func (d *Driver) CreateVolume(_ context.Context, v driver.VolumeRef) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.op("create-volume %s", v); err != nil {
		return err
	}
	d.volumes[v] = true
	return nil
}

// RemoveVolume forgets a volume that no box mounts.
func (d *Driver) RemoveVolume(_ context.Context, v driver.VolumeRef) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.volumes[v] {
		return notFound("volume " + v.String())
	}
	for name, b := range d.boxes {
		for _, m := range b.spec.Mounts {
			if m.Volume == v {
				return inUse("volume " + v.String() + " is mounted by " + name)
			}
		}
	}
	if err := d.op("remove-volume %s", v); err != nil {
		return err
	}
	delete(d.volumes, v)
	return nil
}

var errNoRuntime = errors.New("the fake driver runs no commands")

// Exec is not supported by the fake.
func (d *Driver) Exec(ctx context.Context, box string, spec driver.ExecSpec) (int, error) {
	if d.ExecFunc != nil {
		return d.ExecFunc(box, spec)
	}
	return -1, errNoRuntime
}

// CopyTo is not supported by the fake.
func (d *Driver) CopyTo(context.Context, string, string, io.Reader) error { return errNoRuntime }

// CopyFrom is not supported by the fake.
func (d *Driver) CopyFrom(context.Context, string, string) (io.ReadCloser, error) {
	return nil, errNoRuntime
}

// ReadVolume is not supported by the fake.
func (d *Driver) ReadVolume(context.Context, driver.VolumeRef, string) (io.ReadCloser, error) {
	return nil, errNoRuntime
}

// CleanVolume has nothing to clean in the fake.
func (d *Driver) CleanVolume(context.Context, driver.VolumeRef, string) error { return nil }

// WriteVolume calls WriteVolumeFunc; without it, it is not supported.
func (d *Driver) WriteVolume(_ context.Context, v driver.VolumeRef, _ string, tar io.Reader) error {
	d.mu.Lock()
	_, ok := d.volumes[v]
	fn := d.WriteVolumeFunc
	d.mu.Unlock()
	if !ok {
		return driver.ErrNotFound
	}
	if fn == nil {
		return errNoRuntime
	}
	return fn(v, tar)
}

// VolumeUsage reports Usage["kind:name"] for an existing volume.
func (d *Driver) VolumeUsage(_ context.Context, v driver.VolumeRef) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.volumes[v] {
		return 0, driver.ErrNotFound
	}
	return d.Usage[v.Kind+":"+v.Name], nil
}

// BoxUsage reports Use[box] for an existing box.
func (d *Driver) BoxUsage(_ context.Context, box string) (driver.Usage, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.boxes[box] == nil {
		return driver.Usage{}, driver.ErrNotFound
	}
	return d.Use[box], nil
}

// DiskUsage reports Usage[box] for an existing box.
func (d *Driver) DiskUsage(_ context.Context, box string) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.boxes[box] == nil {
		return 0, driver.ErrNotFound
	}
	return d.Usage[box], nil
}
