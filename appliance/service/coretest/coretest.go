// Package coretest makes paddockd's core for the tests of what stands on
// it (the capabilities, the server): a real store in the test's temporary
// folder, the configuration's defaults, a reconciler, on a fake engine.
// The core's own tests (package service) have theirs, which this package,
// importing the core, cannot be.
package coretest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
	"github.com/paddock-dev/paddock/appliance/reconcile"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/appliance/store"
)

// New is a core over a real store in t's temporary folder (its state
// folder too) and a fake engine that has images: the first is the
// configuration's default image, the others its further images.
func New(t testing.TB, images ...string) (*service.Service, *fake.Driver) {
	t.Helper()
	if len(images) == 0 {
		images = []string{"img"}
	}
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg, err := config.Load(nil, []string{"PADDOCK_CONFIG=" + os.DevNull, "PADDOCK_STATE_DIR=" + dir, "PADDOCK_IMAGE=" + images[0]})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Images = images[1:]
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	drv := fake.New(images...)
	rec := &reconcile.Reconciler{Store: st, Driver: drv, Types: service.Types(cfg), Log: log}
	return &service.Service{Store: st, Rec: rec, Driver: drv, Cfg: cfg, Log: log, Life: context.Background()}, drv
}
