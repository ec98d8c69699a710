package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"
)

// AsBoxUser runs fn on a thread that joined the box's mount namespace (a
// private copy of it, every mount nodev) and then became the box's user: its host uid and gid under the box's user
// namespace (the same numbers where the box has none), no supplementary
// groups, and so, by the kernel's rules for a change away from uid 0, no
// capabilities. Its root and working folder are the box's root, so every
// path, symlink and mount resolves as in the box; and its rights are the
// box user's, so a box that swaps a folder for a symlink, or mounts a
// procfs of its own, gains nothing it did not have. Credentials and
// namespaces are the thread's own (Linux keeps them per thread; the Go
// runtime starts its other threads from a clean one), and the thread is
// never given back: the goroutine ends locked to it and the thread ends
// with it. The thread's umask is 0, so modes are as fn asks.
//
// It needs paddockd as root and the engine on this machine, as
// SetHostname does. uid 0 is refused: fn never holds the box's root.
func (d *Driver) AsBoxUser(ctx context.Context, box string, uid int, fn func() error) error {
	if uid <= 0 {
		return errors.New("files are worked on as the box's user, not as its root")
	}
	pid, err := d.runningPid(ctx, box)
	if err != nil {
		return err
	}
	var err2 error
	onSpareThread(func() { err2 = d.joinBox(ctx, box, pid, uid, fn) })
	return err2
}

// onSpareThread runs fn on a goroutine locked to a thread that is not the
// process's first, and never unlocked: a thread whose namespaces or ids fn
// changes ends with the goroutine. The first thread cannot end (the
// runtime parks it instead), and /proc/self is that thread's view: left
// in a box's namespace, it would show the box's mounts to the whole
// process.
func onSpareThread(fn func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// Held while fn runs, so that fn cannot be given this thread.
			onSpareThread(fn)
			runtime.UnlockOSThread()
			close(done)
			return
		}
		defer close(done)
		fn()
	}()
	<-done
}

func (d *Driver) runningPid(ctx context.Context, box string) (int, error) {
	ins, err := d.c.ContainerInspect(ctx, d.containerName(box), client.ContainerInspectOptions{})
	if err != nil {
		return 0, wrap(err)
	}
	st := ins.Container.State
	if st == nil || !st.Running || st.Pid == 0 {
		return 0, fmt.Errorf("box %s is not running", box)
	}
	return st.Pid, nil
}

// joinBox is AsBoxUser on its locked thread.
func (d *Driver) joinBox(ctx context.Context, box string, pid, uid int, fn func() error) error {
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	if err != nil {
		return fmt.Errorf("box %s: %w", box, err)
	}
	defer ns.Close()
	hostUID, err := mapID(fmt.Sprintf("/proc/%d/uid_map", pid), uid)
	if err != nil {
		return fmt.Errorf("box %s: %w", box, err)
	}
	hostGID, err := mapID(fmt.Sprintf("/proc/%d/gid_map", pid), uid)
	if err != nil {
		return fmt.Errorf("box %s: %w", box, err)
	}
	// The namespace is open: if the box's first process is still pid,
	// it is the box's (a pid reused by another process after the box
	// stopped would show as a stop or a new pid here).
	if again, err := d.runningPid(ctx, box); err != nil || again != pid {
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

// mapID is the host id of id under a /proc/PID/{uid,gid}_map.
func mapID(file string, id int) (int, error) {
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
