package reconcile_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/cluster"
	"github.com/paddock-dev/paddock/appliance/node"
	"github.com/paddock-dev/paddock/appliance/reconcile"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/testbed/drivers"
)

// lyingNode is a node's real driver whose lists also claim another
// server's box (made from another spec) and a snapshot of it that was
// never taken: what a node taken over could answer.
type lyingNode struct {
	driver.Driver
	box, snapshot string
}

func (l lyingNode) Boxes(ctx context.Context) ([]driver.BoxState, error) {
	bs, err := l.Driver.Boxes(ctx)
	return append(bs, driver.BoxState{Name: l.box, ID: "forged", SpecHash: "bogus", Running: true, Status: "running"}), err
}

func (l lyingNode) Snapshots(ctx context.Context) ([]driver.SnapshotState, error) {
	ss, err := l.Driver.Snapshots(ctx)
	return append(ss, driver.SnapshotState{ID: l.snapshot, Box: l.box}), err
}

// syncBuffer is a log that the reconciler's goroutines write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A node whose agent (real, on an engine of its own) claims the control
// plane's box with another spec, and a snapshot of it, moves nothing: over
// several passes of the real reconciler the box keeps its container and
// what was written in it, its snapshot is taken for real where the box
// is, and the log names the node once for each lie.
func TestAttackNodeClaimsAnotherServersBox(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ca, err := node.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	own, image := drivers.Docker(t)
	other, _ := drivers.Docker(t)
	if err := st.AddJoinToken("h", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := st.JoinNode("h", store.Node{Name: "n2", Addr: "127.0.0.1:1", Subnet: "10.251.0.0/24", Joined: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	c := &cluster.Driver{
		Nodes: map[string]driver.Driver{"": own, "n2": drivers.Node(t, ca, "n2", lyingNode{Driver: other, box: "victim", snapshot: "victim-1"})},
		Where: func(kind, name string) (string, error) {
			n, err := st.Where(kind, name)
			if errors.Is(err, store.ErrNotFound) {
				return "", driver.ErrNotFound
			}
			return n, err
		},
		Log: slog.New(slog.NewTextHandler(&log, nil)),
	}
	rec := &reconcile.Reconciler{Store: st, Driver: c, Types: map[string]reconcile.BoxType{"small": {CPUs: 1, MemoryMiB: 256}}}
	if err := st.Declare(func(tx *store.Tx) error {
		return tx.CreateBox(store.Box{Name: "victim", Type: "small", Image: image, Desired: "running", Created: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	pass := func() {
		t.Helper()
		res, err := rec.Run(ctx)
		if err == nil {
			err = res.Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	pass()
	var out bytes.Buffer
	if code, err := own.Exec(ctx, "victim", driver.ExecSpec{Cmd: []string{"sh", "-c", "echo written > /tmp/work; cat /tmp/work"}, Stdout: &out}); err != nil || code != 0 {
		t.Fatalf("writing in the box: %d %v", code, err)
	}
	idOf := func() string {
		t.Helper()
		bs, err := own.Boxes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if b.Name == "victim" {
				return b.ID
			}
		}
		t.Fatal("the box is gone from its server")
		return ""
	}
	id := idOf()
	if err := st.Declare(func(tx *store.Tx) error {
		return tx.AddSnapshot(store.Snapshot{ID: "victim-1", Box: "victim", State: "pending", Created: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		pass()
	}
	if got := idOf(); got != id {
		t.Fatalf("the box was made again (container %s, was %s)", got, id)
	}
	out.Reset()
	if code, err := own.Exec(ctx, "victim", driver.ExecSpec{Cmd: []string{"cat", "/tmp/work"}, Stdout: &out}); err != nil || code != 0 || out.String() != "written\n" {
		t.Fatalf("what was written in the box: %q %d %v", out.String(), code, err)
	}
	sns, err := st.ListSnapshots("victim")
	if err != nil || len(sns) != 1 || sns[0].State != "ready" {
		t.Fatalf("the snapshot: %+v %v", sns, err)
	}
	ss, err := own.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	taken := false
	for _, s := range ss {
		taken = taken || s.ID == "victim-1"
	}
	if !taken {
		t.Fatalf("snapshot victim-1 is ready, and its server has no image of it: %+v", ss)
	}
	for _, what := range []string{"node=n2 kind=box name=victim placed_on=\"(control plane)\"", "node=n2 kind=snapshot name=victim-1 placed_on=\"(control plane)\""} {
		if n := strings.Count(log.String(), what); n != 1 {
			t.Errorf("the log says %d times %q:\n%s", n, what, log.String())
		}
	}
}
