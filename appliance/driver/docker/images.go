package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/moby/moby/client"
)

// SaveImages streams images by reference (driver.ImageKeeper).
func (d *Driver) SaveImages(ctx context.Context, refs []string) (io.ReadCloser, error) {
	rc, err := d.c.ImageSave(ctx, refs)
	return rc, wrap(err)
}

// LoadImage loads an archive of one unnamed image and checks that id is
// there after (driver.ImageKeeper).
func (d *Driver) LoadImage(ctx context.Context, r io.Reader, id string) error {
	if err := d.load(ctx, r, "the image"); err != nil {
		return err
	}
	if _, err := d.c.ImageInspect(ctx, id); err != nil {
		return fmt.Errorf("image %s is not there after its load: %w", id, wrap(err))
	}
	return nil
}

// load loads an image archive, reading the engine's answer to its end: an
// error in it (a broken archive) is the load's.
func (d *Driver) load(ctx context.Context, r io.Reader, what string) error {
	res, err := d.c.ImageLoad(ctx, r, client.ImageLoadWithQuiet(true))
	if err != nil {
		return wrap(err)
	}
	defer res.Close()
	dec := json.NewDecoder(res)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("loading %s: %w", what, err)
		}
		if m.Error != "" {
			return fmt.Errorf("loading %s: %s", what, m.Error)
		}
	}
}

// TagImage names the image id ref (driver.ImageKeeper).
func (d *Driver) TagImage(ctx context.Context, id, ref string) error {
	_, err := d.c.ImageTag(ctx, client.ImageTagOptions{Source: id, Target: ref})
	return wrap(err)
}

// RemoveImage removes a name or an image (driver.ImageKeeper). An image
// a container was made from stays (without the name) until that container
// goes.
func (d *Driver) RemoveImage(ctx context.Context, ref string) error {
	// A name is taken off even when a container uses its image (force);
	// an image by id is not removed while one does.
	byName := !strings.HasPrefix(ref, "sha256:")
	_, err := d.c.ImageRemove(ctx, ref, client.ImageRemoveOptions{PruneChildren: true, Force: byName})
	return wrap(err)
}
