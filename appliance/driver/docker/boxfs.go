package docker

import (
	"context"
	"errors"
	"fmt"

	"github.com/moby/moby/client"
	"github.com/paddock-dev/paddock/appliance/driver/docker/confine"
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
	confine.OnSpareThread(func() {
		err2 = confine.JoinBox(box, pid, uid, func() (int, error) { return d.runningPid(ctx, box) }, fn)
	})
	return err2
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
