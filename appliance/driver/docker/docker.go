// Package docker implements driver.Driver on the Docker Engine API with
// github.com/moby/moby/client, negotiating the API version so that it works
// against Debian 12's Docker 20.10 (API 1.41) as well as current engines.
//
// Names in the engine are derived from the Paddock instance name, so that
// several paddockd instances (tests, for one) can share an engine without
// touching each other's objects:
//
//	container   <instance>-<box>
//	volume      <instance>-drive-<drive>, <instance>-boxdata-<box>
//	image       <instance>-snapshot:<snapshot id>
//	network     <instance>
//
// and every object carries the labels paddock.instance, paddock.kind and
// paddock.owner.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/docker/procs"
	"github.com/paddock-dev/paddock/appliance/images/imagefmt"
)

// Labels set on every object.
const (
	LabelInstance = "paddock.instance"
	LabelKind     = "paddock.kind"
	LabelOwner    = "paddock.owner"
	LabelSpec     = "paddock.spec"
	// LabelSnapshot on a container names the snapshot it was made from; on
	// an image, the snapshot it is.
	LabelSnapshot = "paddock.snapshot"
	// LabelBox names the box a container is, or a snapshot image was taken of.
	LabelBox = "paddock.box"
	// LabelBoxID is the box's own id on its container.
	LabelBoxID = "paddock.box.id"
)

// Config says how boxes are made.
type Config struct {
	// Host is the engine address; empty takes DOCKER_HOST or the default socket.
	Host string
	// Instance prefixes every name and is the value of paddock.instance.
	Instance string
	// Runtime is the OCI runtime for boxes: sysbox-runc in production.
	Runtime string
	// UnsafeDockerInRunc makes runc boxes able to run Docker (every
	// capability, unconfined, the host's cgroups writable): tests only.
	UnsafeDockerInRunc bool
	// DockerWithBox starts a box's own engine with the box rather than on
	// its first use (paddock-init reads PADDOCK_DOCKER_START).
	DockerWithBox bool
	// User runs commands in boxes unless an exec names another.
	User string
	// KeepWarm keeps a warm exec (warm.go) in each box that has run a
	// command without a terminal, for its next one.
	KeepWarm bool
	// LoadMax bounds what LoadSnapshots takes in: the archive, and what
	// its layers unpack to (0: 64 GiB).
	LoadMax int64
	// BindsDir holds the folders of boxes' binds (driver.Bind), a shared
	// mount (so that what is mounted in them reaches the boxes); empty:
	// this engine's boxes have none (a box with binds is refused).
	BindsDir string
	// The box network: its bridge interface, subnet and gateway. The
	// gateway is also the boxes' only DNS server.
	Bridge  string
	Subnet  netip.Prefix
	Gateway netip.Addr
}

// Driver talks to one Docker engine.
type Driver struct {
	c   *client.Client
	cfg Config

	mu      sync.Mutex
	pids    map[string]seenPid       // running container → its first process, as last seen
	warm    map[string]*warmSlot     // box → its warm exec (warm.go)
	spare   map[string][]*warmExec   // box → warm execs kept beside it (commands side by side), at most maxSpare
	sparing map[string]bool          // box → a spare being started (spareWarm; one at a time)
	gates   map[string]*sync.RWMutex // box → exec starts against commits (Snapshot)
	closed  bool

	// Warm execs started in the background (keepWarm) run in bgCtx;
	// Close ends them and waits for them.
	bg       sync.WaitGroup
	bgCtx    context.Context
	bgCancel context.CancelFunc
}

var _ driver.Driver = (*Driver)(nil)

// New connects to the engine, checks that it answers and removes the volume
// helpers a killed daemon left.
func New(ctx context.Context, cfg Config) (*Driver, error) {
	d, err := Connect(ctx, cfg.Host)
	if err != nil {
		return nil, err
	}
	if cfg.Instance == "" {
		cfg.Instance = "paddock"
	}
	if cfg.User == "" {
		cfg.User = "paddock"
	}
	d.cfg = cfg
	// Volume helpers live for one operation of one daemon; any that exist
	// now were left by a daemon that died during one.
	if err := d.removeHelpers(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Close ends the warm execs and releases the client.
func (d *Driver) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	for _, s := range d.warm {
		if s.w != nil {
			s.w.att.Close()
			s.w = nil
		}
	}
	d.warm = nil
	for _, sp := range d.spare {
		for _, w := range sp {
			w.att.Close()
		}
	}
	d.spare = nil
	for _, seen := range d.pids {
		seen.release()
	}
	d.pids = nil
	d.closed = true
	d.mu.Unlock()
	d.bgCancel()
	d.bg.Wait()
	return d.c.Close()
}

// APIVersion is the negotiated engine API version.
func (d *Driver) APIVersion() string { return d.c.ClientVersion() }

// Engine is what the engine says of the machine: its CPUs, memory, the
// folder its data is in, and its version.
type Engine struct {
	CPUs        int
	MemoryBytes int64
	Root        string
	Version     string
}

// Engine asks the engine what it runs on.
func (d *Driver) Engine(ctx context.Context) (Engine, error) {
	r, err := d.c.Info(ctx, client.InfoOptions{})
	if err != nil {
		return Engine{}, err
	}
	return Engine{CPUs: r.Info.NCPU, MemoryBytes: r.Info.MemTotal, Root: r.Info.DockerRootDir, Version: r.Info.ServerVersion}, nil
}

func (d *Driver) containerName(box string) string { return d.cfg.Instance + "-" + box }
func (d *Driver) volumeName(v driver.VolumeRef) string {
	return d.cfg.Instance + "-" + v.Kind + "-" + v.Name
}
func (d *Driver) snapshotRepo() string         { return d.cfg.Instance + "-snapshot" }
func (d *Driver) snapshotRef(id string) string { return d.snapshotRepo() + ":" + id }

func (d *Driver) labels(kind, owner string) map[string]string {
	return map[string]string{LabelInstance: d.cfg.Instance, LabelKind: kind, LabelOwner: owner}
}

func (d *Driver) filter(kind string) client.Filters {
	return client.Filters{}.Add("label", LabelInstance+"="+d.cfg.Instance, LabelKind+"="+kind)
}

func wrap(err error) error {
	switch {
	case err == nil:
		return nil
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%w: %v", driver.ErrNotFound, err)
	case cerrdefs.IsConflict(err):
		return fmt.Errorf("%w: %v", driver.ErrInUse, err)
	}
	return err
}

// Prepare makes the box network: a bridge of the instance's own, with
// inter-container traffic off so boxes cannot reach each other. One made
// before with another subnet is made again with this one while the
// instance has no box (a subnet changed after paddockd refused it:
// policies.CheckRoutes); with boxes, it stays, and Prepare says so.
func (d *Driver) Prepare(ctx context.Context) error {
	name := d.cfg.Instance
	if nw, err := d.c.NetworkInspect(ctx, name, client.NetworkInspectOptions{}); err == nil {
		var had []string
		for _, c := range nw.Network.IPAM.Config {
			if c.Subnet == d.cfg.Subnet {
				return nil
			}
			had = append(had, c.Subnet.String())
		}
		boxes, err := d.Boxes(ctx)
		if err != nil {
			return err
		}
		if len(boxes) > 0 {
			var names []string
			for _, b := range boxes[:min(len(boxes), 5)] {
				names = append(names, b.Name)
			}
			if len(boxes) > 5 {
				names = append(names, "...")
			}
			return fmt.Errorf("the box network has the subnet %s, not %s as configured: a subnet can change only while there are no boxes (there are %d: %s); set it back", strings.Join(had, ", "), d.cfg.Subnet, len(boxes), strings.Join(names, ", "))
		}
		if _, err := d.c.NetworkRemove(ctx, nw.Network.ID, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("the box network of the subnet %s, to be made again with %s: %w", strings.Join(had, ", "), d.cfg.Subnet, err)
		}
	} else if !cerrdefs.IsNotFound(err) {
		return err
	}
	opts := client.NetworkCreateOptions{
		Driver: "bridge",
		Labels: d.labels("network", "instance/"+d.cfg.Instance),
		Options: map[string]string{
			"com.docker.network.bridge.enable_icc": "false",
			"com.docker.network.bridge.name":       d.cfg.Bridge,
		},
		IPAM: &network.IPAM{Config: []network.IPAMConfig{{Subnet: d.cfg.Subnet, Gateway: d.cfg.Gateway}}},
	}
	_, err := d.c.NetworkCreate(ctx, name, opts)
	if cerrdefs.IsConflict(err) || cerrdefs.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		// The engine's own words ("Pool overlaps with other one on this
		// address space") name neither the network nor what to do.
		if other, sub, ok := d.overlapping(ctx); ok {
			return fmt.Errorf("the box network's subnet %s overlaps the Docker network %q (%s): set subnet in paddockd's configuration to a range no network of this machine has, or remove that network ('docker network rm %s') if nothing uses it", d.cfg.Subnet, other, sub, other)
		}
	}
	return err
}

// overlapping finds another network of the engine whose subnet overlaps
// the box network's.
func (d *Driver) overlapping(ctx context.Context) (name string, subnet netip.Prefix, ok bool) {
	nws, err := d.c.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		return "", netip.Prefix{}, false
	}
	for _, nw := range nws.Items {
		if nw.Name == d.cfg.Instance {
			continue
		}
		for _, c := range nw.IPAM.Config {
			if c.Subnet.IsValid() && c.Subnet.Overlaps(d.cfg.Subnet) {
				return nw.Name, c.Subnet, true
			}
		}
	}
	return "", netip.Prefix{}, false
}

// ImageExists reports whether ref is on the engine.
func (d *Driver) ImageExists(ctx context.Context, ref string) (bool, error) {
	_, err := d.c.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// Boxes lists the instance's box containers.
func (d *Driver) Boxes(ctx context.Context) ([]driver.BoxState, error) {
	res, err := d.c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: d.filter("box")})
	if err != nil {
		return nil, err
	}
	out := make([]driver.BoxState, 0, len(res.Items))
	for _, c := range res.Items {
		st := driver.BoxState{
			Name:     strings.TrimPrefix(c.Labels[LabelOwner], "box/"),
			ID:       c.ID,
			SpecHash: c.Labels[LabelSpec],
			Running:  c.State == container.StateRunning,
			Status:   string(c.State),
			Snapshot: c.Labels[LabelSnapshot],
		}
		if st.Running {
			pid, err := d.pid(ctx, c.ID)
			if err != nil {
				return nil, err
			}
			st.Pid = pid
		}
		out = append(out, st)
	}
	d.mu.Lock()
	for id, seen := range d.pids {
		if !slices.ContainsFunc(out, func(b driver.BoxState) bool { return b.ID == id && b.Running }) {
			seen.release()
			delete(d.pids, id)
		}
	}
	d.mu.Unlock()
	return out, nil
}

// pid finds a running container's first process. The list the engine
// gives has no pids, and an inspect per box per pass is the costly part of
// observing many boxes; so a pid seen once is kept while that process
// lives, and asked for again only when it has ended (a restart) or could
// not be held (an engine on another machine).
func (d *Driver) pid(ctx context.Context, id string) (int, error) {
	d.mu.Lock()
	seen, ok := d.pids[id]
	ok = ok && seen.alive() // under mu: another call may release it
	d.mu.Unlock()
	if ok {
		return seen.pid, nil
	}
	ins, err := d.c.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if ins.Container.State == nil {
		return 0, nil
	}
	now := holdPid(ins.Container.State.Pid, id)
	d.mu.Lock()
	if d.pids == nil {
		d.pids = map[string]seenPid{}
	}
	if old, ok := d.pids[id]; ok {
		old.release()
	}
	d.pids[id] = now
	d.mu.Unlock()
	return now.pid, nil
}

// seenPid is a container's first process as last seen, held by a pidfd
// where it runs on this machine: the pidfd names that one process, so
// asking whether it lives is one system call with no pid reuse to fear
// (reading /proc/PID/cgroup each pass cost a 50-box server a quarter of
// its time observing).
type seenPid struct {
	pid int
	fd  int // pidfd, or -1: not held (asked for again each time)
}

// holdPid opens a pidfd for pid, kept only if the process it names is
// the container's (its cgroup names it): a pid from an engine on another
// machine, or one that has ended and been reused since the inspect, is
// not held.
func holdPid(pid int, id string) seenPid {
	s := seenPid{pid: pid, fd: -1}
	if pid <= 0 {
		return s
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return s
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); err != nil || !strings.Contains(string(b), id) {
		unix.Close(fd)
		return s
	}
	s.fd = fd
	return s
}

func (s seenPid) alive() bool {
	return s.fd >= 0 && unix.PidfdSendSignal(s.fd, 0, nil, 0) == nil
}

func (s seenPid) release() {
	if s.fd >= 0 {
		unix.Close(s.fd)
	}
}

func pidsLimit(n int64) *int64 {
	if n <= 0 {
		return nil
	}
	return &n
}

// dropped are the default capabilities a box's processes lose on runc.
// NET_RAW would let root in a box forge packets (raw sockets); MKNOD and
// AUDIT_WRITE serve nothing a box does. Sysbox gives root in the box all
// capabilities inside the box's own user namespace instead, and ignores
// this list; there the bridge rules (policies) are what binds a box to its
// own addresses.
var dropped = []string{"NET_RAW", "MKNOD", "AUDIT_WRITE"}

// CreateBox makes (but does not start) a box's container.
func (d *Driver) CreateBox(ctx context.Context, spec driver.BoxSpec) error {
	image := spec.Image
	if spec.Snapshot != "" {
		image = d.snapshotRef(spec.Snapshot)
	}
	labels := d.labels("box", "box/"+spec.Name)
	labels[LabelSpec] = spec.Hash()
	labels[LabelSnapshot] = spec.Snapshot
	labels[LabelBox] = spec.Name // overrides the one a snapshot image carries
	labels[LabelBoxID] = spec.UID
	var mounts []mount.Mount
	for _, m := range spec.Mounts {
		mounts = append(mounts, mount.Mount{
			Type: mount.TypeVolume, Source: d.volumeName(m.Volume), Target: m.Path, ReadOnly: m.ReadOnly,
		})
	}
	for _, b := range spec.Binds {
		if d.cfg.BindsDir == "" || b.Name == "" || strings.ContainsAny(b.Name, "/.") {
			return fmt.Errorf("box %s: %s is served by the control plane's server only (not yet on other servers)", spec.Name, b.Path)
		}
		// rslave: a mount made there on the host later (made again after
		// it went) reaches the box; nothing the box mounts goes back.
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: filepath.Join(d.cfg.BindsDir, b.Name), Target: b.Path, ReadOnly: b.ReadOnly,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRSlave}})
	}
	init := true
	stop := 5
	var env []string
	if spec.Desktop {
		env = append(env, "PADDOCK_DESKTOP=1")
	}
	capDrop, capAdd := dropped, []string(nil)
	var secOpt []string
	docker := d.cfg.Runtime == "sysbox-runc"
	if d.cfg.UnsafeDockerInRunc && d.cfg.Runtime == "runc" {
		docker = true
		capDrop, capAdd = []string{"SYS_RESOURCE"}, []string{"ALL"}
		secOpt = []string{"seccomp=unconfined", "apparmor=unconfined"}
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: "/sys/fs/cgroup", Target: "/sys/fs/cgroup"})
	}
	if docker {
		env = append(env, "PADDOCK_DOCKER=1") // paddock-init starts the box's own engine
		if d.cfg.DockerWithBox {
			env = append(env, "PADDOCK_DOCKER_START=box")
		}
	}
	var netcfg *network.NetworkingConfig
	var dns []netip.Addr
	if spec.IP != "" {
		ip, err := netip.ParseAddr(spec.IP)
		if err != nil {
			return fmt.Errorf("box %s: bad address %q", spec.Name, spec.IP)
		}
		netcfg = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			d.cfg.Instance: {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: ip}},
		}}
		dns = []netip.Addr{d.cfg.Gateway}
	}
	_, err := d.c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: d.containerName(spec.Name),
		Config: &container.Config{
			Env:         env,
			Image:       image,
			Hostname:    spec.Name,
			Labels:      labels,
			StopTimeout: &stop,
		},
		HostConfig: &container.HostConfig{
			Runtime:     d.cfg.Runtime,
			CapDrop:     capDrop,
			CapAdd:      capAdd,
			SecurityOpt: secOpt,
			Init:        &init,
			DNS:         dns,
			NetworkMode: container.NetworkMode(d.cfg.Instance),
			Mounts:      mounts,
			Resources: container.Resources{
				NanoCPUs:  int64(spec.CPUs * 1e9),
				CPUShares: cpuShares(spec.Background),
				Memory:    spec.MemoryBytes,
				PidsLimit: pidsLimit(spec.Pids),
			},
		},
		NetworkingConfig: netcfg,
	})
	if cerrdefs.IsConflict(err) {
		return fmt.Errorf("%w: container %s exists", driver.ErrInUse, d.containerName(spec.Name))
	}
	return wrap(err)
}

// CPU shares of boxes: every box has the same (the engine's usual 1024),
// but one made in the background, which has an eighth of it until it is
// brought to the foreground. Under cgroup v1 the host's services have
// 1024 too; under v2 the engine makes the shares CPU weights of 39 and 5,
// beside the services' 100, so that boxes yield to paddockd and the
// engine as well. Pool boxes yield to everything.
const (
	boxShares        = 1024
	backgroundShares = 128
)

func cpuShares(background bool) int64 {
	if background {
		return backgroundShares
	}
	return boxShares
}

var _ driver.Foregrounder = (*Driver)(nil)

// Foreground gives a box made in the background a box's usual CPU share.
// A box that has it already is left as it is: the engine's update runs a
// process of the runtime, its look does not.
func (d *Driver) Foreground(ctx context.Context, box string) error {
	ins, err := d.c.ContainerInspect(ctx, d.containerName(box), client.ContainerInspectOptions{})
	if err != nil {
		return wrap(err)
	}
	if hc := ins.Container.HostConfig; hc != nil && hc.CPUShares == boxShares {
		return nil
	}
	_, err = d.c.ContainerUpdate(ctx, d.containerName(box), client.ContainerUpdateOptions{
		Resources: &container.Resources{CPUShares: boxShares},
	})
	return wrap(err)
}

// StartBox starts a box's container.
func (d *Driver) StartBox(ctx context.Context, name string) error {
	d.DropWarm(name) // one of an earlier run of the box is gone with it
	_, err := d.c.ContainerStart(ctx, d.containerName(name), client.ContainerStartOptions{})
	return wrap(err)
}

// StopBox stops a box's container.
func (d *Driver) StopBox(ctx context.Context, name string) error {
	d.DropWarm(name)
	_, err := d.c.ContainerStop(ctx, d.containerName(name), client.ContainerStopOptions{})
	return wrap(err)
}

// RemoveBox removes a box's container (not its volumes).
func (d *Driver) RemoveBox(ctx context.Context, name string) error {
	d.DropWarm(name)
	d.mu.Lock()
	delete(d.gates, name)
	d.mu.Unlock()
	_, err := d.c.ContainerRemove(ctx, d.containerName(name), client.ContainerRemoveOptions{Force: true})
	return wrap(err)
}

// Snapshots lists the instance's snapshot images.
func (d *Driver) Snapshots(ctx context.Context) ([]driver.SnapshotState, error) {
	res, err := d.c.ImageList(ctx, client.ImageListOptions{Filters: d.filter("snapshot")})
	if err != nil {
		return nil, err
	}
	var out []driver.SnapshotState
	for _, im := range res.Items {
		for _, tag := range im.RepoTags {
			repo, id, ok := strings.Cut(tag, ":")
			if ok && repo == d.snapshotRepo() {
				out = append(out, driver.SnapshotState{ID: id, Box: im.Labels[LabelBox]})
			}
		}
	}
	return out, nil
}

var _ driver.Meter = (*Driver)(nil)

// BoxUsage is what a running box uses, read from the kernel: its cgroup
// (found through its first process) and its network namespace's
// interfaces. (The engine's own stats answer zeros on some hosts:
// Debian's 20.10 with a split cpu and cpuacct hierarchy.) It needs the
// engine on this machine.
func (d *Driver) BoxUsage(ctx context.Context, box string) (driver.Usage, error) {
	pid, err := d.runningPid(ctx, box)
	if err != nil {
		return driver.Usage{}, err
	}
	return procs.Usage(pid)
}

// DiskUsage is what a box has written: its writable layer, as the
// engine sizes it, and its /var/lib/docker volume, as the blocks under the
// volume's folder on the host (where paddockd runs, beside the engine).
// Both walk the files, so it is measured every few minutes, not per call.
func (d *Driver) DiskUsage(ctx context.Context, box string) (int64, error) {
	ins, err := d.c.ContainerInspect(ctx, d.containerName(box), client.ContainerInspectOptions{Size: true})
	if err != nil {
		return 0, wrap(err)
	}
	var n int64
	if ins.Container.SizeRw != nil {
		n = *ins.Container.SizeRw
	}
	v, err := d.c.VolumeInspect(ctx, d.volumeName(driver.VolumeRef{Kind: driver.KindBoxData, Name: box}), client.VolumeInspectOptions{})
	if err == nil && v.Volume.Mountpoint != "" {
		n += blocksUnder(v.Volume.Mountpoint)
	}
	return n, nil
}

// VolumeUsage sums the disk blocks of what volume v holds.
func (d *Driver) VolumeUsage(ctx context.Context, v driver.VolumeRef) (int64, error) {
	res, err := d.c.VolumeInspect(ctx, d.volumeName(v), client.VolumeInspectOptions{})
	if err != nil {
		return 0, wrap(err)
	}
	if res.Volume.Mountpoint == "" {
		return 0, fmt.Errorf("volume %s has no mountpoint on this machine", d.volumeName(v))
	}
	return blocksUnder(res.Volume.Mountpoint), nil
}

// blocksUnder sums the disk blocks of the files under dir (sparse files
// count what they hold, hard links once).
func blocksUnder(dir string) int64 {
	var n int64
	seen := map[uint64]bool{}
	filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if st.Nlink > 1 && !e.IsDir() {
				if seen[st.Ino] {
					return nil
				}
				seen[st.Ino] = true
			}
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}

// SnapshotSize is the size of the layer a snapshot's commit made: the
// newest entry of the image's history.
func (d *Driver) SnapshotSize(ctx context.Context, id string) (int64, error) {
	h, err := d.c.ImageHistory(ctx, d.snapshotRef(id))
	if err != nil {
		return 0, wrap(err)
	}
	if len(h.Items) == 0 {
		return 0, fmt.Errorf("snapshot %s has no history", id)
	}
	return h.Items[0].Size, nil
}

// Snapshot commits a box's container filesystem. Volumes (drives and
// /var/lib/docker) are not part of a commit.
//
// The engine pauses a running container for its commit. A process an
// exec starts while the box is being paused hangs in the runtime, and
// with it the engine's resume and every later operation on the box
// (Docker 20.10 with containerd 1.6: until someone thaws its cgroup by
// hand). So no exec of this driver starts during a commit (the box's
// gate), and the commit waits until those already starting have.
func (d *Driver) Snapshot(ctx context.Context, box, id string) error {
	g := d.gate(box)
	g.Lock()
	defer g.Unlock()
	if err := d.execsStarted(ctx, box); err != nil {
		return err
	}
	_, err := d.c.ContainerCommit(ctx, d.containerName(box), client.ContainerCommitOptions{
		Reference: d.snapshotRef(id),
		Comment:   "paddock snapshot " + id + " of " + box,
		Changes: []string{
			fmt.Sprintf("LABEL %s=%s %s=snapshot %s=snapshot/%s %s=%s %s=%s",
				LabelInstance, d.cfg.Instance, LabelKind, LabelOwner, id, LabelSnapshot, id, LabelBox, box),
		},
	})
	return wrap(err)
}

// gate is the box's gate between exec starts (read) and commits (write).
func (d *Driver) gate(box string) *sync.RWMutex {
	d.mu.Lock()
	defer d.mu.Unlock()
	g := d.gates[box]
	if g == nil {
		if d.gates == nil {
			d.gates = map[string]*sync.RWMutex{}
		}
		g = new(sync.RWMutex)
		d.gates[box] = g
	}
	return g
}

// startSettle bounds execsStarted's wait: an exec made and never started
// (by a client that went away) would otherwise hold commits forever.
const startSettle = 5 * time.Second

// execsStarted waits until no exec of the box's container is starting:
// each has a process, or has ended.
func (d *Driver) execsStarted(ctx context.Context, box string) error {
	name := d.containerName(box)
	deadline := time.Now().Add(startSettle)
	for {
		ins, err := d.c.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		if err != nil {
			return wrap(err)
		}
		if ins.Container.State == nil || !ins.Container.State.Running {
			return nil
		}
		starting := false
		for _, id := range ins.Container.ExecIDs {
			e, err := d.c.ExecInspect(ctx, id, client.ExecInspectOptions{})
			if err == nil && e.PID == 0 && e.ExitCode == 0 {
				starting = true
				break
			}
		}
		if !starting || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// RemoveSnapshot removes a snapshot image; ErrInUse while a box is made
// from it.
func (d *Driver) RemoveSnapshot(ctx context.Context, id string) error {
	_, err := d.c.ImageRemove(ctx, d.snapshotRef(id), client.ImageRemoveOptions{})
	return wrap(err)
}

// Volumes lists the instance's volumes.
func (d *Driver) Volumes(ctx context.Context) ([]driver.VolumeRef, error) {
	res, err := d.c.VolumeList(ctx, client.VolumeListOptions{
		Filters: client.Filters{}.Add("label", LabelInstance+"="+d.cfg.Instance),
	})
	if err != nil {
		return nil, err
	}
	var out []driver.VolumeRef
	for _, v := range res.Items {
		kind := v.Labels[LabelKind]
		name, ok := strings.CutPrefix(v.Labels[LabelOwner], kind+"/")
		if ok && (kind == driver.KindDrive || kind == driver.KindBoxData || kind == driver.KindBuildCache) {
			out = append(out, driver.VolumeRef{Kind: kind, Name: name})
		}
	}
	return out, nil
}

// CreateVolume makes a labelled volume; an existing one is kept as is.
func (d *Driver) CreateVolume(ctx context.Context, v driver.VolumeRef) error {
	_, err := d.c.VolumeCreate(ctx, client.VolumeCreateOptions{
		Name:   d.volumeName(v),
		Labels: d.labels(v.Kind, v.Kind+"/"+v.Name),
	})
	return err
}

// RemoveVolume removes a volume; ErrInUse while a container mounts it.
func (d *Driver) RemoveVolume(ctx context.Context, v driver.VolumeRef) error {
	_, err := d.c.VolumeRemove(ctx, d.volumeName(v), client.VolumeRemoveOptions{})
	return wrap(err)
}

// initialSize sets a TTY exec's size, retrying while the engine has not
// started the process yet.
func (d *Driver) initialSize(ctx context.Context, id string, sz client.ConsoleSize) {
	for i := 0; i < 20; i++ {
		_, err := d.c.ExecResize(ctx, id, client.ExecResizeOptions{Height: sz.Height, Width: sz.Width})
		if err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Exec runs a command in a running box and returns its exit code.
func (d *Driver) Exec(ctx context.Context, box string, spec driver.ExecSpec) (int, error) {
	user := spec.User
	if user == "" {
		user = d.cfg.User
	}
	// A warm exec (warm.go) serves a command without a terminal; one
	// with a terminal leaves it for the next.
	// A command without one starts the next one's (keepWarm).
	var w *warmExec
	if !spec.TTY {
		w = d.takeWarm(ctx, box)
	}
	if w != nil {
		code, how, err := d.runWarm(ctx, w, spec, warmCommand{User: user, Env: spec.Env, Dir: spec.WorkDir, Cmd: spec.Cmd})
		if how.reuse() {
			d.giveBack(box, w)
		} else {
			w.att.Close()
		}
		if how.ran() {
			d.keepWarm(box, false)
			return code, err
		}
	}
	opts := client.ExecCreateOptions{
		User:         user,
		TTY:          spec.TTY,
		AttachStdin:  spec.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		Env:          spec.Env,
		WorkingDir:   spec.WorkDir,
		Cmd:          spec.Cmd,
	}
	if spec.TTY && spec.Rows > 0 && spec.Cols > 0 {
		opts.ConsoleSize = client.ConsoleSize{Height: uint(spec.Rows), Width: uint(spec.Cols)}
	}
	g := d.gate(box)
	g.RLock()
	cr, err := d.c.ExecCreate(ctx, d.containerName(box), opts)
	if err != nil {
		g.RUnlock()
		return -1, wrap(err)
	}
	att, err := d.c.ExecAttach(ctx, cr.ID, client.ExecAttachOptions{TTY: spec.TTY, ConsoleSize: opts.ConsoleSize})
	g.RUnlock() // the start goes on in the engine: Snapshot waits for it
	if err != nil {
		return -1, wrap(err)
	}
	code, err := d.attached(ctx, box, cr.ID, att, spec)
	if !spec.TTY {
		// With no warm exec free when it began, it ran beside another.
		d.keepWarm(box, w == nil)
	}
	return code, err
}

// boxCgroup is the cgroup of the box's container as this machine sees it:
// where every process of the box is, and the only place a timeout's
// signal may go (signal.go).
func (d *Driver) boxCgroup(ctx context.Context, box string) (string, error) {
	ins, err := d.c.ContainerInspect(ctx, d.containerName(box), client.ContainerInspectOptions{})
	if err != nil {
		return "", wrap(err)
	}
	return containerCgroup(ins.Container.ID, ins.Container.State.Pid)
}

// containerCgroup is the cgroup of the container id whose first process
// is pid: it must name the container, or it is no box's.
func containerCgroup(id string, pid int) (string, error) {
	if pid <= 0 {
		return "", fmt.Errorf("container %.12s is not running", id)
	}
	cg, err := procs.CgroupOf(pid)
	if err != nil {
		return "", err
	}
	if id == "" || !strings.Contains(cg, id) {
		return "", fmt.Errorf("container %.12s: its process is in cgroup %q, not its own", id, cg)
	}
	return cg, nil
}

// attached runs the exec id, started and attached as att, to its end:
// its input, terminal size and timeout, its output, its exit code.
func (d *Driver) attached(ctx context.Context, box, id string, att client.ExecAttachResult, spec driver.ExecSpec) (int, error) {
	defer att.Close()
	// Input cut short (its caller went away) is not an end of input: the
	// command must not take what it got for the whole. Its process group
	// is killed before the stream closes (the engine would give it an end
	// of input then), and the exec ends with an error.
	var inputEnded atomic.Bool
	killCut := func() {
		if spec.Stdin == nil || inputEnded.Load() {
			return
		}
		d.killExec(context.WithoutCancel(ctx), box, id)
	}
	stop := context.AfterFunc(ctx, func() {
		killCut()
		att.Conn.Close()
	})
	defer stop()
	var cg string
	if spec.Timeout > 0 || spec.Signals != nil {
		var err error
		if cg, err = d.boxCgroup(ctx, box); err != nil {
			return -1, fmt.Errorf("the command's timeout or signals: %w", err)
		}
	}
	kill := d.execSignaller(ctx, cg, id, spec.Timeout > 0 || spec.Signals != nil)
	timedOut := startTimeout(spec.Timeout, kill)
	defer timedOut.stop()
	defer forwardSignals(spec.Signals, kill)()
	if spec.TTY && spec.Rows > 0 && spec.Cols > 0 {
		// Engines before API 1.42 ignore the size given at create and
		// start; set it once the process exists, as the docker CLI does.
		// The command may see 0x0 for the first moments there.
		d.initialSize(context.WithoutCancel(ctx), id, client.ConsoleSize{Height: uint(spec.Rows), Width: uint(spec.Cols)})
	}

	var cut atomic.Value // the error that cut the command's input short
	if spec.Stdin != nil {
		streamCtx, streamEnded := context.WithCancel(context.WithoutCancel(ctx))
		defer streamEnded()
		go func() {
			n, err := io.Copy(att.Conn, spec.Stdin)
			if err == nil {
				inputEnded.Store(true)
			}
			switch {
			case err != nil:
				cut.Store(err)
				killCut()
				att.Conn.Close() // the output's copy ends with an error
			case !spec.TTY:
				// End of input closes the command's stdin. A terminal has
				// no such thing (only ^D, which the terminal itself
				// carries), and the engine would stop the output with it.
				att.CloseWrite()
				if n == 0 {
					d.endEmptyInput(streamCtx, id) // stdin.go
				}
			}
		}()
	}
	if spec.Resize != nil {
		go func() {
			for sz := range spec.Resize {
				d.c.ExecResize(context.WithoutCancel(ctx), id, client.ExecResizeOptions{Height: uint(sz[0]), Width: uint(sz[1])})
				if spec.Resized != nil {
					select {
					case spec.Resized <- sz:
					default:
					}
				}
			}
		}()
	}
	stdout, stderr := orDiscard(spec.Stdout), orDiscard(spec.Stderr)
	guard := &startGuard{w: stdout}
	stdout = guard
	var err error
	if spec.TTY {
		_, err = io.Copy(stdout, att.Reader)
	} else {
		_, err = stdcopy.StdCopy(stdout, stderr, att.Reader)
	}
	if err, ok := cut.Load().(error); ok {
		return -1, inputCut(err)
	}
	if err != nil && ctx.Err() == nil {
		return -1, fmt.Errorf("exec stream: %w", err)
	}
	if ctx.Err() != nil {
		return -1, ctx.Err()
	}
	// The stream ends a moment before the engine records the exit code.
	for i := 0; ; i++ {
		ins, err := d.c.ExecInspect(context.WithoutCancel(ctx), id, client.ExecInspectOptions{})
		if err != nil {
			return -1, err
		}
		if !ins.Running {
			if timedOut.fired() {
				return 124, nil
			}
			errOut := stderr
			if spec.TTY {
				errOut = guard.w // a terminal has one stream
			}
			return guard.end(ins.ExitCode, errOut, spec.Cmd), nil
		}
		if i > 500 {
			return -1, errors.New("exec stream ended but the command is still running")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// inputCut is the error of an exec whose input broke off before its end.
func inputCut(err error) error {
	return fmt.Errorf("the command's input was cut short (%v): it was not given an end of input, and its exit code is not reported", err)
}

// execTimer ends a command past its timeout: SIGTERM, and SIGKILL 5 s
// later, then again each second for up to 30 s, until stopped. A signal
// can miss: the group is found by a walk of /proc that a busy machine can
// outrun (a process forked during it), so the kill goes on while the
// command does. (What left the group, a daemon's setsid, is not its to
// end: the bound keeps the walks from going on for its life.)
type execTimer struct {
	ended chan struct{}
	sent  atomic.Bool
}

// startTimeout starts the timer of a command with timeout t (none when
// t <= 0); kill signals the command's process group.
func startTimeout(t time.Duration, kill func(syscall.Signal)) *execTimer {
	x := &execTimer{ended: make(chan struct{})}
	if t <= 0 {
		return x
	}
	go func() {
		for i := 0; i < 32; i++ {
			wait, sig := t, syscall.SIGTERM
			switch {
			case i == 1:
				wait, sig = 5*time.Second, syscall.SIGKILL
			case i > 1:
				wait, sig = time.Second, syscall.SIGKILL
			}
			select {
			case <-x.ended:
				return
			case <-time.After(wait):
			}
			x.sent.Store(true)
			kill(sig)
		}
	}()
	return x
}

// forwardSignals hands each signal from sigs to kill until the stop it
// returns is called; stop returns once no signal is being sent, so that
// none reaches what runs after the command (a warm exec's next one).
func forwardSignals(sigs <-chan syscall.Signal, kill func(syscall.Signal)) (stop func()) {
	if sigs == nil {
		return func() {}
	}
	var mu sync.Mutex
	ended := false
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case <-quit:
				return
			case sig, ok := <-sigs:
				if !ok {
					return
				}
				mu.Lock()
				if !ended {
					kill(sig)
				}
				mu.Unlock()
			}
		}
	}()
	return func() {
		mu.Lock()
		ended = true
		mu.Unlock()
		close(quit)
	}
}

func (x *execTimer) stop()       { close(x.ended) }
func (x *execTimer) fired() bool { return x.sent.Load() }

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// execSignaller is what signals exec id's process group (when want),
// of the box's processes only (cg, its cgroup when the command started).
// The engine starts each exec as the leader of its own session, and
// reports its process ID as the host sees it; so the group is everything
// the command started that did not leave it (a daemon's setsid does).
// The ID is asked for once, as the command starts (the engine may say 0
// for a moment after the process runs: it is asked again until it says
// one), and each signal goes to that group, while the command runs.
// Inside the box's cgroup the number can only name the box's own
// processes.
func (d *Driver) execSignaller(ctx context.Context, cg, id string, want bool) func(syscall.Signal) {
	if !want {
		return func(syscall.Signal) {}
	}
	found := make(chan struct{})
	var pid int
	go func() {
		defer close(found)
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		pid, _ = d.execPID(pctx, id)
	}()
	return func(sig syscall.Signal) {
		<-found
		if pid > 0 {
			procs.SignalGroup(cg, pid, sig)
		}
	}
}

// killExec kills the exec's process tree (of the box's processes only),
// once it has one, and returns once the engine says it is no longer
// running: the engine may not have started its process yet, and would
// start it with what input it was given and an end of input; and the
// stream must not close (an end of input) while it runs.
func (d *Driver) killExec(ctx context.Context, box, id string) {
	cg, err := d.boxCgroup(ctx, box)
	if err != nil {
		return
	}
	for range 500 {
		ins, err := d.c.ExecInspect(ctx, id, client.ExecInspectOptions{})
		switch {
		case err != nil:
			return
		case ins.Running && ins.PID > 0:
			procs.SignalTree(cg, ins.PID, syscall.SIGKILL)
		case ins.PID > 0 || ins.ExitCode != 0:
			return // ended
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// StatPath says whether path in the box is a folder, or a symlink to one
// (ErrNotFound when nothing is there).
func (d *Driver) StatPath(ctx context.Context, box, p string) (bool, error) {
	for range 8 {
		r, err := d.c.ContainerStatPath(ctx, d.containerName(box), client.ContainerStatPathOptions{Path: p})
		if err != nil {
			return false, wrap(err)
		}
		if r.Stat.Mode&os.ModeSymlink == 0 || r.Stat.LinkTarget == "" {
			return r.Stat.Mode.IsDir(), nil
		}
		p = r.Stat.LinkTarget
	}
	return false, fmt.Errorf("%s: too many levels of symlinks", p)
}

// CopyTo extracts a tar stream into dir in the box.
func (d *Driver) CopyTo(ctx context.Context, box, dir string, tar io.Reader) error {
	_, err := d.c.CopyToContainer(ctx, d.containerName(box), client.CopyToContainerOptions{
		DestinationPath: dir, Content: tar,
	})
	return wrap(err)
}

// CopyFrom streams path from the box as a tar.
func (d *Driver) CopyFrom(ctx context.Context, box, path string) (io.ReadCloser, error) {
	res, err := d.c.CopyFromContainer(ctx, d.containerName(box), client.CopyFromContainerOptions{SourcePath: path})
	if err != nil {
		return nil, wrap(err)
	}
	return res.Content, nil
}

var _ driver.SnapshotShipper = (*Driver)(nil)

// SaveSnapshots streams snapshots' images, in one archive.
func (d *Driver) SaveSnapshots(ctx context.Context, ids []string) (io.ReadCloser, error) {
	refs := make([]string, len(ids))
	for i, id := range ids {
		refs[i] = d.snapshotRef(id)
		if _, err := d.c.ImageInspect(ctx, refs[i]); err != nil {
			return nil, wrap(err)
		}
	}
	rc, err := d.c.ImageSave(ctx, refs)
	if err != nil {
		return nil, wrap(err)
	}
	return rc, nil
}

// LoadSnapshots loads snapshots' images from a SaveSnapshots stream, and
// checks that each is there under its snapshot's name after: a stream
// that broke off loads nothing.
//
// The stream comes from another server, which may have been taken over:
// it goes through imagefmt.SanitizeAll, so it names nothing (docker load
// would tag whatever it says, the box image included), each image's ID is
// its content's, and it is bounded unpacked. The snapshots are then named
// here, each image by the snapshot name the archive gave it, and only
// names of the snapshots asked for.
func (d *Driver) LoadSnapshots(ctx context.Context, ids []string, r io.Reader) error {
	return d.loadSnapshots(ctx, ids, r, nil)
}

// loadSnapshots is LoadSnapshots; with has, a layer the engine has (has
// says so of its chain) may be in the archive empty
// (imagefmt.SanitizeHaving).
func (d *Driver) loadSnapshots(ctx context.Context, ids []string, r io.Reader, has func(chain []string) bool) error {
	max := d.cfg.LoadMax
	if max <= 0 {
		max = 64 << 30
	}
	want := map[string]string{} // a snapshot's name → its id
	for _, id := range ids {
		want[d.snapshotRef(id)] = id
	}
	pr, pw := io.Pipe()
	var ims []imagefmt.Image
	checked := make(chan error, 1)
	go func() {
		var err error
		ims, err = imagefmt.SanitizeHaving(pw, r, max, has)
		if errors.Is(err, imagefmt.ErrTooBig) {
			err = fmt.Errorf("the snapshots' archive is over move_max_gib (%d GiB, unpacked)", max>>30)
		}
		pw.CloseWithError(err)
		checked <- err
	}()
	lerr := d.load(ctx, pr, "snapshots")
	pr.CloseWithError(errors.New("load ended"))
	if err := <-checked; err != nil {
		return fmt.Errorf("the snapshots' archive: %w", err)
	}
	if lerr != nil {
		return lerr
	}
	got := map[string]string{} // a snapshot's id → its image
	for _, im := range ims {
		for _, t := range im.Tags {
			if id, ok := want[familiar(t)]; ok {
				if prev, dup := got[id]; dup && prev != im.ID {
					return fmt.Errorf("the snapshots' archive gives snapshot %s two images", id)
				}
				got[id] = im.ID
			}
		}
	}
	for _, id := range ids {
		img, ok := got[id]
		if !ok {
			return fmt.Errorf("snapshot %s is not in the snapshots' archive", id)
		}
		if err := d.TagImage(ctx, img, d.snapshotRef(id)); err != nil {
			return fmt.Errorf("naming snapshot %s after its load: %w", id, err)
		}
	}
	return nil
}

// familiar is an image name as docker save writes it in RepoTags, without
// the default registry's prefixes it may carry.
func familiar(ref string) string {
	ref = strings.TrimPrefix(ref, "docker.io/")
	return strings.TrimPrefix(ref, "library/")
}
