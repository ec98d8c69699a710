package docker_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/docker"
)

// heldInput is a command's input that says nothing until released, then
// gives what it holds and ends (with end, io.EOF for a whole input).
type heldInput struct {
	release chan struct{}
	data    []byte
	end     error
	read    bool
}

func (h *heldInput) Read(p []byte) (int, error) {
	<-h.release
	if !h.read {
		h.read = true
		return copy(p, h.data), nil
	}
	return 0, h.end
}

// A command's input reaches that command alone. A caller's input may end
// after its command has (the command read none of it): what it gives
// then must not reach the next command that the same warm exec serves.
// Before each command took an identity of its own, the late end of input
// closed the next command's input early: `wc -c` of 64 KiB said 32768 or
// 0, with exit 0.
func TestWarmInputStaysWithItsCommand(t *testing.T) {
	d, image := engine(t, func(c *docker.Config) { c.KeepWarm = true })
	ctx := context.Background()
	box, _ := runningBox(t, d, image, "wi")
	const warm = `tr '\0' ' ' 2>/dev/null </proc/$PPID/cmdline | grep -q '# paddock:' && echo warm || echo cold`
	// The first command starts the box's warm exec; wait until one serves.
	for i := 0; ; i++ {
		var out bytes.Buffer
		if _, err := d.Exec(ctx, box, driver.ExecSpec{Cmd: []string{"sh", "-c", warm}, Stdout: &out}); err != nil {
			t.Fatal(err)
		}
		if out.String() == "warm\n" {
			break
		}
		if i == 50 {
			t.Fatal("no command ran warm")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for round := 0; round < 3; round++ {
		late := &heldInput{release: make(chan struct{}), data: []byte("stale\n"), end: io.EOF}
		var out bytes.Buffer
		if code, err := d.Exec(ctx, box, driver.ExecSpec{Cmd: []string{"sh", "-c", warm}, Stdin: late, Stdout: &out}); err != nil || code != 0 || out.String() != "warm\n" {
			t.Fatalf("round %d, the command that reads nothing: %q, code %d, %v (want it run warm)", round, out.String(), code, err)
		}
		inR, inW := io.Pipe()
		type result struct {
			out  string
			code int
			err  error
		}
		done := make(chan result, 1)
		go func() {
			var out bytes.Buffer
			code, err := d.Exec(ctx, box, driver.ExecSpec{Cmd: []string{"sh", "-c", "cat; " + warm}, Stdin: inR, Stdout: &out})
			done <- result{out.String(), code, err}
		}()
		inW.Write([]byte("a"))
		// The first command's input ends now, with the second running.
		close(late.release)
		select {
		case r := <-done:
			t.Fatalf("round %d: the second command ended before its input did: %q, code %d, %v", round, r.out, r.code, r.err)
		case <-time.After(time.Second):
		}
		inW.Write([]byte("b"))
		inW.Close()
		r := <-done
		if r.err != nil || r.code != 0 || r.out != "abwarm\n" {
			t.Fatalf("round %d, the second command: %q, code %d, %v; want %q", round, r.out, r.code, r.err, "abwarm\n")
		}
	}
}

// Input cut short (the caller went away mid-input) is not an end of
// input: the command is ended before it could take what it got for the
// whole, and the exec ends with an error, not the command's exit code;
// the same with a warm exec and the usual way.
func TestCutInputIsNoEndOfInput(t *testing.T) {
	for _, keepWarm := range []bool{false, true} {
		name := map[bool]string{false: "usual", true: "warm"}[keepWarm]
		t.Run(name, func(t *testing.T) {
			d, image := engine(t, func(c *docker.Config) { c.KeepWarm = keepWarm })
			ctx := context.Background()
			box, _ := runningBox(t, d, image, "ci")
			if keepWarm {
				// A command the usual way starts the warm exec.
				if _, err := d.Exec(ctx, box, driver.ExecSpec{Cmd: []string{"true"}}); err != nil {
					t.Fatal(err)
				}
				if _, err := d.WarmExec(ctx, box); err != nil {
					t.Fatal(err)
				}
			}
			cut := &heldInput{release: make(chan struct{}), data: []byte("half"), end: io.ErrUnexpectedEOF}
			close(cut.release)
			var out bytes.Buffer
			ectx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			code, err := d.Exec(ectx, box, driver.ExecSpec{Cmd: []string{"sh", "-c", "wc -c >/tmp/count; echo took"}, Stdin: cut, Stdout: &out})
			if err == nil {
				t.Fatalf("cut input: code %d, output %q, no error", code, out.String())
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("cut input: the exec hung: %v", err)
			}
			// Whatever the command did after, the caller was not told it
			// took the input.
			if strings.Contains(out.String(), "took") || !strings.Contains(err.Error(), "input was cut short") {
				t.Fatalf("cut input: the caller read %q and the error %q", out.String(), err)
			}
			// Nor was the command: it was ended before any end of input,
			// so wc never counted the half it got. (Given an end of
			// input, it counts within milliseconds; this looks for three
			// seconds, and never fails a driver that keeps the rule.)
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				var count bytes.Buffer
				d.Exec(ctx, box, driver.ExecSpec{Cmd: []string{"cat", "/tmp/count"}, Stdout: &count})
				if strings.TrimSpace(count.String()) != "" {
					t.Fatalf("cut input: the command took it for all of it: wc counted %q", count.String())
				}
			}
		})
	}
}
