package drives_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/drives"
	"github.com/paddock-dev/paddock/appliance/service/coretest"
)

// No box mounts a drive while a restore swaps its contents: a box started
// (or made) during the restore waits, saying why, and runs once the
// restore ends; a box that runs makes the restore refuse; two restores of
// one drive do not overlap.
func TestRestoreHoldsTheBoxesOfItsDrive(t *testing.T) {
	s, drv := coretest.New(t)
	s.Rec.Restoring = s.DriveRestoring
	dv := drives.New(s, s.Store, s.Driver, &s.Cfg, s.Log)
	ctx := context.Background()
	mounts := []api.Mount{{Drive: "dr", Path: "/mnt/data"}}
	if _, err := dv.Create(ctx, api.DrivePost{Name: "dr"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "user", Mounts: mounts}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StopBox(ctx, "user", "stop"); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	tw.WriteHeader(&tar.Header{Name: "f", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	tw.Write([]byte("hi"))
	tw.Close()

	entered, release := make(chan struct{}), make(chan struct{})
	drv.WriteVolumeFunc = func(v driver.VolumeRef, r io.Reader) error {
		close(entered)
		<-release
		_, err := io.Copy(io.Discard, r)
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- dv.Restore(ctx, "dr", bytes.NewReader(archive.Bytes())) }()
	<-entered

	running := func(name string) bool {
		boxes, _ := drv.Boxes(ctx)
		for _, b := range boxes {
			if b.Name == name {
				return b.Running
			}
		}
		return false
	}
	b, err := s.StartBox(ctx, "user")
	if err != nil {
		t.Fatal(err)
	}
	if running("user") || b.Status == "running" || !strings.Contains(b.Error, `waits for drive "dr", which is being restored`) {
		t.Fatalf("box started during the restore: running %v, %s %q", running("user"), b.Status, b.Error)
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "late", Mounts: mounts}); err != nil {
		t.Fatal(err)
	}
	if running("late") {
		t.Fatal("a box made during the restore runs with the drive mounted")
	}
	if err := dv.Restore(ctx, "dr", bytes.NewReader(archive.Bytes())); !isConflict(err) || !strings.Contains(err.Error(), "being restored already") {
		t.Fatalf("a second restore during the first: %v", err)
	}

	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rec.Run(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"user", "late"} {
		b, err := s.GetBox(name)
		if err != nil {
			t.Fatal(err)
		}
		if !running(name) || b.Status != "running" || b.Error != "" {
			t.Errorf("box %s after the restore: running %v, %s %q", name, running(name), b.Status, b.Error)
		}
	}
	drv.WriteVolumeFunc = func(driver.VolumeRef, io.Reader) error {
		t.Error("a drive was written under a running box")
		return nil
	}
	if err := dv.Restore(ctx, "dr", bytes.NewReader(archive.Bytes())); !isConflict(err) || !strings.Contains(err.Error(), "mounted by running box(es) late, user") {
		t.Fatalf("a restore under running boxes: %v", err)
	}
}

func isConflict(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == api.CodeConflict
}
