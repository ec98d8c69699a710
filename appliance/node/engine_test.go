package node_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/drivertest"
	"github.com/paddock-dev/paddock/testbed/drivers"
)

// The real engine's driver, through an agent, keeps the whole contract:
// boxes, snapshots, volumes, exec (with input, terminals, timeouts, warm
// execs) and archives.
func TestRemoteEngineContract(t *testing.T) {
	d, image := drivers.Docker(t)
	r, _ := serve(t, d, "n1")
	t.Run("lifecycle", func(t *testing.T) { drivertest.Lifecycle(t, r, image) })
	t.Run("runtime", func(t *testing.T) { drivertest.Runtime(t, r, image) })
}

// cutReader gives its bytes, then breaks off (not an end of input).
type cutReader struct{ data []byte }

func (c *cutReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, c.data)
	c.data = c.data[n:]
	return n, nil
}

// Input that breaks off on the caller's side of an agent is no end of
// input on the node: the exec fails, and the command is not told it had
// all its input.
func TestRemoteCutInputIsNoEndOfInput(t *testing.T) {
	d, image := drivers.Docker(t)
	r, _ := serve(t, d, "n1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec := drivertest.Spec("cutin", image)
	spec.Mounts = nil
	for _, step := range []func() error{func() error { return r.Prepare(ctx) }, func() error { return r.CreateBox(ctx, spec) }, func() error { return r.StartBox(ctx, "cutin") }} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	// The positive control: input that ends is taken whole.
	var out bytes.Buffer
	code, err := r.Exec(ctx, "cutin", driver.ExecSpec{Cmd: []string{"sh", "-c", "wc -c; echo took"}, Stdin: strings.NewReader("whole"), Stdout: &out})
	if err != nil || code != 0 || out.String() != "5\ntook\n" {
		t.Fatalf("whole input: %d %q %v", code, out.String(), err)
	}
	out.Reset()
	code, err = r.Exec(ctx, "cutin", driver.ExecSpec{Cmd: []string{"sh", "-c", "wc -c >/tmp/count; echo took"}, Stdin: &cutReader{data: []byte("half")}, Stdout: &out})
	if err == nil || errors.Is(err, context.DeadlineExceeded) || strings.Contains(out.String(), "took") {
		t.Fatalf("cut input: code %d, output %q, error %v", code, out.String(), err)
	}
	// Nor is the command on the node: wc never counts the half it got.
	// (Given an end of input, it counts within milliseconds; this looks
	// for three seconds, and never fails a node that keeps the rule.)
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		var count bytes.Buffer
		r.Exec(ctx, "cutin", driver.ExecSpec{Cmd: []string{"cat", "/tmp/count"}, Stdout: &count})
		if strings.TrimSpace(count.String()) != "" {
			t.Fatalf("the command on the node took the cut input for all of it: wc counted %q", count.String())
		}
	}
}
