package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	mrand "math/rand"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// slowProxy stands between the CLI and paddockd and lets bodies through
// at about 8 MB/s both ways, counting what passed, so that a test can
// kill paddockd while a transfer is in flight.
type slowProxy struct {
	URL    string
	passed atomic.Int64
	srv    *http.Server
}

type slowBody struct {
	r io.ReadCloser
	n *atomic.Int64
}

func (b slowBody) Read(p []byte) (int, error) {
	if len(p) > 64<<10 {
		p = p[:64<<10]
	}
	n, err := b.r.Read(p)
	b.n.Add(int64(n))
	time.Sleep(8 * time.Millisecond)
	return n, err
}

func (b slowBody) Close() error { return b.r.Close() }

func newSlowProxy(t *testing.T, backend string) *slowProxy {
	t.Helper()
	u, _ := url.Parse(backend)
	p := &slowProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error {
		if r.StatusCode != http.StatusSwitchingProtocols {
			r.Body = slowBody{r.Body, &p.passed}
		}
		return nil
	}
	rp.FlushInterval = -1
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.ContentLength != 0 && r.Header.Get("Upgrade") == "" {
			r.Body = slowBody{r.Body, &p.passed}
		}
		rp.ServeHTTP(w, r)
	})}
	go p.srv.Serve(ln)
	t.Cleanup(func() { p.srv.Close() })
	p.URL = "http://" + ln.Addr().String()
	return p
}

// bigTar writes a tar with one file of size random bytes.
func bigTar(t *testing.T, path, name string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg})
	io.CopyN(tw, rand.Reader, size)
	tw.Close()
	f.Close()
}

// paddockd is killed (SIGKILL, as a crash) while a push, a pull, a drive
// restore and an exec are in flight, one at a time, each seen in flight
// by the bytes that passed. Each client gets an error that says the
// connection to paddockd broke; after the restart the push's target does
// not exist and its staging folder is gone, the pull wrote nothing, the
// drive holds its old contents and no staging folder, and the server
// works.
func TestRestartMidTransfer(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	ctx := context.Background()
	c := d.Client()
	if _, err := c.CreateBox(ctx, api.BoxPost{Name: "mid"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateDrive(ctx, "middrive"); err != nil {
		t.Fatal(err)
	}
	var old bytes.Buffer
	tw := tar.NewWriter(&old)
	tw.WriteHeader(&tar.Header{Name: "old.txt", Mode: 0o644, Size: 4, Typeflag: tar.TypeReg})
	tw.Write([]byte("old\n"))
	tw.Close()
	if err := c.RestoreDrive(ctx, "middrive", bytes.NewReader(old.Bytes())); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	bigTar(t, filepath.Join(work, "push.tar"), "big.bin", 96<<20)
	if _, err := c.Exec(ctx, "mid", api.ExecPost{Cmd: []string{"sh", "-c", "head -c 100663296 /dev/urandom > /config/pullme"}}, clientIO()); err != nil {
		t.Fatal(err)
	}
	proxy := newSlowProxy(t, "http://"+d.Listen)
	cliEnv := append(os.Environ(), "PADDOCK_HOST="+proxy.URL, "PADDOCK_TOKEN="+d.Token, "PADDOCK_CONFIG_DIR="+filepath.Join(work, "cli"), "TMPDIR="+work)

	// run starts the CLI, kills paddockd once inFlight says so, restarts
	// it, and returns the CLI's exit error and output.
	run := func(what string, inFlight func() bool, args ...string) (error, string) {
		t.Helper()
		cmd := exec.Command(bins.Paddock, args...)
		cmd.Env = cliEnv
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		deadline := time.Now().Add(60 * time.Second)
		for !inFlight() {
			select {
			case err := <-done:
				t.Fatalf("%s ended before it was seen in flight: %v\n%s", what, err, out.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never seen in flight:\n%s", what, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := d.Kill(); err != nil {
			t.Fatal(err)
		}
		var err error
		select {
		case err = <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%s: the CLI did not end after paddockd was killed:\n%s", what, out.String())
		}
		if err := d.Start(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s cut off after %d MB through the proxy: %s", what, proxy.passed.Load()>>20, strings.TrimSpace(out.String()))
		return err, out.String()
	}
	passed := func(n int64) func() bool {
		base := proxy.passed.Load()
		return func() bool { return proxy.passed.Load()-base >= n }
	}
	inBox := func(script string) string {
		t.Helper()
		var out bytes.Buffer
		streams := clientIO()
		streams.Stdout = &out
		if _, err := d.Client().Exec(ctx, "mid", api.ExecPost{Cmd: []string{"sh", "-c", script}}, streams); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out.String())
	}
	broke := "connection to paddockd"

	// push
	err, out := run("push", passed(16<<20), "push", "mid", filepath.Join(work, "push.tar"), "--to", "/config/pushed")
	if err == nil || !strings.Contains(out, "paddockd") {
		t.Fatalf("a push cut off: %v\n%s", err, out)
	}
	waitFor(t, 30*time.Second, "the push's staging folder to go", func() bool {
		return inBox("ls -A /config | grep -c paddock-push || true") == "0"
	})
	if got := inBox("test -e /config/pushed && echo there || echo absent"); got != "absent" {
		t.Fatalf("the cut-off push's target: %s", got)
	}

	// pull
	dest := filepath.Join(work, "pulled")
	err, out = run("pull", passed(16<<20), "pull", "mid", "/config/pullme", "--to", dest)
	if err == nil || !strings.Contains(out, "cut off") {
		t.Fatalf("a pull cut off: %v\n%s", err, out)
	}
	if _, err := os.Lstat(dest); !os.IsNotExist(err) {
		t.Fatalf("the cut-off pull wrote %s: %v", dest, err)
	}
	if left, _ := filepath.Glob(filepath.Join(work, "spool-*")); len(left) > 0 {
		t.Fatalf("the cut-off pull left %v", left)
	}

	// drive restore
	err, out = run("drive restore", passed(16<<20), "drive", "restore", "middrive", filepath.Join(work, "push.tar"), "--yes")
	if err == nil || !strings.Contains(out, "paddockd") {
		t.Fatalf("a restore cut off: %v\n%s", err, out)
	}
	waitFor(t, 30*time.Second, "the drive to hold its old contents only", func() bool {
		rc, err := d.Client().BackupDrive(ctx, "middrive")
		if err != nil {
			return false
		}
		defer rc.Close()
		var names []string
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			names = append(names, h.Name)
		}
		return strings.Join(names, ",") == "old.txt"
	})

	// exec
	var started atomic.Bool
	cmd := exec.Command(bins.Paddock, "exec", "mid", "--", "sh", "-c", "echo started; sleep 120")
	cmd.Env = cliEnv
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "started" {
				started.Store(true)
			}
		}
	}()
	waitFor(t, 30*time.Second, "the exec to start", started.Load)
	d.Kill()
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(stderr.String(), broke) {
			t.Fatalf("an exec cut off: %v\n%s", err, stderr.String())
		}
		t.Logf("exec cut off: %s", strings.TrimSpace(stderr.String()))
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the CLI's exec did not end after paddockd was killed")
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	if got := inBox("echo alive"); got != "alive" {
		t.Fatalf("after the restarts: %q", got)
	}
}

func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func clientIO() client.ExecIO { return client.ExecIO{Stdout: io.Discard, Stderr: io.Discard} }

// paddockd is killed with SIGKILL at a random moment of an apply of a
// Boxfile project (boxes, each mounting a drive of its own), round after
// round, the rounds alternating between destroying the boxes (drives
// stay) and making them again. After each restart the engine converges on
// exactly what the store declares: every declared box runs and has one
// container; no container, volume or snapshot image is left that nothing
// declares; every drive still holds the mark written to it at the start.
// CI runs 3 rounds of 4 boxes; PADDOCK_FAULTS_FULL=1 runs 20 of 10.
func TestKillDuringApply(t *testing.T) {
	rounds, n := 3, 4
	if os.Getenv("PADDOCK_FAULTS_FULL") == "1" {
		rounds, n = 20, 10
	}
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	ctx := context.Background()
	spec := api.ProjectSpec{Project: "crashy"}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("cd%d", i)
		spec.Drives = append(spec.Drives, api.DriveSpec{Name: name})
		spec.Boxes = append(spec.Boxes, api.BoxSpec{Name: fmt.Sprintf("cb%d", i), Mounts: []api.Mount{{Drive: name, Path: "/mnt/" + name}}})
	}
	apply := func(destroy bool) error {
		c := d.Client()
		req := api.PlanRequest{Spec: spec, Destroy: destroy}
		p, err := c.Plan(ctx, req)
		if err != nil {
			return err
		}
		_, err = c.Apply(ctx, api.ApplyRequest{PlanRequest: req, Serial: p.Serial})
		return err
	}
	start := time.Now()
	if err := apply(false); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	for i := 0; i < n; i++ {
		script := fmt.Sprintf("echo mark-%d > /mnt/cd%d/mark", i, i)
		if code, err := d.Client().Exec(ctx, fmt.Sprintf("cb%d", i), api.ExecPost{Cmd: []string{"sh", "-c", script}}, clientIO()); err != nil || code != 0 {
			t.Fatalf("marking drive cd%d: %d %v", i, code, err)
		}
	}
	seed := time.Now().UnixNano()
	rng := mrand.New(mrand.NewSource(seed))
	t.Logf("a whole apply of %d boxes took %s; seed %d", n, took.Round(time.Millisecond), seed)

	cut := 0
	for r := 0; r < rounds; r++ {
		destroy := r%2 == 0
		errc := make(chan error, 1)
		go func() { errc <- apply(destroy) }()
		// A random point of the apply, seen in the engine: when k of the
		// n containers are made (or, destroying, gone).
		k := 1 + rng.Intn(n-1)
		deadline := time.Now().Add(60 * time.Second)
		for {
			names, err := harness.Containers(d.Instance)
			if err != nil {
				t.Fatal(err)
			}
			if (!destroy && len(names) >= k) || (destroy && len(names) <= n-k) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := d.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			cut++
		}
		if err := d.Start(); err != nil {
			t.Fatal(err)
		}
		converged(t, d, n, r)
	}
	t.Logf("%d rounds, %d applies cut off by the kill, every one converged with nothing orphaned and no drive lost", rounds, cut)
	if cut == 0 {
		t.Error("no apply was cut off: the test did not test a crash")
	}
}

// converged checks the engine against the store once a reconcile has
// nothing left to do.
func converged(t *testing.T, d *harness.Daemon, drives, round int) {
	t.Helper()
	ctx := context.Background()
	c := d.Client()
	waitFor(t, 60*time.Second, "a reconcile with nothing to do", func() bool {
		res, err := c.Reconcile(ctx)
		return err == nil && len(res.Changes) == 0
	})
	boxes, err := c.Boxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantContainers := map[string]bool{}
	wantVolumes := map[string]bool{}
	wantImages := map[string]bool{}
	for _, b := range boxes {
		if b.Status != b.Desired {
			t.Errorf("round %d: box %s is %s, declared %s (%s)", round, b.Name, b.Status, b.Desired, b.Error)
		}
		wantContainers[d.Instance+"-"+b.Name] = true
		wantVolumes[d.Instance+"-boxdata-"+b.Name] = true
		snaps, err := c.Snapshots(ctx, b.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snaps {
			wantImages[s.ID] = true
		}
	}
	ds, err := c.Drives(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != drives {
		t.Errorf("round %d: %d drives declared, want %d", round, len(ds), drives)
	}
	for _, dr := range ds {
		wantVolumes[d.Instance+"-drive-"+dr.Name] = true
	}
	lines := func(args ...string) []string {
		out, err := exec.Command("docker", args...).Output()
		if err != nil {
			t.Fatalf("docker %v: %v", args, err)
		}
		return strings.Fields(string(out))
	}
	same := func(what string, got []string, want map[string]bool) {
		have := map[string]bool{}
		for _, g := range got {
			have[g] = true
			if !want[g] {
				t.Errorf("round %d: orphaned %s %s: nothing declares it", round, what, g)
			}
		}
		for w := range want {
			if !have[w] {
				t.Errorf("round %d: declared %s %s is missing", round, what, w)
			}
		}
	}
	names, err := harness.Containers(d.Instance)
	if err != nil {
		t.Fatal(err)
	}
	same("container", names, wantContainers)
	same("volume", lines("volume", "ls", "-q", "--filter", "label=paddock.instance="+d.Instance), wantVolumes)
	same("snapshot image", lines("images", "--format", "{{.Tag}}", d.Instance+"-snapshot"), wantImages)
	for i := 0; i < drives; i++ {
		rc, err := c.BackupDrive(ctx, fmt.Sprintf("cd%d", i))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Contains(b, []byte(fmt.Sprintf("mark-%d\n", i))) {
			t.Errorf("round %d: drive cd%d lost its mark", round, i)
		}
	}
}
