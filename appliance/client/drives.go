package client

import (
	"context"
	"github.com/paddock-dev/paddock/appliance/api"
	"io"
)

// Drives lists drives.
func (c *Client) Drives(ctx context.Context) ([]api.Drive, error) {
	var d []api.Drive
	return d, c.do(ctx, "GET", "/drives", nil, &d)
}

// CreateDrive makes a drive.
func (c *Client) CreateDrive(ctx context.Context, name string) (api.Drive, error) {
	var d api.Drive
	return d, c.do(ctx, "POST", "/drives", api.DrivePost{Name: name}, &d)
}

// RemoveDrive removes a drive and its data.
func (c *Client) RemoveDrive(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/drives/"+esc(name), nil, nil)
}

// BackupDrive returns a tar stream of a drive's contents.
func (c *Client) BackupDrive(ctx context.Context, name string) (io.ReadCloser, error) {
	return c.getTar(ctx, "/drives/"+esc(name)+"/archive")
}

// RestoreDrive replaces a drive's contents with a tar stream's.
func (c *Client) RestoreDrive(ctx context.Context, name string, tar io.Reader) error {
	return c.putTar(ctx, "/drives/"+esc(name)+"/archive", tar)
}
