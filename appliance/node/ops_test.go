package node_test

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
)

// every is a driver with every optional ability, each answering a value
// of its own and saying it was asked (by the op's name).
type every struct {
	*fake.Driver
	mu    sync.Mutex
	asked []string
}

func (e *every) ask(op string) { e.mu.Lock(); e.asked = append(e.asked, op); e.mu.Unlock() }

func (e *every) StatPath(context.Context, string, string) (bool, error) {
	e.ask("stat-path")
	return true, nil
}
func (e *every) DiskUsage(context.Context, string) (int64, error) {
	e.ask("disk-usage")
	return 41, nil
}
func (e *every) VolumeUsage(context.Context, driver.VolumeRef) (int64, error) {
	e.ask("volume-usage")
	return 42, nil
}
func (e *every) BoxUsage(context.Context, string) (driver.Usage, error) {
	e.ask("box-usage")
	return driver.Usage{Processes: 43}, nil
}
func (e *every) Foreground(context.Context, string) error { e.ask("foreground"); return nil }
func (e *every) SetHostname(_ context.Context, box, name string) error {
	e.ask("set-hostname")
	if box != "web" || name != "renamed" {
		return driver.ErrNotFound
	}
	return nil
}
func (e *every) WarmExec(context.Context, string) (bool, error) { e.ask("warm-exec"); return true, nil }
func (e *every) DropWarm(string)                                { e.ask("drop-warm") }
func (e *every) ImageID(context.Context, string) (string, error) {
	e.ask("image-id")
	return "sha256:44", nil
}
func (e *every) SnapshotSize(context.Context, string) (int64, error) {
	e.ask("snapshot-size")
	return 45, nil
}

// Every op of the driver seam (driver.OpNames) reaches the driver of the
// node it is sent to, with its question, and comes back with its answer:
// nothing per op is written in the agent or the control plane's driver
// of a node, so one op missing here is one the table has and this test
// does not ask (it fails until it does).
func TestEveryOpReachesTheNode(t *testing.T) {
	e := &every{Driver: fake.New("base:1")}
	r, _ := serve(t, e, "n1")
	ctx := context.Background()
	check := func(what string, got, want any, err error) {
		t.Helper()
		if err != nil || got != want {
			t.Errorf("%s through the agent: %v, %v (want %v)", what, got, err, want)
		}
	}
	dir, err := driver.StatPath.Do(ctx, r, driver.BoxPath{Box: "web", Path: "/"})
	check("stat-path", dir, true, err)
	n, err := driver.DiskUsage.Do(ctx, r, "web")
	check("disk-usage", n, int64(41), err)
	n, err = driver.VolumeUsage.Do(ctx, r, driver.VolumeRef{Kind: driver.KindDrive, Name: "d"})
	check("volume-usage", n, int64(42), err)
	u, err := driver.BoxUsage.Do(ctx, r, "web")
	check("box-usage", u.Processes, 43, err)
	_, err = driver.Foreground.Do(ctx, r, "web")
	check("foreground", true, true, err)
	_, err = driver.SetHostname.Do(ctx, r, driver.BoxHostname{Box: "web", Hostname: "renamed"})
	check("set-hostname", true, true, err)
	if _, err := driver.SetHostname.Do(ctx, r, driver.BoxHostname{Box: "other", Hostname: "renamed"}); !errorsIsNotFound(err) {
		t.Errorf("a node driver's not-found through the agent: %v", err)
	}
	started, err := driver.WarmExec.Do(ctx, r, "web")
	check("warm-exec", started, true, err)
	_, err = driver.DropWarm.Do(ctx, r, "web")
	check("drop-warm", true, true, err)
	id, err := driver.ImageID.Do(ctx, r, "base:1")
	check("image-id", id, "sha256:44", err)
	n, err = driver.SnapshotSize.Do(ctx, r, "s1")
	check("snapshot-size", n, int64(45), err)

	e.mu.Lock()
	asked := slices.Clone(e.asked)
	e.mu.Unlock()
	sort.Strings(asked)
	asked = slices.Compact(asked)
	if want := driver.OpNames(); !slices.Equal(asked, want) {
		t.Errorf("the node's driver was asked %v; the seam's ops are %v", asked, want)
	}
}

func errorsIsNotFound(err error) bool { return errors.Is(err, driver.ErrNotFound) }
