package jobs

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

// withCore is the jobs over the real core and store, on a fake engine
// that has the image img.
func withCore(t *testing.T) (*Jobs, *service.Service, *fake.Driver) {
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg, err := config.Load(nil, []string{"PADDOCK_CONFIG=" + os.DevNull, "PADDOCK_STATE_DIR=" + dir, "PADDOCK_IMAGE=img"})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	drv := fake.New("img")
	rec := &reconcile.Reconciler{Store: st, Driver: drv, Types: service.Types(cfg), Log: log}
	s := &service.Service{Store: st, Rec: rec, Driver: drv, Cfg: cfg, Log: log, Life: context.Background()}
	return New(s, st, drv, &s.Cfg, log, s.Life), s, drv
}
