package docker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/docker/confine"
)

var _ driver.Hostnamer = (*Driver)(nil)
var _ driver.ImageIDer = (*Driver)(nil)

// SetHostname gives a running box another hostname from the host, without
// running anything in the box (whose binaries and files the box controls):
// the kernel's hostname in the box's UTS namespace, and the two files the
// engine keeps for the container and mounts at /etc/hostname and
// /etc/hosts, where the old name is replaced by the new one. It needs the
// engine on this machine and paddockd as root, as the firewall does.
func (d *Driver) SetHostname(ctx context.Context, box, hostname string) error {
	ins, err := d.c.ContainerInspect(ctx, d.containerName(box), client.ContainerInspectOptions{})
	if err != nil {
		return wrap(err)
	}
	c := ins.Container
	if c.State == nil || !c.State.Running || c.State.Pid == 0 {
		return fmt.Errorf("box %s is not running", box)
	}
	old := ""
	if c.Config != nil {
		old = c.Config.Hostname
	}
	if err := setUTSHostname(c.State.Pid, hostname); err != nil {
		return fmt.Errorf("setting the hostname of box %s: %w", box, err)
	}
	if c.HostnamePath != "" {
		if err := os.WriteFile(c.HostnamePath, []byte(hostname+"\n"), 0o644); err != nil {
			return err
		}
	}
	if c.HostsPath != "" && old != "" && old != hostname {
		b, err := os.ReadFile(c.HostsPath)
		if err != nil {
			return err
		}
		re := regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(old) + `(\s|$)`)
		var out [][]byte
		for _, line := range bytes.SplitAfter(b, []byte("\n")) {
			out = append(out, re.ReplaceAll(line, []byte("${1}"+hostname+"${2}")))
		}
		if err := os.WriteFile(c.HostsPath, bytes.Join(out, nil), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// setUTSHostname sets the hostname in the UTS namespace of process pid,
// from a thread that then ends (onSpareThread).
func setUTSHostname(pid int, hostname string) error {
	var err error
	confine.OnSpareThread(func() {
		var f *os.File
		if f, err = os.Open(fmt.Sprintf("/proc/%d/ns/uts", pid)); err != nil {
			return
		}
		defer f.Close()
		if err = unix.Setns(int(f.Fd()), unix.CLONE_NEWUTS); err != nil {
			err = fmt.Errorf("joining its UTS namespace: %w", err)
			return
		}
		err = unix.Sethostname([]byte(hostname))
	})
	return err
}

// ImageID says which image ref names now ("" when the engine has none).
func (d *Driver) ImageID(ctx context.Context, ref string) (string, error) {
	res, err := d.c.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return res.ID, nil
}
