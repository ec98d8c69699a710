package cluster

import (
	"context"
	"io"

	"github.com/paddock-dev/paddock/appliance/driver"
)

var _ driver.ImageKeeper = (*Driver)(nil)

// keeper is the control plane's own engine: users' images are built and
// kept there (boxes made from them go there too).
func (c *Driver) keeper(op string) (driver.ImageKeeper, error) {
	d, ok := c.Node("")
	if !ok {
		return nil, errNo(op)
	}
	k, ok := d.(driver.ImageKeeper)
	if !ok {
		return nil, errNo(op)
	}
	return k, nil
}

// SaveImages is the control plane's (driver.ImageKeeper).
func (c *Driver) SaveImages(ctx context.Context, refs []string) (io.ReadCloser, error) {
	k, err := c.keeper("SaveImages")
	if err != nil {
		return nil, err
	}
	return k.SaveImages(ctx, refs)
}

// LoadImage is the control plane's (driver.ImageKeeper).
func (c *Driver) LoadImage(ctx context.Context, r io.Reader, id string) error {
	k, err := c.keeper("LoadImage")
	if err != nil {
		return err
	}
	return k.LoadImage(ctx, r, id)
}

// TagImage is the control plane's (driver.ImageKeeper).
func (c *Driver) TagImage(ctx context.Context, id, ref string) error {
	k, err := c.keeper("TagImage")
	if err != nil {
		return err
	}
	return k.TagImage(ctx, id, ref)
}

// RemoveImage is the control plane's (driver.ImageKeeper).
func (c *Driver) RemoveImage(ctx context.Context, ref string) error {
	k, err := c.keeper("RemoveImage")
	if err != nil {
		return err
	}
	return k.RemoveImage(ctx, ref)
}
