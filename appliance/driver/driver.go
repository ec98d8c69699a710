// Package driver is the narrow seam between the reconciler and a container
// engine: the few operations Paddock needs on boxes, snapshots and volumes,
// plus running commands and copying files in a box. The Docker engine
// implementation lives in driver/docker; another backend (Nomad, Kubernetes
// with a Sysbox runtime class) would implement the same interface and pass
// the same contract tests (driver/drivertest).
//
// Every object a driver makes carries labels naming the Paddock instance and
// the box, drive or snapshot that owns it, so that the reconciler can find
// what it made and sweep what nothing declares.
package driver

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Display is the X display of a box's desktop (BoxSpec.Desktop).
const Display = ":1"

// VNCPort is the desktop's VNC server's port, on the box's loopback
// (display :1).
const VNCPort = "5901"

// ErrNotFound is returned when a box, volume or snapshot does not exist.
var ErrNotFound = errors.New("not found in the engine")

// ErrInUse is returned when an object cannot be removed because another one
// still uses it (a snapshot image under a forked box, a volume under a box).
var ErrInUse = errors.New("in use")

// NodesDown is a list that a driver over several servers made without
// some of them: they did not answer (Nodes, by name, with why). What it
// lists is every other server's; nothing of the servers named is in it,
// and nothing may be concluded about their objects.
type NodesDown struct {
	Nodes map[string]error
}

func (e *NodesDown) Error() string {
	names := make([]string, 0, len(e.Nodes))
	for n, err := range e.Nodes {
		if n == "" {
			n = "(control plane)"
		}
		names = append(names, fmt.Sprintf("%s: %v", n, err))
	}
	sort.Strings(names)
	return "nodes down: " + strings.Join(names, "; ")
}

// Volume kinds.
const (
	KindDrive   = "drive"   // a named drive, declared by users
	KindBoxData = "boxdata" // a box's /var/lib/docker, not in snapshots
	// KindBuildCache is a user's image build cache: the /var/lib/docker of
	// their builder boxes, one at a time, kept between builds (named by
	// the user's id).
	KindBuildCache = "buildcache"
)

// VolumeRef names a volume by kind and owner name.
type VolumeRef struct {
	Kind string
	Name string
}

func (v VolumeRef) String() string { return v.Kind + "/" + v.Name }

// Mount attaches a volume at a path in a box.
type Mount struct {
	Volume   VolumeRef
	Path     string
	ReadOnly bool
}

// BoxSpec is everything that decides how a box's container is made. A
// change to any field means the container must be made again; Hash says so.
type BoxSpec struct {
	Name string
	// UID is the box's own id (see store.Box.UID); a container of the same
	// name made for another box has another hash and is replaced, never
	// adopted.
	UID string
	// Image is the base image; Snapshot, when set, takes precedence: the
	// box is made from that snapshot's image.
	Image       string
	Snapshot    string
	CPUs        float64
	MemoryBytes int64
	// Pids bounds the box's processes (0: no bound). Not in the hash: a
	// new bound reaches a box when its container is next made.
	Pids   int64
	Mounts []Mount
	// Binds are folders of the host's that the server serves itself (a
	// bucket mounted there), seen in the box (Bind).
	Binds []Bind
	// Generation forces a new container when it changes.
	Generation int
	// IP is the box's fixed address on the box network.
	IP string
	// Desktop starts an X desktop on display :1 with the box.
	Desktop bool
	// Background marks a box made ahead of any request (a warm pool box):
	// its processes get a small share of the CPU when the machine is busy
	// (its desktop starting yields to the requests people wait on), until
	// Foregrounder.Foreground gives it a box's usual share. Not in the
	// hash: a claimed pool box keeps its container.
	Background bool
}

// Bind is a folder of the host's, in the engine's folder for such
// (docker.Config.BindsDir), under Name: the server mounts something
// there (a bucket), at any time, and again when it went; the box sees
// it at Path, and what is mounted there after the box started too.
type Bind struct {
	Name     string
	Path     string
	ReadOnly bool
}

// Foregrounder is a driver that can give a box made in the background
// (BoxSpec.Background) the CPU share of any other box, in place.
type Foregrounder interface {
	Foreground(ctx context.Context, box string) error
}

// Hash is a stable digest of the spec, stored on the container as a label.
func (s BoxSpec) Hash() string {
	ms := make([]string, 0, len(s.Mounts))
	for _, m := range s.Mounts {
		ms = append(ms, fmt.Sprintf("%s=%s:%v", m.Volume, m.Path, m.ReadOnly))
	}
	sort.Strings(ms)
	h := sha256.Sum256([]byte(fmt.Sprintf("v1|%s|%s|%s|%g|%d|%s|%d|%s", s.Name, s.Image, s.Snapshot, s.CPUs, s.MemoryBytes, strings.Join(ms, ","), s.Generation, s.IP) + desktopMark(s.Desktop) + uidMark(s.UID) + bindsMark(s.Binds)))
	return hex.EncodeToString(h[:8])
}

// BoxState is what the engine has for a box.
type BoxState struct {
	Name     string
	ID       string
	SpecHash string
	Running  bool
	Status   string // the engine's word: created, running, exited, ...
	// Snapshot is the snapshot the container was made from, if any.
	Snapshot string
	// Pid is the box's first process on the host while it runs (0
	// otherwise, or where the backend has no host processes): the
	// firewall finds the box's network port from it.
	Pid int
}

// SnapshotState is a snapshot image the engine has.
type SnapshotState struct {
	ID  string
	Box string
}

// PathStater is a driver that can tell what a path in a box is, without
// running anything in it: ErrNotFound when nothing is there.
type PathStater interface {
	StatPath(ctx context.Context, box, path string) (isDir bool, err error)
}

// DiskMeter is a driver that can tell how much a box has written: its
// writable layer and its /var/lib/docker volume (not its drives).
type DiskMeter interface {
	DiskUsage(ctx context.Context, box string) (int64, error)
	// VolumeUsage is what a volume (a drive) holds on disk.
	VolumeUsage(ctx context.Context, v VolumeRef) (int64, error)
}

// Hostnamer is a driver that can give a running box another hostname
// (what hostname and uname say, /etc/hostname and /etc/hosts) without
// making its container again: a box claimed from the warm pool was made
// under the pool's name. The engine gives a container the hostname it
// was made with each time it starts, so this is done after every start.
type Hostnamer interface {
	SetHostname(ctx context.Context, box, hostname string) error
}

// BoxUserFiles is a driver that can run Go code that works on a box's
// files directly, without a process in the box: fn runs on a thread of
// its own that sees the box's files as the box's processes do, with the
// rights of the box's user uid and nothing more (no capabilities, no other
// groups), so that it can do nothing the box's user could not do from
// inside. Files it makes are the box user's. fn must use absolute paths
// and must not start goroutines for file work (they run elsewhere); its
// error is AsBoxUser's. A box this machine does not run (one on another
// node) is errors.ErrUnsupported, and fn does not run.
type BoxUserFiles interface {
	AsBoxUser(ctx context.Context, box string, uid int, fn func() error) error
}

// Usage is what a running box uses, read from the kernel: its cgroup
// (v1 or v2) and its network namespace. The counts are since the box's
// container started.
type Usage struct {
	// CPU is the CPU time its processes used (what an idle stop weighs
	// between two looks; metrics make a percentage of it).
	CPU time.Duration
	// Memory is what its processes hold, less the page cache the kernel
	// can drop (the inactive files), as docker stats counts it.
	Memory int64
	// MemoryLimit is its cgroup's bound (0: none).
	MemoryLimit int64
	// Processes counts its processes (threads, as the pids controller
	// counts them), those of its own Docker engine's containers too.
	Processes int
	// NetRx and NetTx are the bytes its network interfaces (not
	// loopback) took in and sent.
	NetRx, NetTx int64
	// OOMKills counts the processes the kernel killed for its memory
	// bound.
	OOMKills int64
}

// Meter is a driver that can say what a running box uses now.
type Meter interface {
	BoxUsage(ctx context.Context, box string) (Usage, error)
}

// UserFiles is a driver that pushes and pulls a box's files itself, with
// the rights of the box's user uid (as BoxUserFiles lets code do on this
// machine), wherever the box runs: no process in the box and no copy
// through the engine. The control plane's cluster driver sends each call
// to the agent of the box's server, which does it there.
type UserFiles interface {
	// PushFolder is where a push into dir stages: dir, or the nearest
	// folder of its path that exists. writable says whether the box's
	// user may make entries in it; notFolder, when not empty, is a file
	// found where a folder of dir's path must be (folder is then "").
	PushFolder(ctx context.Context, box string, uid int, dir string) (folder, notFolder string, writable bool, err error)
	// UnpackAsUser unpacks a tar stream into the folder stage (made by
	// it), checking every entry as it passes (at most max bytes of
	// contents: archive.Checker), and then merges stage into dir (made
	// as needed) by renames. When a folder of dir is not the user's to
	// write in, it merges nothing and names it (blocked): stage stays,
	// for a merge as root. On an error stage is removed; left says
	// whether stage is still there either way.
	UnpackAsUser(ctx context.Context, box string, uid int, stage, dir string, max int64, tar io.Reader) (blocked string, left bool, err error)
	// Unreadable checks that p can be pulled as the box's user: the
	// first entry under p the user may not read ("" when none). A p that
	// does not exist is ErrNotFound.
	Unreadable(ctx context.Context, box string, uid int, p string) (string, error)
	// PackAsUser streams p as a tar, read as the box's user; the first
	// component of every name is p's base name.
	PackAsUser(ctx context.Context, box string, uid int, p string) (io.ReadCloser, error)
}

// ExecWarmer is a driver that can start, in a running box, the process
// that will start its Execs without a terminal, ahead of them: the
// runtime's start of a process is then not in the commands' time. The
// warm pool keeps one in each ready pool box. WarmExec says true when it
// started one (or waited for one being started), and is a no-op for a
// box that has one (false, no error) or whose start failed a short while
// ago (false, that start's error); an error says the box cannot have one
// (its Execs are as before). DropWarm ends the box's, if it has one: its
// next Exec starts the usual way.
type ExecWarmer interface {
	WarmExec(ctx context.Context, box string) (bool, error)
	DropWarm(box string)
}

// ImageIDer is a driver that can tell which image a reference names now.
type ImageIDer interface {
	ImageID(ctx context.Context, ref string) (string, error)
}

// ImageKeeper is a driver that takes in users' own images (package
// images): it hands out images for a builder box's engine, loads what a
// build made, and names and unnames it.
type ImageKeeper interface {
	// SaveImages streams images by reference (docker save's archive).
	SaveImages(ctx context.Context, refs []string) (io.ReadCloser, error)
	// LoadImage loads an archive of one image with no name and checks
	// that the image id is there after.
	LoadImage(ctx context.Context, r io.Reader, id string) error
	// TagImage names the image id ref (moving the name from any other).
	TagImage(ctx context.Context, id, ref string) error
	// RemoveImage removes a name, or an image by id; the image goes with
	// its last name unless a container was made from it. ErrNotFound
	// when there is no such name or image.
	RemoveImage(ctx context.Context, ref string) error
}

// SnapshotShipper is a driver that can hand snapshots' images out as a
// stream and take them in: how a box moves between servers.
type SnapshotShipper interface {
	// SaveSnapshots streams the snapshots' images in one archive (docker
	// save's: the layers they share once).
	SaveSnapshots(ctx context.Context, ids []string) (io.ReadCloser, error)
	// LoadSnapshots takes what SaveSnapshots gave, and checks that every
	// one of the snapshots is there after.
	LoadSnapshots(ctx context.Context, ids []string, r io.Reader) error
}

// ImageParts are an image as the engine keeps it: its config's bytes
// (whose SHA-256 is the image's ID) and its layers' diff IDs, bottom first.
type ImageParts struct {
	Config []byte
	Layers []string
	// Ref is the name the snapshot's image has on every server of this
	// Paddock (they share its instance name): the tag an archive made
	// of the parts must carry for another server's LoadSnapshots.
	Ref string
}

// LayerSource is one layer of an image to load: its tar's length, and
// how to read it.
type LayerSource struct {
	Diff string // the layer's diff ID (sha256:…)
	Size int64
	Open func(ctx context.Context) (io.ReadCloser, error)
	// Present says the engine has this layer (the chain up to it)
	// already: the archive holds it empty and it is never opened (an
	// engine's load takes a layer it has without reading its file).
	Present bool
}

// WriteSaveArchive writes an image, from its config and layers, as
// docker save does (its legacy layout: config, a folder per layer,
// manifest.json), tagged ref: what LoadSnapshots takes, for an engine
// that loads no parts.
func WriteSaveArchive(ctx context.Context, w io.Writer, ref string, config []byte, layers []LayerSource) error {
	tw := tar.NewWriter(w)
	sum := sha256.Sum256(config)
	cfgName := hex.EncodeToString(sum[:]) + ".json"
	file := func(name string, size int64) error {
		return tw.WriteHeader(&tar.Header{Name: name, Size: size, Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatPAX})
	}
	if err := file(cfgName, int64(len(config))); err != nil {
		return err
	}
	if _, err := tw.Write(config); err != nil {
		return err
	}
	var names []string
	for i, l := range layers {
		name := fmt.Sprintf("layer%03d/layer.tar", i)
		names = append(names, name)
		if l.Present {
			if err := file(name, 0); err != nil {
				return err
			}
			continue
		}
		if err := file(name, l.Size); err != nil {
			return err
		}
		rc, err := l.Open(ctx)
		if err != nil {
			return err
		}
		n, err := io.Copy(tw, rc)
		rc.Close()
		if err == nil && n != l.Size {
			err = fmt.Errorf("layer %d: %d bytes, %d said", i, n, l.Size)
		}
		if err != nil {
			return err
		}
	}
	man, err := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{ref}, "Layers": names}})
	if err != nil {
		return err
	}
	if err := file("manifest.json", int64(len(man))); err != nil {
		return err
	}
	if _, err := tw.Write(man); err != nil {
		return err
	}
	return tw.Close()
}

// LayerShipper is a driver that hands snapshots' images out layer by
// layer, read from the engine's own disk (so that a layer another
// snapshot or the box image already shipped is not read again), and
// loads one back from its parts.
type LayerShipper interface {
	// SnapshotParts is a snapshot image's config and layers.
	SnapshotParts(ctx context.Context, id string) (ImageParts, error)
	// OpenLayer reads the tar of the last of a chain of layers (diff
	// IDs, bottom first), byte for byte as the engine made it: its
	// SHA-256 is its diff ID.
	OpenLayer(ctx context.Context, chain []string) (io.ReadCloser, error)
	// LoadSnapshotParts loads a snapshot's image from its parts, checked
	// as LoadSnapshots checks an archive.
	LoadSnapshotParts(ctx context.Context, id string, config []byte, layers []LayerSource) error
}

// SnapshotSizer is a driver that can tell the bytes a snapshot adds to
// what its box was made from.
type SnapshotSizer interface {
	SnapshotSize(ctx context.Context, id string) (int64, error)
}

// ExecSpec is a command to run in a box.
type ExecSpec struct {
	Cmd     []string
	Env     []string
	WorkDir string
	// User defaults to the driver's box user.
	User   string
	TTY    bool
	Rows   uint16
	Cols   uint16
	Stdin  io.Reader // nil: no stdin
	Stdout io.Writer
	Stderr io.Writer // ignored with a TTY
	// Resize delivers terminal size changes (rows, cols) while a TTY exec runs.
	Resize <-chan [2]uint16
	// Resized, when set, is told each size from Resize once the terminal
	// has it (or the engine refused it), without blocking: a caller that
	// waits for it before sending more input knows the command reads that
	// input at the new size. Give it room for one, and resize one at a
	// time.
	Resized chan<- [2]uint16
	// Timeout, when set, ends the command's process group after this
	// long (SIGTERM, then SIGKILL 5 s later); the exit code is then 124.
	Timeout time.Duration
	// Signals delivers signals for the command's process group while it
	// runs (a job's kill). The driver sends each through what it took
	// when the command started (its exec, never a process number looked
	// up by name later), to the box's own processes only; one that comes
	// after the command ended goes nowhere.
	Signals <-chan syscall.Signal
}

// Driver is what the reconciler and the API need from a container engine.
type Driver interface {
	// Prepare makes the shared objects (the box network).
	Prepare(ctx context.Context) error

	// ImageExists reports whether an image a box could be made from is on
	// the engine.
	ImageExists(ctx context.Context, ref string) (bool, error)

	Boxes(ctx context.Context) ([]BoxState, error)
	CreateBox(ctx context.Context, spec BoxSpec) error
	StartBox(ctx context.Context, name string) error
	StopBox(ctx context.Context, name string) error
	RemoveBox(ctx context.Context, name string) error

	Snapshots(ctx context.Context) ([]SnapshotState, error)
	// Snapshot records the box's filesystem (not its volumes) under id.
	Snapshot(ctx context.Context, box, id string) error
	RemoveSnapshot(ctx context.Context, id string) error

	Volumes(ctx context.Context) ([]VolumeRef, error)
	CreateVolume(ctx context.Context, v VolumeRef) error
	RemoveVolume(ctx context.Context, v VolumeRef) error

	// Exec runs a command to completion and returns its exit code.
	Exec(ctx context.Context, box string, spec ExecSpec) (int, error)
	// CopyTo extracts a tar stream into dir in the box (dir must exist).
	CopyTo(ctx context.Context, box, dir string, tar io.Reader) error
	// CopyFrom returns a tar stream of path in the box, its base name first.
	CopyFrom(ctx context.Context, box, path string) (io.ReadCloser, error)

	// ReadVolume returns a tar stream of a volume's contents, names
	// relative to its root. WriteVolume empties a volume, then extracts a
	// tar stream into it. Both may run a short-lived helper from image
	// (which needs sh and find) to reach a volume no box has.
	ReadVolume(ctx context.Context, v VolumeRef, image string) (io.ReadCloser, error)
	WriteVolume(ctx context.Context, v VolumeRef, image string, tar io.Reader) error
	// CleanVolume removes what a WriteVolume cut off by a crash left in
	// the volume (its staging folder); the contents stay.
	CleanVolume(ctx context.Context, v VolumeRef, image string) error
}

// desktopMark keeps the hash of a box without a desktop what it was before
// desktops existed.
func uidMark(uid string) string {
	if uid != "" {
		return "|uid=" + uid
	}
	return "" // boxes from before ids keep their hashes, and so their containers
}

// bindsMark is "" without binds: the hashes of boxes from before them
// stay.
func bindsMark(bs []Bind) string {
	var out []string
	for _, b := range bs {
		out = append(out, fmt.Sprintf("%s=%s:%v", b.Name, b.Path, b.ReadOnly))
	}
	sort.Strings(out)
	if len(out) == 0 {
		return ""
	}
	return "|binds=" + strings.Join(out, ",")
}

func desktopMark(d bool) string {
	if d {
		return "|desktop"
	}
	return ""
}
