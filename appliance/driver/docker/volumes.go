package docker

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/paddock-dev/paddock/appliance/archive"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/docker/confine"
)

// Drive backups and restores work on the volume's folder where the engine
// keeps it on this machine (localFolder, inVolume). For any other volume
// the engine reaches its files only through a container that mounts it,
// so they go through a helper: a container of its own kind, on no
// network, that mounts the volume at helperMount and runs nothing but the
// swap of a restore. Helpers live for one operation; New removes any that
// a crash left.
const helperMount = "/volume"

// helper makes a helper container for v; cmd, when given, is what it runs
// once started.
func (d *Driver) helper(ctx context.Context, v driver.VolumeRef, image string, cmd []string) (string, error) {
	var rnd [4]byte
	rand.Read(rnd[:])
	res, err := d.c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: d.cfg.Instance + "-helper-" + hex.EncodeToString(rnd[:]),
		Config: &container.Config{
			Image:      image,
			Cmd:        cmd,
			User:       "0",
			Labels:     d.labels("helper", "volume/"+v.String()),
			Entrypoint: []string{},
		},
		HostConfig: &container.HostConfig{
			Runtime:     d.cfg.Runtime,
			NetworkMode: "none",
			Mounts:      []mount.Mount{{Type: mount.TypeVolume, Source: d.volumeName(v), Target: helperMount}},
		},
	})
	if err != nil {
		return "", wrap(err)
	}
	return res.ID, nil
}

func (d *Driver) removeHelper(id string) {
	d.c.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
}

// removeHelpers removes the helpers an interrupted operation left behind.
func (d *Driver) removeHelpers(ctx context.Context) error {
	res, err := d.c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: d.filter("helper")})
	if err != nil {
		return err
	}
	for _, c := range res.Items {
		d.removeHelper(c.ID)
	}
	return nil
}

// ReadVolume streams a volume's contents as a tar, names relative to the
// volume's root.
func (d *Driver) ReadVolume(ctx context.Context, v driver.VolumeRef, image string) (io.ReadCloser, error) {
	dir, err := d.localFolder(ctx, v)
	if err != nil {
		return nil, err
	}
	// Read here where the engine keeps the volume as a folder on this
	// machine (inVolume), else through a helper.
	if dir != "" {
		pr, pw := io.Pipe()
		go confine.OnSpareThread(func() {
			pw.CloseWithError(confine.InVolume(dir, confine.VolumeCaps, func() error { return archive.PackContents(pw, "/") }))
		})
		return pr, nil
	}
	id, err := d.helper(ctx, v, image, nil)
	if err != nil {
		return nil, err
	}
	res, err := d.c.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: helperMount})
	if err != nil {
		d.removeHelper(id)
		return nil, wrap(err)
	}
	pr, pw := io.Pipe()
	go func() {
		err := stripFirst(pw, res.Content)
		res.Content.Close()
		d.removeHelper(id)
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// stripFirst copies a tar stream whose names all start with one directory
// (the engine names a copied directory first), without that directory.
func stripFirst(w io.Writer, r io.Reader) error {
	return rewriteTar(tar.NewWriter(w), r, func(name string) (string, bool) {
		_, rest, ok := strings.Cut(strings.TrimSuffix(name, "/"), "/")
		if ok && strings.HasSuffix(name, "/") {
			rest += "/"
		}
		return rest, ok // not ok: the root itself
	})
}

// rewriteTar copies a tar stream into tw, renaming each entry (and a hard
// link's target) with rename, and leaving out those it refuses.
func rewriteTar(tw *tar.Writer, r io.Reader, rename func(string) (string, bool)) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return tw.Close()
		}
		if err != nil {
			return err
		}
		name, ok := rename(h.Name)
		if !ok {
			continue
		}
		h.Name = name
		if h.Typeflag == tar.TypeLink {
			h.Linkname, _ = rename(h.Linkname)
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
}

// WriteVolume replaces a volume's contents with what the tar stream holds.
// The caller has checked the archive. It is extracted into a staging
// directory in the volume first; only once all of it is there are the old
// contents removed and the new ones moved up, so a failed copy leaves the
// old data as it was.
//
// Where the engine keeps the volume as a folder on this machine
// (localFolder), paddockd does all of it there (restoreInPlace); else a
// helper takes the archive (the engine's copy) and does the swap.
func (d *Driver) WriteVolume(ctx context.Context, v driver.VolumeRef, image string, tar io.Reader) error {
	dir, err := d.localFolder(ctx, v)
	if err != nil {
		return err
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	stage := ".paddock-restore-" + hex.EncodeToString(rnd[:])
	if dir != "" {
		return restoreInPlace(dir, stage, v, tar)
	}
	swap := `set -e
cd ` + helperMount + `
find . -mindepth 1 -maxdepth 1 ! -name "$1" -exec rm -rf -- {} +
find "$1" -mindepth 1 -maxdepth 1 -exec mv -t . -- {} +
rmdir "$1"`
	id, err := d.helper(ctx, v, image, []string{"sh", "-c", swap, "swap", stage})
	if err != nil {
		return err
	}
	defer d.removeHelper(id)

	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(prefix(pw, tar, stage)) }()
	_, err = d.c.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: helperMount, Content: pr})
	pr.Close()
	if err != nil {
		d.runHelper(context.WithoutCancel(ctx), v, image, []string{"rm", "-rf", "--", helperMount + "/" + stage})
		return fmt.Errorf("writing volume %s (its contents are unchanged): %w", v, wrap(err))
	}
	if err := d.start(ctx, id); err != nil {
		return fmt.Errorf("swapping in the new contents of volume %s: %w", v, err)
	}
	return nil
}

// restoreInPlace is WriteVolume on the volume's folder dir on this
// machine, by a thread whose / is the folder (inVolume): whatever the box
// left in the volume (symlinks out, say) resolves inside it. The archive
// is unpacked into the staging folder with its owners and modes, as the
// engine's copy would write them (archive.UnpackOwned: numbers as they
// are, no set-uid or set-gid bits), then swapped in (swapStage: lists,
// renames and removals, never a link followed).
func restoreInPlace(dir, stage string, v driver.VolumeRef, tar io.Reader) error {
	var err error
	confine.OnSpareThread(func() {
		err = confine.InVolume(dir, confine.RestoreCaps, func() error {
			if err := archive.UnpackOwned(tar, "/"+stage, archive.Checker{}); err != nil {
				os.RemoveAll("/" + stage)
				return fmt.Errorf("writing volume %s (its contents are unchanged): %w", v, err)
			}
			if err := confine.SwapStage(stage); err != nil {
				return fmt.Errorf("swapping in the new contents of volume %s: %w", v, err)
			}
			return nil
		})
	})
	return err
}

// localFolder is the folder on this machine that holds v's files, for a
// volume of the engine's local driver with no options ("" for any other,
// or when the engine does not say); ErrNotFound when there is no volume.
func (d *Driver) localFolder(ctx context.Context, v driver.VolumeRef) (string, error) {
	res, err := d.c.VolumeInspect(ctx, d.volumeName(v), client.VolumeInspectOptions{})
	if err != nil {
		return "", wrap(err)
	}
	vol := res.Volume
	if vol.Driver != "local" || len(vol.Options) > 0 || !filepath.IsAbs(vol.Mountpoint) {
		return "", nil
	}
	return vol.Mountpoint, nil
}

// CleanVolume removes staging folders of WriteVolume calls that a crash
// cut off.
func (d *Driver) CleanVolume(ctx context.Context, v driver.VolumeRef, image string) error {
	dir, err := d.localFolder(ctx, v)
	if err != nil {
		return err
	}
	if dir != "" {
		confine.OnSpareThread(func() {
			err = confine.InVolume(dir, confine.VolumeCaps, func() error {
				left, err := filepath.Glob("/.paddock-restore-*")
				for _, p := range left {
					if err == nil {
						err = os.RemoveAll(p)
					}
				}
				return err
			})
		})
		return err
	}
	return d.runHelper(ctx, v, image, []string{"sh", "-c", `rm -rf -- "$1"/.paddock-restore-*`, "clean", helperMount})
}

// runHelper runs cmd in a new helper for v and removes it.
func (d *Driver) runHelper(ctx context.Context, v driver.VolumeRef, image string, cmd []string) error {
	id, err := d.helper(ctx, v, image, cmd)
	if err != nil {
		return err
	}
	defer d.removeHelper(id)
	return d.start(ctx, id)
}

// start starts a helper and waits for it to exit with code 0.
func (d *Driver) start(ctx context.Context, id string) error {
	wait := d.c.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := d.c.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return wrap(err)
	}
	select {
	case r := <-wait.Result:
		if r.StatusCode != 0 {
			return fmt.Errorf("the helper exited with code %d", r.StatusCode)
		}
		return nil
	case err := <-wait.Error:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// prefix copies a tar stream with every name (and hard link target) put
// under dir, which comes first as a directory entry of its own.
func prefix(w io.Writer, r io.Reader, dir string) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
		return err
	}
	return rewriteTar(tw, r, func(name string) (string, bool) {
		name = strings.TrimPrefix(name, "./")
		if name == "" || name == "/" {
			return "", false // the root: the staging directory stands for it
		}
		return dir + "/" + name, true
	})
}
