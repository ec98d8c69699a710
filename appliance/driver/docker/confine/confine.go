// Package confine runs paddockd's own code, as root on this machine,
// inside the view of a box or of a volume, so that whatever the box left
// there resolves as in the box and grants nothing more: a thread that
// joins a box's mount namespace as its user with no capabilities
// (JoinBox: a box's files pushed, pulled, listed), or chroots into a
// volume's folder with only the capabilities a copy needs (InVolume: a
// drive's backup and restore). Each runs on a spare thread that ends
// with it (OnSpareThread): credentials and namespaces are per thread on
// Linux, and never go back to the Go runtime.
package confine

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// OnSpareThread runs fn on a goroutine locked to a thread that is not the
// process's first, and never unlocked: a thread whose namespaces or ids fn
// changes ends with the goroutine. The first thread cannot end (the
// runtime parks it instead), and /proc/self is that thread's view: left
// in a box's namespace, it would show the box's mounts to the whole
// process.
func OnSpareThread(fn func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// Held while fn runs, so that fn cannot be given this thread.
			OnSpareThread(fn)
			runtime.UnlockOSThread()
			close(done)
			return
		}
		defer close(done)
		fn()
	}()
	<-done
}

// JoinBox runs fn on this (locked, spare) thread joined to the mount
// namespace of process pid (box's first process: a private copy of it,
// every mount nodev) as user uid of the box's user namespace, with no
// capabilities left, its root and working folder the box's root, and a
// umask of 0. still says whether pid is still the box's first process,
// asked once its namespace is open (a pid reused by another process
// after the box stopped would show as a stop or a new pid there). uid 0,
// or a uid that is root on this machine, is refused.
func JoinBox(box string, pid, uid int, still func() (int, error), fn func() error) error {
	if uid <= 0 {
		return errors.New("files are worked on as the box's user, not as its root")
	}
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	if err != nil {
		return fmt.Errorf("box %s: %w", box, err)
	}
	defer ns.Close()
	hostUID, err := MapID(fmt.Sprintf("/proc/%d/uid_map", pid), uid)
	if err != nil {
		return fmt.Errorf("box %s: %w", box, err)
	}
	hostGID, err := MapID(fmt.Sprintf("/proc/%d/gid_map", pid), uid)
	if err != nil {
		return fmt.Errorf("box %s: %w", box, err)
	}
	// The namespace is open: if the box's first process is still pid,
	// it is the box's (a pid reused by another process after the box
	// stopped would show as a stop or a new pid here).
	if again, err := still(); err != nil || again != pid {
		return fmt.Errorf("box %s stopped or restarted while its files were opened", box)
	}
	var own, its unix.Stat_t
	if unix.Stat("/proc/thread-self/ns/mnt", &own) != nil || unix.Fstat(int(ns.Fd()), &its) != nil || own.Ino == its.Ino {
		return fmt.Errorf("box %s: its mount namespace is not its own", box)
	}
	if hostUID == 0 || hostGID == 0 {
		return fmt.Errorf("box %s: its user %d is root on this machine", box, uid)
	}
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("box %s: %w", box, err)
	}
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("box %s: joining its mount namespace: %w", box, err)
	}
	// Then a private copy of the box's mounts, every one of them nodev:
	// the box's root may make device nodes, which the box's device rules
	// keep it from opening; this thread is not under those rules, and
	// must not open one either (say, a node swapped in for a file it was
	// about to read). The box's own mounts are not changed.
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("box %s: a private view of its mounts: %w", box, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NODEV, Propagation: unix.MS_PRIVATE}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("box %s: marking its mounts nodev: %w", box, err)
	}
	unix.Umask(0)
	// Raw calls: the syscall package's Setuid and friends change every
	// thread of the process; these change this one only.
	for _, c := range []struct {
		nr      uintptr
		a, b, d uintptr
	}{
		{unix.SYS_SETGROUPS, 0, 0, 0},
		{unix.SYS_SETRESGID, uintptr(hostGID), uintptr(hostGID), uintptr(hostGID)},
		{unix.SYS_SETRESUID, uintptr(hostUID), uintptr(hostUID), uintptr(hostUID)},
	} {
		if _, _, e := syscall.RawSyscall(c.nr, c.a, c.b, c.d); e != 0 {
			return fmt.Errorf("box %s: becoming its user: %w", box, e)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		return err
	}
	for _, c := range caps {
		if c.Effective != 0 || c.Permitted != 0 {
			return fmt.Errorf("box %s: capabilities left after becoming its user", box)
		}
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	return fn()
}

// MapID is the host id of id under a /proc/PID/{uid,gid}_map.
func MapID(file string, id int) (int, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var n [3]int64
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			continue
		}
		for i, s := range fields {
			if n[i], err = strconv.ParseInt(s, 10, 64); err != nil {
				return 0, fmt.Errorf("%s: %q", file, sc.Text())
			}
		}
		if int64(id) >= n[0] && int64(id) < n[0]+n[2] {
			return int(n[1] + int64(id) - n[0]), nil
		}
	}
	return 0, fmt.Errorf("%s maps no id %d", file, id)
}

// The capabilities a thread in a volume keeps (InVolume): to read and
// remove what any user of the box made, and, for a restore, to give the
// files their owners.
const (
	VolumeCaps  = 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH | 1<<unix.CAP_FOWNER
	RestoreCaps = VolumeCaps | 1<<unix.CAP_CHOWN
)

// InVolume runs fn on this (locked, spare) thread with / the folder dir
// (a volume's): a private copy of this machine's mounts in which dir is
// bound onto itself nodev and nosuid, then chroot to it, and then only
// the capabilities keep (VolumeCaps or RestoreCaps) left: no chroot
// again, no mount, no device node. Whatever the box left in the volume
// resolves inside it, and a device node in it does not open.
func InVolume(dir string, keep uint32, fn func() error) error {
	if err := unix.Unshare(unix.CLONE_FS | unix.CLONE_NEWNS); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("a private view of the mounts: %w", err)
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("binding the volume's folder: %w", err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOSUID}
	if err := unix.MountSetattr(unix.AT_FDCWD, dir, 0, &attr); err != nil {
		return fmt.Errorf("marking the volume's folder nodev: %w", err)
	}
	if err := unix.Chroot(dir); err != nil {
		return err
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	caps := [2]unix.CapUserData{{Effective: keep, Permitted: keep}}
	if err := unix.Capset(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("dropping capabilities: %w", err)
	}
	return fn()
}

// SwapStage replaces what / holds with what /stage holds, and removes
// /stage (the helper's script, in Go).
func SwapStage(stage string) error {
	// The staging folder is read first: were this not the volume, it
	// would not be there, and nothing is removed.
	staged, err := os.ReadDir("/" + stage)
	if err != nil {
		return err
	}
	old, err := os.ReadDir("/")
	if err != nil {
		return err
	}
	for _, e := range old {
		if e.Name() != stage {
			if err := os.RemoveAll("/" + e.Name()); err != nil {
				return err
			}
		}
	}
	for _, e := range staged {
		if err := os.Rename("/"+stage+"/"+e.Name(), "/"+e.Name()); err != nil {
			return err
		}
	}
	return os.Remove("/" + stage)
}
