package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// On the real engine: a member who writes past limits.drive_gib through a
// drive (0.05 GiB here) has the box that mounts it stopped, with a note
// that names the bound; the drive keeps what was written; the owner's box
// writing as much to the owner's drive runs on (owners have no limits).
func TestDrivesCountAgainstAMembersBound(t *testing.T) {
	d := newDaemon(t, t.TempDir())
	d.Config = harness.TestConfig + "[limits]\ndrive_gib = 0.05\n"
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Cleanup)
	ctx := context.Background()
	mc, err := client.New("http://"+d.Listen, memberToken(t, d, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	oc := d.Client()
	for _, c := range []struct {
		c          *client.Client
		drive, box string
	}{{mc, "fill", "filler-box"}, {oc, "ownerfill", "owner-box"}} {
		if _, err := c.c.CreateDrive(ctx, c.drive); err != nil {
			t.Fatal(err)
		}
		if _, err := c.c.CreateBox(ctx, api.BoxPost{Name: c.box, Mounts: []api.Mount{{Drive: c.drive, Path: "/mnt/" + c.drive}}}); err != nil {
			t.Fatal(err)
		}
		if code, err := c.c.Exec(ctx, c.box, api.ExecPost{Cmd: []string{"sh", "-c", "head -c 70000000 /dev/urandom > /mnt/" + c.drive + "/blob"}}, clientIO()); err != nil || code != 0 {
			t.Fatalf("writing to drive %s: %d %v", c.drive, code, err)
		}
	}
	var note string
	waitFor(t, 60*time.Second, "the member's box to be stopped for its drives", func() bool {
		b, err := mc.Box(ctx, "filler-box")
		note = b.Note
		return err == nil && b.Status == "stopped" && strings.Contains(b.Note, "past limits.drive_gib = 0.05")
	})
	t.Logf("note: %s", note)
	if b, err := oc.Box(ctx, "owner-box"); err != nil || b.Status != "running" {
		t.Fatalf("the owner's box: %+v %v", b, err)
	}
	// What was written stays on the drive.
	if _, err := mc.StartBox(ctx, "filler-box"); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if code, err := mc.Exec(ctx, "filler-box", api.ExecPost{Cmd: []string{"stat", "-c", "%s", "/mnt/fill/blob"}}, client.ExecIO{Stdout: &out}); err != nil || code != 0 || strings.TrimSpace(out.String()) != "70000000" {
		t.Fatalf("the drive's file after the stop: %q %d %v", out.String(), code, err)
	}
}
