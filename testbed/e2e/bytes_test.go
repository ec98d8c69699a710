package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/testbed/harness"
	"github.com/paddock-dev/paddock/testbed/load"
)

// inputSizes are the sizes of input the byte test sends: the empty input,
// one byte, either side of the 32 KiB copy buffers and the 64 KiB frames,
// 1 MiB; bigSize goes now and then.
var inputSizes = []int{0, 1, 32767, 32768, 32769, 65535, 65536, 65537, 1 << 20}

const bigSize = 64 << 20

// execHang is how long one command of the byte test may go on before it
// is taken for one that will never end: its biggest input and output,
// 64 MiB each way, take seconds on a busy two-core machine.
const execHang = 3 * time.Minute

// Every byte a caller gives a command reaches it, and every byte the
// command writes reaches the caller, under load: execs side by side on
// several boxes with input of the sizes above (each command's input
// checked by its checksum in the box, and echoed back on stdout or stderr
// and checked here byte for byte; between them, commands that take no
// input and commands that end before their input does, whose input's end
// must not reach the next command), beside pushes and pulls of files that
// are checked both ways, then a terminal websocket carrying a large input
// and output. With warm execs off (every command an engine exec) and on,
// with the first box from a warm pool (each command handed to the
// process started ahead). A command whose input or output was cut would
// show here as a wrong count or checksum with exit 0, as it once did.
func TestNoByteLost(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
	}{
		{"engine-exec", []string{"PADDOCK_WARM_EXEC=false"}},
		{"warm-exec-and-pool", []string{"PADDOCK_WARM_POOL__SMALL=1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newDaemon(t, t.TempDir())
			d.Env = append(d.Env, c.env...)
			if err := d.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(d.Cleanup)
			if c.name != "engine-exec" {
				if err := d.WaitPool(1, 2*time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			noByteLost(t, d, c.name != "engine-exec")
		})
	}
}

func noByteLost(t *testing.T, d *harness.Daemon, warm bool) {
	const (
		boxes   = 3
		workers = 6
		execs   = 1200 // in all, across the workers
	)
	c := d.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Every heavy request of the test (box creation, pushes, pulls) is
	// paced within the server's bounds: each of them must succeed.
	pace := load.HeavyPacer()
	var names []string
	for i := range boxes {
		pace(ctx)
		b, err := c.CreateBox(ctx, api.BoxPost{Name: fmt.Sprintf("bytes%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, b.Name)
	}
	if warm && !strings.Contains(readLog(t, d), "box claimed from the warm pool") {
		t.Fatal("no box was claimed from the warm pool")
	}

	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	// Pushes and pulls run beside the execs until they end.
	execsDone := make(chan struct{})
	var moved atomic.Int64
	var side sync.WaitGroup
	for p := range 2 {
		side.Add(1)
		go func() {
			defer side.Done()
			box := names[p%len(names)]
			for n := 0; ; n++ {
				select {
				case <-execsDone:
					return
				default:
				}
				size := []int{1, 32768, 65537, 1 << 20, 4 << 20}[n%5]
				blob := make([]byte, size)
				rand.Read(blob)
				dir := fmt.Sprintf("/config/moved%d", p)
				pace(ctx)
				if err := c.Push(ctx, box, dir, tarOf("blob", blob)); err != nil {
					fail("push %d of %d bytes: %v", n, size, err)
					return
				}
				pace(ctx)
				rc, err := c.Pull(ctx, box, dir+"/blob")
				if err != nil {
					fail("pull %d: %v", n, err)
					return
				}
				got, err := fileOfTar(rc, "blob")
				rc.Close()
				if err != nil || !bytes.Equal(got, blob) {
					fail("pull %d of %d bytes: %d bytes back (checksum %s, want %s), %v", n, size, len(got), sum(got), sum(blob), err)
					return
				}
				var out bytes.Buffer
				if code, err := c.Exec(ctx, box, api.ExecPost{Cmd: []string{"sha256sum", dir + "/blob"}}, client.ExecIO{Stdout: &out}); err != nil || code != 0 || !strings.HasPrefix(out.String(), sum(blob)) {
					fail("push %d of %d bytes, in the box: %q, code %d, %v; want %s", n, size, out.String(), code, err, sum(blob))
					return
				}
				moved.Add(1)
			}
		}()
	}

	var next, bigs atomic.Int64
	var ex sync.WaitGroup
	for w := range workers {
		ex.Add(1)
		go func() {
			defer ex.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= execs {
					return
				}
				size := inputSizes[(i/4)%len(inputSizes)]
				// Two big inputs a run, one each way.
				if i == execs/2 || i == execs/2+1 {
					size = bigSize
					bigs.Add(1)
				}
				in := make([]byte, size)
				rand.Read(in)
				box := names[(i+w)%len(names)]
				var out, errb bytes.Buffer
				var cmd []string
				var want, wantErr []byte
				stdin := io.Reader(bytes.NewReader(in))
				switch i % 4 {
				case 0: // the input comes back on stdout
					cmd, want = []string{"cat"}, in
				case 1: // on stderr, with the box's checksum of it on stdout
					cmd = []string{"sh", "-c", `f=$(mktemp) && tee "$f" | sha256sum && cat "$f" >&2; rm -f "$f"`}
					want, wantErr = []byte(sum(in)+"  -\n"), in
				case 2: // no input at all, the commonest command: its end of
					// input comes as the command ends, or after
					cmd, stdin, want = []string{"true"}, nil, nil
				case 3: // a command that ends before its input does
					cmd, want = []string{"head", "-c", "1000"}, in[:min(1000, len(in))]
				}
				// A command that never ends is lost for the run, not for
				// the test: its own bound says so and the others go on.
				one, cancel := context.WithTimeout(ctx, execHang)
				code, err := c.Exec(one, box, api.ExecPost{Cmd: cmd}, client.ExecIO{Stdin: stdin, Stdout: &out, Stderr: &errb})
				hung := one.Err() != nil && ctx.Err() == nil
				cancel()
				if hung {
					fail("exec %d (%s, %d bytes in) had not ended after %v: it waits for something that will not come (an end of input?)", i, cmd[0], size, execHang)
					continue
				}
				if err != nil || code != 0 {
					fail("exec %d (%s, %d bytes in): code %d, %v", i, cmd[0], size, code, err)
					continue
				}
				if !bytes.Equal(out.Bytes(), want) {
					fail("exec %d (%s, %d bytes in): %d bytes on stdout, checksum %s; want %d, %s", i, cmd[0], size, out.Len(), sum(out.Bytes()), len(want), sum(want))
				}
				if !bytes.Equal(errb.Bytes(), wantErr) {
					fail("exec %d (%s, %d bytes in): %d bytes on stderr, checksum %s; want %d, %s", i, cmd[0], size, errb.Len(), sum(errb.Bytes()), len(wantErr), sum(wantErr))
				}
			}
		}()
	}
	ex.Wait()
	close(execsDone)
	side.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if moved.Load() == 0 {
		t.Error("no push and pull completed beside the execs")
	}
	t.Logf("%d execs (%d of %d MiB), %d pushes and pulls beside them", execs, bigs.Load(), bigSize>>20, moved.Load())
	if t.Failed() {
		return
	}
	terminalCarriesAll(t, ctx, d, names[0])
}

// terminalCarriesAll sends 1 MiB (as base64, so that the terminal passes
// it as it is) to a command on the terminal websocket and reads 1 MiB
// back, and checks both by checksum.
func terminalCarriesAll(t *testing.T, ctx context.Context, d *harness.Daemon, box string) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+d.Listen+"/v1/boxes/"+box+"/terminal?rows=40&cols=120",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + d.Token}}})
	if err != nil {
		t.Fatalf("terminal: %v", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(8 << 20)
	var seen bytes.Buffer
	// until reads the terminal's output until re matches what came so far.
	until := func(what string, re *regexp.Regexp) []string {
		t.Helper()
		for {
			if m := re.FindStringSubmatch(seen.String()); m != nil {
				return m
			}
			typ, p, err := ws.Read(ctx)
			if err != nil {
				tail := seen.String()
				if len(tail) > 400 {
					tail = tail[len(tail)-400:]
				}
				t.Fatalf("terminal: waiting for %s: %v; the last output: %q", what, err, tail)
			}
			if typ == websocket.MessageBinary {
				seen.Write(p)
			}
		}
	}
	typeIn := func(s string) {
		t.Helper()
		if err := ws.Write(ctx, websocket.MessageBinary, []byte(s)); err != nil {
			t.Fatalf("terminal: %v", err)
		}
	}
	raw := make([]byte, 768<<10)
	rand.Read(raw)
	in := base64.StdEncoding.EncodeToString(raw) // 1 MiB of text
	// The markers are computed by the shell, so that the typed line's echo
	// never matches them.
	typeIn(fmt.Sprintf("stty raw -echo; echo READY$((6*7)); head -c %d >/tmp/tin; stty sane; echo IN$((6*7)) $(sha256sum </tmp/tin)\r", len(in)))
	until("the command to read", regexp.MustCompile(`READY42`))
	for i := 0; i < len(in); i += 32 << 10 {
		typeIn(in[i:min(i+32<<10, len(in))])
	}
	if m := until("the box's checksum of the input", regexp.MustCompile(`IN42 ([0-9a-f]{64})`)); m[1] != sum([]byte(in)) {
		t.Fatalf("terminal: the box read input with checksum %s, want %s", m[1], sum([]byte(in)))
	}
	seen.Reset()
	typeIn("head -c 786432 /dev/urandom >/tmp/tout; echo OUT$((6*7)) $(sha256sum </tmp/tout); base64 -w0 </tmp/tout; echo; echo END$((6*7))\r")
	m := until("the output", regexp.MustCompile(`OUT42 ([0-9a-f]{64})[^\r\n]*\r?\n([A-Za-z0-9+/=]*)\r?\nEND42`))
	out, err := base64.StdEncoding.DecodeString(m[2])
	if err != nil || sum(out) != m[1] || len(out) != 786432 {
		t.Fatalf("terminal: %d bytes of output (checksum %s), the box wrote 786432 (checksum %s): %v", len(out), sum(out), m[1], err)
	}
	typeIn("exit 0\r")
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// tarOf is a tar of one file.
func tarOf(name string, data []byte) io.Reader {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
	tw.Write(data)
	tw.Close()
	return &b
}

// fileOfTar reads the file name out of a tar stream, and checks that the
// stream ends as a tar does.
func fileOfTar(r io.Reader, name string) ([]byte, error) {
	tr := tar.NewReader(r)
	var got []byte
	found := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return got, err
		}
		if h.Name == name || strings.HasSuffix(h.Name, "/"+name) {
			if got, err = io.ReadAll(tr); err != nil {
				return got, err
			}
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("no %s in the tar", name)
	}
	return got, nil
}

func readLog(t *testing.T, d *harness.Daemon) string {
	t.Helper()
	b, err := os.ReadFile(d.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
