package drives

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Create declares a drive and makes its volume.
func (dv *Drives) Create(ctx context.Context, p api.DrivePost) (api.Drive, error) {
	if err := api.ValidName("drive", p.Name); err != nil {
		return api.Drive{}, err
	}
	err := dv.store.Declare(func(tx *store.Tx) error {
		if err := dv.core.CheckLimit(tx, caller.OwnerID(ctx), "drives"); err != nil {
			return err
		}
		where, err := dv.core.DriveNode(tx)
		if err != nil {
			return err
		}
		err = tx.CreateDrive(store.Drive{Name: p.Name, State: "ready", Created: dv.core.Time(), Owner: caller.OwnerID(ctx), Node: where})
		if errors.Is(err, store.ErrConflict) {
			d, _ := tx.GetDrive(p.Name)
			if d.State == "deleting" {
				return api.Conflict("drive %q is being removed; try again in a moment", p.Name)
			}
			return api.Conflict("a drive named %q already exists", p.Name)
		}
		return err
	})
	if err != nil {
		return api.Drive{}, err
	}
	rerr := dv.core.ReconcileFor(ctx, "volume.drive."+p.Name)
	d, err := dv.core.GetDrive(ctx, p.Name)
	if err != nil {
		return d, err
	}
	return d, rerr
}

// Remove removes a drive and its data. A drive that a box mounts is
// refused, naming the boxes.
func (dv *Drives) Remove(ctx context.Context, name string) error {
	err := dv.store.Declare(func(tx *store.Tx) error {
		d, err := tx.GetDrive(name)
		if errors.Is(err, store.ErrNotFound) || (err == nil && (d.State == "deleting" || !caller.Visible(ctx, d.Owner))) {
			return api.NotFound("drive", name)
		} else if err != nil {
			return err
		}
		boxes, err := tx.ListBoxes()
		if err != nil {
			return err
		}
		if users := store.UsedBy(boxes, name); len(users) > 0 {
			return api.Conflict("drive %q is mounted by %s: remove those boxes first", name, strings.Join(users, ", "))
		}
		return tx.SetDriveState(name, "deleting")
	})
	if err != nil {
		return err
	}
	return dv.core.ReconcileFor(ctx, "volume.drive."+name, "drive."+name)
}

// Backup streams a tar of a drive's contents, names relative to the
// drive's root. Boxes may go on using the drive meanwhile; for a copy of
// one moment, stop them first.
func (dv *Drives) Backup(ctx context.Context, name string) (io.ReadCloser, error) {
	if _, err := dv.ready(ctx, name); err != nil {
		return nil, err
	}
	rc, err := dv.driver.ReadVolume(ctx, driver.VolumeRef{Kind: driver.KindDrive, Name: name}, dv.cfg.Image)
	if errors.Is(err, driver.ErrNotFound) {
		return nil, api.Conflict("drive %q has no volume yet; try again in a moment", name)
	}
	return rc, err
}

// Restore replaces a drive's contents with an archive's. It is refused
// while a box that mounts the drive runs. The archive is checked whole
// before anything is written (as for push), its files are given to the box
// user, and a failure on the way leaves the old contents.
func (dv *Drives) Restore(ctx context.Context, name string, body io.Reader) error {
	d, err := dv.ready(ctx, name)
	if err != nil {
		return err
	}
	// The drive is marked before the check: a box started after the mark
	// is not started by the reconciler until the restore ends (its status
	// says so), and one started before it is seen by the check. Either
	// way no box mounts the drive while its contents are swapped.
	done, err := dv.core.MarkRestoring(name)
	if err != nil {
		return err
	}
	defer done()
	boxes, err := dv.store.ListBoxes()
	if err != nil {
		return err
	}
	var running []string
	for _, b := range boxes {
		if (b.Desired == "running" || b.Observed == "running") && slices.Contains(d.UsedBy, b.Name) {
			running = append(running, b.Name)
		}
	}
	if len(running) > 0 {
		return api.Conflict("drive %q is mounted by running box(es) %s: stop them first", name, strings.Join(running, ", "))
	}
	left := store.Leftover{Kind: "volume", Target: name, Path: "restore-" + auth.RandomHex(6)}
	if err := dv.core.AddLeftover(left); err != nil {
		return err
	}
	defer dv.core.DoneLeftover(left)
	err = dv.core.Checked(body, "", func(tar io.Reader) error {
		return dv.driver.WriteVolume(ctx, driver.VolumeRef{Kind: driver.KindDrive, Name: name}, dv.cfg.Image, tar)
	})

	if errors.Is(err, driver.ErrNotFound) {
		return api.Conflict("drive %q has no volume yet; try again in a moment", name)
	}
	return err
}

func (dv *Drives) ready(ctx context.Context, name string) (api.Drive, error) {
	d, err := dv.core.GetDrive(ctx, name)
	if err != nil {
		return d, err
	}
	if d.State != "ready" {
		return d, api.Conflict("drive %q is %s", name, d.State)
	}
	return d, nil
}
