// Package drivertest is the contract every driver.Driver keeps. Lifecycle
// covers what the reconciler relies on (boxes, snapshots, volumes, their
// errors) and runs against both the Docker driver and the fake; Runtime
// covers running commands and copying files, which only a real engine does.
package drivertest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/archive"
	"github.com/paddock-dev/paddock/appliance/driver"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func boxState(t *testing.T, d driver.Driver, name string) (driver.BoxState, bool) {
	t.Helper()
	bs, err := d.Boxes(context.Background())
	must(t, err)
	for _, b := range bs {
		if b.Name == name {
			return b, true
		}
	}
	return driver.BoxState{}, false
}

func hasVolume(t *testing.T, d driver.Driver, v driver.VolumeRef) bool {
	t.Helper()
	vs, err := d.Volumes(context.Background())
	must(t, err)
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

func hasSnapshot(t *testing.T, d driver.Driver, id string) (driver.SnapshotState, bool) {
	t.Helper()
	ss, err := d.Snapshots(context.Background())
	must(t, err)
	for _, s := range ss {
		if s.ID == id {
			return s, true
		}
	}
	return driver.SnapshotState{}, false
}

// Spec is a small box with a drive and a box-data volume.
func Spec(name, image string) driver.BoxSpec {
	return driver.BoxSpec{
		Name: name, Image: image, CPUs: 1, MemoryBytes: 256 << 20,
		Mounts: []driver.Mount{
			{Volume: driver.VolumeRef{Kind: driver.KindDrive, Name: "ct-drive"}, Path: "/mnt/ct-drive"},
			{Volume: driver.VolumeRef{Kind: driver.KindBoxData, Name: name}, Path: "/var/lib/docker"},
		},
	}
}

// Lifecycle checks boxes, snapshots and volumes. image must exist on the
// engine; the driver must start with none of the objects the test makes.
func Lifecycle(t *testing.T, d driver.Driver, image string) {
	ctx := context.Background()
	must(t, d.Prepare(ctx))
	must(t, d.Prepare(ctx)) // idempotent

	if ok, err := d.ImageExists(ctx, image); err != nil || !ok {
		t.Fatalf("ImageExists(%q) = %v, %v; want true", image, ok, err)
	}
	if ok, err := d.ImageExists(ctx, "paddock-test/absent:none"); err != nil || ok {
		t.Fatalf("ImageExists(absent) = %v, %v; want false, nil", ok, err)
	}

	drive := driver.VolumeRef{Kind: driver.KindDrive, Name: "ct-drive"}
	data := driver.VolumeRef{Kind: driver.KindBoxData, Name: "ct-a"}
	must(t, d.CreateVolume(ctx, drive))
	must(t, d.CreateVolume(ctx, drive)) // idempotent
	must(t, d.CreateVolume(ctx, data))
	if !hasVolume(t, d, drive) || !hasVolume(t, d, data) {
		t.Fatal("created volumes are not listed")
	}

	spec := Spec("ct-a", image)
	must(t, d.CreateBox(ctx, spec))
	if err := d.CreateBox(ctx, spec); !errors.Is(err, driver.ErrInUse) {
		t.Fatalf("second CreateBox: %v, want ErrInUse", err)
	}
	st, ok := boxState(t, d, "ct-a")
	if !ok || st.Running || st.SpecHash != spec.Hash() || st.Snapshot != "" {
		t.Fatalf("after create: %+v (listed %v), want not running with hash %s", st, ok, spec.Hash())
	}
	must(t, d.StartBox(ctx, "ct-a"))
	if st, _ := boxState(t, d, "ct-a"); !st.Running {
		t.Fatalf("after start: %+v", st)
	}

	must(t, d.Snapshot(ctx, "ct-a", "ct-snap-1"))
	if s, ok := hasSnapshot(t, d, "ct-snap-1"); !ok || s.Box != "ct-a" {
		t.Fatalf("snapshot listed as %+v (%v)", s, ok)
	}
	must(t, d.StopBox(ctx, "ct-a"))
	if st, _ := boxState(t, d, "ct-a"); st.Running {
		t.Fatalf("after stop: %+v", st)
	}

	fork := Spec("ct-b", image)
	fork.Snapshot = "ct-snap-1"
	fork.Mounts = fork.Mounts[:1]
	must(t, d.CreateBox(ctx, fork))
	if st, _ := boxState(t, d, "ct-b"); st.Snapshot != "ct-snap-1" || st.SpecHash != fork.Hash() {
		t.Fatalf("fork state %+v", st)
	}
	if err := d.RemoveSnapshot(ctx, "ct-snap-1"); !errors.Is(err, driver.ErrInUse) {
		t.Fatalf("RemoveSnapshot under a box: %v, want ErrInUse", err)
	}
	if err := d.RemoveVolume(ctx, drive); !errors.Is(err, driver.ErrInUse) {
		t.Fatalf("RemoveVolume of a mounted drive: %v, want ErrInUse", err)
	}

	must(t, d.RemoveBox(ctx, "ct-b"))
	must(t, d.RemoveBox(ctx, "ct-a"))
	if err := d.RemoveBox(ctx, "ct-a"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("second RemoveBox: %v, want ErrNotFound", err)
	}
	if err := d.StartBox(ctx, "ct-a"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("StartBox of a removed box: %v, want ErrNotFound", err)
	}
	if _, ok := boxState(t, d, "ct-a"); ok {
		t.Fatal("removed box still listed")
	}
	// Volumes outlive their boxes until removed.
	if !hasVolume(t, d, drive) {
		t.Fatal("drive volume went with the box")
	}
	must(t, d.RemoveSnapshot(ctx, "ct-snap-1"))
	if _, ok := hasSnapshot(t, d, "ct-snap-1"); ok {
		t.Fatal("removed snapshot still listed")
	}
	must(t, d.RemoveVolume(ctx, drive))
	must(t, d.RemoveVolume(ctx, data))
	if err := d.RemoveVolume(ctx, data); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("second RemoveVolume: %v, want ErrNotFound", err)
	}
}

// Runtime checks exec and file copies on a running box made from image,
// which must have sh, cat and a user the driver runs commands as.
func Runtime(t *testing.T, d driver.Driver, image string) {
	ctx := context.Background()
	must(t, d.Prepare(ctx))
	spec := Spec("ct-run", image)
	must(t, d.CreateBox(ctx, spec))
	t.Cleanup(func() {
		d.RemoveBox(ctx, "ct-run")
		d.RemoveVolume(ctx, spec.Mounts[0].Volume)
		d.RemoveVolume(ctx, spec.Mounts[1].Volume)
	})
	must(t, d.StartBox(ctx, "ct-run"))

	var out, errb bytes.Buffer
	code, err := d.Exec(ctx, "ct-run", driver.ExecSpec{
		Cmd:    []string{"sh", "-c", "cat; echo to-err >&2; echo $GREETING; exit 7"},
		Env:    []string{"GREETING=hi"},
		Stdin:  strings.NewReader("from-stdin\n"),
		Stdout: &out, Stderr: &errb,
	})
	must(t, err)
	if code != 7 || out.String() != "from-stdin\nhi\n" || errb.String() != "to-err\n" {
		t.Fatalf("exec: code %d stdout %q stderr %q", code, out.String(), errb.String())
	}

	// A command that cannot start is said as a shell says it: not found
	// 127, not executable 126, on the error output; nothing on the output.
	for _, c := range []struct {
		cmd  string
		code int
		says string
	}{{"nosuchcmd", 127, "command not found: nosuchcmd\n"}, {"/no/such/cmd", 127, "command not found: /no/such/cmd\n"}, {"/etc/hostname", 126, "/etc/hostname: permission denied\n"},
		{"cd /tmp && echo 'it'", 127, `command not found: cd /tmp && echo 'it' (a shell line as one word: run it with a shell, as bash -lc 'cd /tmp && echo '\''it'\''')` + "\n"}} {
		out.Reset()
		errb.Reset()
		code, err := d.Exec(ctx, "ct-run", driver.ExecSpec{Cmd: []string{c.cmd, "arg"}, Stdout: &out, Stderr: &errb})
		must(t, err)
		if code != c.code || out.Len() != 0 || errb.String() != c.says {
			t.Fatalf("exec of %s: code %d stdout %q stderr %q; want %d and %q", c.cmd, code, out.String(), errb.String(), c.code, c.says)
		}
	}
	// Output that only looks like the engine's message at first is the
	// command's.
	out.Reset()
	code, err = d.Exec(ctx, "ct-run", driver.ExecSpec{Cmd: []string{"sh", "-c", "printf OC; sleep 0.1; printf 'I runs'; exit 126"}, Stdout: &out})
	must(t, err)
	if code != 126 || out.String() != "OCI runs" {
		t.Fatalf("a command's own output: code %d stdout %q", code, out.String())
	}

	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	tw.WriteHeader(&tar.Header{Name: "hello.txt", Mode: 0o644, Size: 6, Typeflag: tar.TypeReg})
	tw.Write([]byte("hello\n"))
	tw.Close()
	must(t, d.CopyTo(ctx, "ct-run", "/tmp", &tarball))
	rc, err := d.CopyFrom(ctx, "ct-run", "/tmp/hello.txt")
	must(t, err)
	defer rc.Close()
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	must(t, err)
	body, _ := io.ReadAll(tr)
	if h.Name != "hello.txt" || string(body) != "hello\n" {
		t.Fatalf("copied back %q with %q", h.Name, body)
	}
	if _, err := d.CopyFrom(ctx, "ct-run", "/no/such/path"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("CopyFrom of a missing path: %v, want ErrNotFound", err)
	}

	volumes(t, d, image, spec.Mounts[0].Volume)
	boxUser(t, d)
	userFiles(t, d)
	usage(t, d)
	hostname(t, d)
	signals(t, d)
	warmExec(t, d)
}

// readyWriter keeps what a command writes and closes ready when "ready"
// is in it.
type readyWriter struct {
	mu    sync.Mutex
	b     bytes.Buffer
	ready chan struct{}
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := bytes.Contains(w.b.Bytes(), []byte("ready"))
	w.b.Write(p)
	if !had && bytes.Contains(w.b.Bytes(), []byte("ready")) {
		close(w.ready)
	}
	return len(p), nil
}

func (w *readyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// signals checks ExecSpec.Signals, the usual way and (where the driver
// has them) through a warm exec: a command that traps TERM gets it and
// ends as it chooses; one that ignores it runs on, and KILL ends it
// (137); the processes of its group go with it.
func signals(t *testing.T, d driver.Driver) {
	ctx := context.Background()
	hasWarm := driver.WarmExec.Has(d)
	for _, warm := range []bool{false, true} {
		if warm && !hasWarm {
			continue
		}
		if hasWarm {
			driver.DropWarm.Do(ctx, d, "ct-run")
			if warm {
				_, err := driver.WarmExec.Do(ctx, d, "ct-run")
				must(t, err)
			}
		}
		for _, c := range []struct {
			script string
			sigs   []syscall.Signal
			code   int
			out    string
		}{
			{`trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.1; done`, []syscall.Signal{syscall.SIGTERM}, 3, "ready\ngot-term\n"},
			{`trap 'echo got-int; exit 4' INT; echo ready; while :; do sleep 0.1; done`, []syscall.Signal{syscall.SIGINT}, 4, "ready\ngot-int\n"},
			{`trap '' TERM; sleep 303 & echo ready; while :; do sleep 0.1; done`, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}, 137, "ready\n"},
		} {
			sigs := make(chan syscall.Signal)
			out := &readyWriter{ready: make(chan struct{})}
			tctx, cancel := context.WithTimeout(ctx, time.Minute)
			type result struct {
				code int
				err  error
			}
			done := make(chan result, 1)
			go func() {
				code, err := d.Exec(tctx, "ct-run", driver.ExecSpec{Cmd: []string{"sh", "-c", c.script}, Stdout: out, Signals: sigs})
				done <- result{code, err}
			}()
			select {
			case <-out.ready:
			case r := <-done:
				t.Fatalf("%q (warm %v) ended before it was signalled: %d, %v", c.script, warm, r.code, r.err)
			}
			for i, sig := range c.sigs {
				select {
				case sigs <- sig:
				case r := <-done:
					t.Fatalf("%q (warm %v) ended before it was sent %v: %d, %v", c.script, warm, sig, r.code, r.err)
				case <-time.After(30 * time.Second):
					t.Fatalf("%q (warm %v): the driver took no signal in 30 s", c.script, warm)
				}
				if i < len(c.sigs)-1 {
					// The command must outlive a signal it ignores: it
					// still answers a signal-free probe after it.
					select {
					case r := <-done:
						t.Fatalf("%q (warm %v) ended at %v, which it ignores: %d, %v", c.script, warm, sig, r.code, r.err)
					case <-time.After(300 * time.Millisecond):
					}
				}
			}
			r := <-done
			cancel()
			if r.err != nil || r.code != c.code || out.String() != c.out {
				t.Fatalf("%q (warm %v) signalled %v: code %d, %v, output %q; want %d and %q", c.script, warm, c.sigs, r.code, r.err, out.String(), c.code, c.out)
			}
		}
		sh := rootShell(t, d, "ct-run")
		if got := sh(`for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null; echo; done | grep -cE "^sleep 303 $" || true`); got != "0\n" {
			t.Fatalf("warm %v: the killed command's group left %s processes", warm, strings.TrimSpace(got))
		}
	}
}

// warmProbe describes the process that runs it: who, where, with what
// environment, capabilities, seccomp, ignored signals, cgroups and
// namespaces, whether it leads its session and group, what it read and
// how it ends. Its first line says whether a warm exec's program started
// it (its parent), and is not compared.
const warmProbe = `tr '\0' ' ' 2>/dev/null </proc/$PPID/cmdline | grep -q '# paddock:' && echo warm || echo cold
echo to-err >&2
id; pwd; umask; env | sort
grep -E '^(Cap|Seccomp|NoNewPrivs|Groups|SigIgn)' /proc/$$/status
sort /proc/$$/cgroup; readlink /proc/$$/ns/*
awk '{ print ($1 == $5 && $1 == $6) ? "leader" : "not-leader" }' /proc/$$/stat
cat; exit 3`

// warmExec checks, where the driver has warm execs, that a command run by
// one is run as the same command run the usual way (same user, groups,
// folder, environment, capabilities, seccomp, signals, cgroups,
// namespaces, session, input, output and exit code), that it was started
// ahead, that what the warm exec cannot do as the runtime would is run
// the usual way (same errors), that a timeout ends it, and that a box
// whose image has no python3 has none.
func warmExec(t *testing.T, d driver.Driver) {
	if !driver.WarmExec.Has(d) {
		return
	}
	ctx := context.Background()
	run := func(spec driver.ExecSpec, warm bool) string {
		t.Helper()
		driver.DropWarm.Do(ctx, d, "ct-run")
		if warm {
			if started, err := driver.WarmExec.Do(ctx, d, "ct-run"); !started || err != nil {
				t.Fatalf("WarmExec: %v, %v", started, err)
			}
			if started, err := driver.WarmExec.Do(ctx, d, "ct-run"); started || err != nil {
				t.Fatalf("WarmExec again: %v, %v; want a no-op", started, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		var out, errb bytes.Buffer
		spec.Stdout, spec.Stderr = &out, &errb
		if spec.Stdin != nil {
			spec.Stdin = strings.NewReader("in\n")
		}
		code, err := d.Exec(ctx, "ct-run", spec)
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("code %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	probe := []string{"sh", "-c", warmProbe}
	in := strings.NewReader("")
	for _, spec := range []driver.ExecSpec{
		{Cmd: probe, Env: []string{"FOO=bar"}, Stdin: in},
		{Cmd: probe, User: "0", Env: []string{"HOME=/elsewhere", "PATH=/usr/bin:/bin"}, WorkDir: "/tmp", Stdin: in},
		{Cmd: probe, User: "root", WorkDir: "/"},
		{Cmd: probe, User: "1000:0", Stdin: in},
		{Cmd: probe, User: "4242", WorkDir: "/tmp", Stdin: in},
		{Cmd: probe, User: "paddock:docker", Stdin: in},
	} {
		cold, warm := run(spec, false), run(spec, true)
		if !strings.HasPrefix(cold, "code 3\nstdout:\ncold\n") || !strings.HasPrefix(warm, "code 3\nstdout:\nwarm\n") {
			t.Fatalf("user %q: want the engine's process the usual way and the warm exec's child warm; got\n%s\n---\n%s", spec.User, cold, warm)
		}
		if cold[len("code 3\nstdout:\ncold\n"):] != warm[len("code 3\nstdout:\nwarm\n"):] {
			t.Fatalf("user %q: warm exec differs from the usual one:\n%s\n---\n%s", spec.User, cold, warm)
		}
	}
	// The signals the command starts with blocked or ignored (the shell
	// of the probe changes its own mask as it waits).
	sig := driver.ExecSpec{Cmd: []string{"grep", "^Sig[BI]", "/proc/self/status"}}
	if cold, warm := run(sig, false), run(sig, true); cold != warm || !strings.Contains(cold, "SigIgn:\t0000000000000000") {
		t.Fatalf("signals blocked or ignored, the usual way and warm:\n%s\n---\n%s", cold, warm)
	}
	// What the runtime would refuse is run the usual way: the same error.
	for _, spec := range []driver.ExecSpec{
		{Cmd: []string{"true"}, User: "nosuch"},
		{Cmd: []string{"true"}, WorkDir: "/nope"},
		{Cmd: []string{"true"}, WorkDir: "/root"},
		{Cmd: []string{"nosuchcmd"}},
		{Cmd: []string{"/etc/passwd"}},
	} {
		if cold, warm := run(spec, false), run(spec, true); cold != warm {
			t.Fatalf("%q in %q as %q: warm exec differs from the usual one:\n%s\n---\n%s", spec.Cmd, spec.WorkDir, spec.User, cold, warm)
		}
	}
	// A timeout ends the command and its process group, also once the
	// command itself has ended and a process of its group holds its
	// output open: the usual way and warm.
	sh := rootShell(t, d, "ct-run")
	for _, script := range []string{"sleep 300 & sleep 301", "sleep 302 &"} {
		for _, warm := range []bool{false, true} {
			driver.DropWarm.Do(ctx, d, "ct-run")
			if warm {
				_, err := driver.WarmExec.Do(ctx, d, "ct-run")
				must(t, err)
			}
			tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			code, err := d.Exec(tctx, "ct-run", driver.ExecSpec{Cmd: []string{"sh", "-c", script}, Timeout: time.Second})
			cancel()
			if err != nil || code != 124 {
				t.Fatalf("%q past its timeout (warm %v): code %d, %v; want 124", script, warm, code, err)
			}
			if got := sh(`for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null; echo; done | grep -cE "^sleep 30[012] $" || true`); got != "0\n" {
				t.Fatalf("%q (warm %v): %s sleeps left after its timeout", script, warm, strings.TrimSpace(got))
			}
		}
	}
	// No python3, no warm exec; commands run as before.
	sh("mv /usr/bin/python3 /usr/bin/python3.off")
	driver.DropWarm.Do(ctx, d, "ct-run")
	_, err := driver.WarmExec.Do(ctx, d, "ct-run")
	sh("mv /usr/bin/python3.off /usr/bin/python3")
	if err == nil {
		t.Fatal("WarmExec in a box without python3 said nothing")
	}
}

// rootShell runs scripts as root in box and returns their output; a
// script that fails fails the test.
func rootShell(t *testing.T, d driver.Driver, box string) func(string) string {
	return func(script string) string {
		t.Helper()
		var out, errb bytes.Buffer
		code, err := d.Exec(context.Background(), box, driver.ExecSpec{Cmd: []string{"sh", "-c", script}, User: "0", Stdout: &out, Stderr: &errb})
		must(t, err)
		if code != 0 {
			t.Fatalf("%s: code %d: %s", script, code, errb.String())
		}
		return out.String()
	}
}

// boxUser checks AsBoxUser on ct-run, where the driver has it: the code
// sees the box's files, not this machine's (a symlink to / included),
// what it makes is the box user's, and it can do nothing the box's user
// could not: root's files and folders refuse it. The process itself is
// unchanged after.
func boxUser(t *testing.T, d driver.Driver) {
	bu, ok := d.(driver.BoxUserFiles)
	if !ok {
		return
	}
	ctx := context.Background()
	// A driver that reaches some boxes' files this way and not others'
	// (a cluster: the boxes of this machine only) says so.
	if err := bu.AsBoxUser(ctx, "ct-run", 1000, func() error { return nil }); errors.Is(err, errors.ErrUnsupported) {
		return
	}
	sh := rootShell(t, d, "ct-run")
	sh("mkdir -p /tmp/bu && chown 1000:1000 /tmp/bu && echo secret > /tmp/rootonly && chmod 600 /tmp/rootonly && ln -sfn / /tmp/bu/up")
	boxHost := sh("cat /etc/hostname")
	hostOnly, err := os.CreateTemp("", "paddock-host-only-")
	must(t, err)
	hostOnly.Close()
	defer os.Remove(hostOnly.Name())
	var seen []string
	must(t, bu.AsBoxUser(ctx, "ct-run", 1000, func() error {
		for _, p := range []string{"/etc/hostname", "/tmp/bu/up/etc/hostname"} {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			seen = append(seen, string(b))
		}
		if _, err := os.Stat(hostOnly.Name()); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("a file of this machine's /tmp is seen: %v", err)
		}
		if err := os.WriteFile("/tmp/bu/made", []byte("x"), 0o640); err != nil {
			return err
		}
		if _, err := os.ReadFile("/tmp/rootonly"); !errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("reading root's 0600 file: %v, want permission denied", err)
		}
		if err := os.WriteFile("/etc/bu-made", nil, 0o644); !errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("writing into root's /etc: %v, want permission denied", err)
		}
		return nil
	}))
	if len(seen) != 2 || seen[0] != boxHost || seen[1] != boxHost {
		t.Fatalf("AsBoxUser read /etc/hostname as %q, the box says %q", seen, boxHost)
	}
	if got := sh("stat -c '%u %g %a' /tmp/bu/made; test -e /etc/bu-made || echo none"); got != "1000 1000 640\nnone\n" {
		t.Fatalf("what AsBoxUser made: %q", got)
	}
	// The engine's driver runs as root; a change of every thread's ids
	// (not the one thread's) would show here.
	if _, err := os.Stat(hostOnly.Name()); err != nil || os.Getuid() != 0 || os.Geteuid() != 0 {
		t.Fatalf("this process after AsBoxUser: uid %d euid %d, %v", os.Getuid(), os.Geteuid(), err)
	}
	if err := bu.AsBoxUser(ctx, "ct-run", 0, func() error { return nil }); err == nil {
		t.Fatal("AsBoxUser as the box's root: no error")
	}
	if err := bu.AsBoxUser(ctx, "ct-none", 1000, func() error { return nil }); err == nil {
		t.Fatal("AsBoxUser in a box that does not exist: no error")
	}
}

// usage checks BoxUsage on ct-run, where the driver has it: the CPU a
// command in the box spends (a fixed loop: some milliseconds on any
// machine) is counted, and the count does not go back; 32 MiB written
// into a process's memory shows, and so does the bound of 256 MiB and
// the processes; the kernel's kill of a process past the bound is
// counted; a box that does not exist is an error.
func usage(t *testing.T, d driver.Driver) {
	if !driver.BoxUsage.Has(d) {
		return
	}
	ctx := context.Background()
	sh := rootShell(t, d, "ct-run")
	before, err := driver.BoxUsage.Do(ctx, d, "ct-run")
	must(t, err)
	sh("i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")
	after, err := driver.BoxUsage.Do(ctx, d, "ct-run")
	must(t, err)
	if after.CPU-before.CPU < time.Millisecond {
		t.Fatalf("CPU before and after a loop of 200,000 steps in the box: %v, %v", before.CPU, after.CPU)
	}
	if after.MemoryLimit != 256<<20 {
		t.Fatalf("memory bound of a box made with 256 MiB: %d", after.MemoryLimit)
	}
	// A process that holds 32 MiB it wrote, until told.
	sh(`nohup python3 -c 'import os, time
b = b"x" * (32 << 20)
open("/tmp/held", "w").close()
while not os.path.exists("/tmp/free"): time.sleep(0.05)' >/dev/null 2>&1 &
while [ ! -e /tmp/held ]; do sleep 0.05; done`)
	held, err := driver.BoxUsage.Do(ctx, d, "ct-run")
	must(t, err)
	sh("touch /tmp/free")
	if held.Memory-after.Memory < 30<<20 {
		t.Fatalf("memory before and while a process holds 32 MiB: %d, %d", after.Memory, held.Memory)
	}
	if held.Processes < 2 || held.Processes > 64 {
		t.Fatalf("processes while the box runs its first process and one more: %d", held.Processes)
	}
	// Past the bound, the kernel kills the process (137), and it counts.
	var out bytes.Buffer
	code, err := d.Exec(ctx, "ct-run", driver.ExecSpec{Cmd: []string{"python3", "-c", `b = b"x" * (400 << 20)`}, Stdout: &out, Stderr: &out})
	must(t, err)
	if code != 137 {
		t.Fatalf("a process that writes 400 MiB in a box of 256: code %d, %s", code, out.String())
	}
	killed, err := driver.BoxUsage.Do(ctx, d, "ct-run")
	must(t, err)
	if killed.OOMKills <= held.OOMKills {
		t.Fatalf("OOM kills before and after a process was killed for the box's bound: %d, %d", held.OOMKills, killed.OOMKills)
	}
	if _, err := driver.BoxUsage.Do(ctx, d, "ct-none"); err == nil {
		t.Fatal("BoxUsage of a box that does not exist: no error")
	}
}

// tarEntries reads a tar stream: each entry's name, and its contents (a
// link's target).
func tarEntries(t *testing.T, r io.Reader) map[string]string {
	t.Helper()
	got := map[string]string{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return got
		}
		must(t, err)
		body, _ := io.ReadAll(tr)
		got[h.Name] = string(body) + h.Linkname
	}
}

// userFiles checks driver.UserFiles on ct-run, where the driver has it: a
// push's folder (an existing one, one to make, a file in the way, root's
// folder), an archive unpacked and merged as the box's user, one refused
// for an entry that climbs out (nothing written, nothing left), a merge
// blocked by root's folder (named, the stage left for a merge as root),
// and a pull packed as the box's user (what it may not read named, a
// missing path ErrNotFound).
func userFiles(t *testing.T, d driver.Driver) {
	uf, ok := d.(driver.UserFiles)
	if !ok {
		return
	}
	ctx := context.Background()
	sh := rootShell(t, d, "ct-run")
	sh("mkdir -p /tmp/uf /tmp/uf/rootdir && chown 1000:1000 /tmp/uf && echo f > /tmp/uf/file && echo secret > /tmp/uf/secret && chmod 600 /tmp/uf/secret")
	for _, c := range []struct {
		dir, folder, notFolder string
		writable               bool
	}{
		{"/tmp/uf", "/tmp/uf", "", true},
		{"/tmp/uf/new/deeper", "/tmp/uf", "", true},
		{"/tmp/uf/file/x", "", "/tmp/uf/file", false},
		{"/tmp/uf/rootdir/x", "/tmp/uf/rootdir", "", false},
	} {
		folder, notFolder, writable, err := uf.PushFolder(ctx, "ct-run", 1000, c.dir)
		must(t, err)
		if folder != c.folder || notFolder != c.notFolder || writable != c.writable {
			t.Fatalf("PushFolder %s: %q %q %v; want %q %q %v", c.dir, folder, notFolder, writable, c.folder, c.notFolder, c.writable)
		}
	}
	tarOf := func(entries ...string) io.Reader {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, name := range entries {
			tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(name)), Typeflag: tar.TypeReg})
			tw.Write([]byte(name))
		}
		tw.Close()
		return &b
	}
	blocked, left, err := uf.UnpackAsUser(ctx, "ct-run", 1000, "/tmp/uf/.stage1", "/tmp/uf/new/deeper", 1<<20, tarOf("a.txt", "sub/b.txt"))
	must(t, err)
	if blocked != "" || left {
		t.Fatalf("UnpackAsUser: blocked %q, left %v", blocked, left)
	}
	if got := sh("cat /tmp/uf/new/deeper/a.txt /tmp/uf/new/deeper/sub/b.txt; echo; stat -c '%u' /tmp/uf/new/deeper/sub/b.txt; ls -a /tmp/uf | grep -c stage || true"); got != "a.txtsub/b.txt\n1000\n0\n" {
		t.Fatalf("what the push made: %q", got)
	}
	_, left, err = uf.UnpackAsUser(ctx, "ct-run", 1000, "/tmp/uf/.stage2", "/tmp/uf/new", 1<<20, tarOf("ok.txt", "../../escaped.txt"))
	if !errors.Is(err, archive.ErrUnsafe) || left {
		t.Fatalf("an entry that climbs out: left %v, %v; want archive.ErrUnsafe", left, err)
	}
	if got := sh("ls /tmp/uf/new; ls -a /tmp/uf | grep -c stage; ls /tmp/escaped.txt /tmp/uf/escaped.txt 2>/dev/null || true"); got != "deeper\n0\n" {
		t.Fatalf("after a refused archive: %q", got)
	}
	_, _, err = uf.UnpackAsUser(ctx, "ct-run", 1000, "/tmp/uf/.stage3", "/tmp/uf", 10, tarOf("big-enough-to-pass-ten-bytes"))
	if !errors.Is(err, archive.ErrTooBig) {
		t.Fatalf("an archive over its bound: %v; want archive.ErrTooBig", err)
	}
	blocked, left, err = uf.UnpackAsUser(ctx, "ct-run", 1000, "/tmp/uf/.stage4", "/tmp/uf", 1<<20, tarOf("rootdir/in.txt"))
	must(t, err)
	if blocked == "" || !left || sh("test -d /tmp/uf/.stage4 && echo kept") != "kept\n" {
		t.Fatalf("a merge into root's folder: blocked %q, left %v", blocked, left)
	}
	unreadable, err := uf.Unreadable(ctx, "ct-run", 1000, "/tmp/uf")
	must(t, err)
	if unreadable != "/tmp/uf/secret" {
		t.Fatalf("Unreadable /tmp/uf: %q, want /tmp/uf/secret", unreadable)
	}
	if _, err := uf.Unreadable(ctx, "ct-run", 1000, "/tmp/uf/none"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("Unreadable of a missing path: %v, want ErrNotFound", err)
	}
	rc, err := uf.PackAsUser(ctx, "ct-run", 1000, "/tmp/uf/new")
	must(t, err)
	defer rc.Close()
	got := tarEntries(t, rc)
	if got["new/deeper/a.txt"] != "a.txt" || got["new/deeper/sub/b.txt"] != "sub/b.txt" {
		t.Fatalf("PackAsUser /tmp/uf/new: %q", got)
	}
}

// hostname checks SetHostname on ct-run, where the driver has it: what the
// kernel, /etc/hostname and /etc/hosts say in the box, and that the box
// answers to the new name and no longer to the old one.
func hostname(t *testing.T, d driver.Driver) {
	if !driver.SetHostname.Has(d) {
		return
	}
	ctx := context.Background()
	_, err := driver.SetHostname.Do(ctx, d, driver.BoxHostname{Box: "ct-run", Hostname: "renamed"})
	must(t, err)
	var out, errb bytes.Buffer
	code, err := d.Exec(ctx, "ct-run", driver.ExecSpec{
		Cmd:    []string{"sh", "-c", `hostname; cat /etc/hostname; grep -c -w renamed /etc/hosts; grep -c -w ct-run /etc/hosts; getent hosts renamed >/dev/null && echo resolves`},
		Stdout: &out, Stderr: &errb,
	})
	must(t, err)
	if want := "renamed\nrenamed\n1\n0\nresolves\n"; out.String() != want {
		t.Fatalf("after SetHostname: exit %d, %q (stderr %q), want %q", code, out.String(), errb.String(), want)
	}
	if _, err := driver.SetHostname.Do(ctx, d, driver.BoxHostname{Box: "ct-none", Hostname: "x"}); err == nil {
		t.Fatal("SetHostname of a box that does not exist: no error")
	}
}

// volumes checks ReadVolume and WriteVolume on drive, which ct-run mounts
// at /mnt/ct-drive.
func volumes(t *testing.T, d driver.Driver, image string, drive driver.VolumeRef) {
	ctx := context.Background()
	sh := rootShell(t, d, "ct-run")
	sh("cd /mnt/ct-drive && echo alpha > a.txt && mkdir sub && echo beta > sub/b.txt && ln -s a.txt link && echo hidden > .dot")

	rc, err := d.ReadVolume(ctx, drive, image)
	must(t, err)
	got := tarEntries(t, rc)
	rc.Close()
	want := map[string]string{"a.txt": "alpha\n", "sub/": "", "sub/b.txt": "beta\n", "link": "a.txt", ".dot": "hidden\n"}
	if len(got) != len(want) {
		t.Fatalf("ReadVolume gave %q, want %q", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("ReadVolume gave %q, want %q", got, want)
		}
	}

	var next bytes.Buffer
	tw := tar.NewWriter(&next)
	tw.WriteHeader(&tar.Header{Name: "new.txt", Mode: 0o644, Size: 4, Typeflag: tar.TypeReg})
	tw.Write([]byte("new\n"))
	tw.WriteHeader(&tar.Header{Name: ".env", Mode: 0o600, Size: 2, Typeflag: tar.TypeReg, Uid: 1000, Gid: 1000})
	tw.Write([]byte("x\n"))
	tw.WriteHeader(&tar.Header{Name: "sub2/", Mode: 0o750, Typeflag: tar.TypeDir, Uid: 1000, Gid: 1000})
	tw.WriteHeader(&tar.Header{Name: "sub2/c.txt", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	tw.Write([]byte("c\n"))
	tw.Close()
	// Links the box left that point at a folder of this machine (as
	// their text: in the box they point at nothing) are removed, not
	// followed: the folder keeps its file.
	host := t.TempDir()
	must(t, os.WriteFile(host+"/keep", []byte("k"), 0o644))
	sh("cd /mnt/ct-drive && ln -s " + host + " out && mkdir deep && ln -s " + host + "/keep deep/in && ln -s " + host + " deep/dir")
	must(t, d.WriteVolume(ctx, drive, image, &next))
	if _, err := os.Stat(host + "/keep"); err != nil {
		t.Fatalf("WriteVolume reached this machine's folder through the box's links: %v", err)
	}
	if got := sh("cd /mnt/ct-drive && find . | sort && cat new.txt sub2/c.txt"); got != ".\n./.env\n./new.txt\n./sub2\n./sub2/c.txt\nnew\nc\n" {
		t.Fatalf("after WriteVolume the drive holds:\n%s", got)
	}
	// Owners and modes are as the archive says, as the box sees them.
	if got := sh("cd /mnt/ct-drive && stat -c '%n %u %g %a' .env sub2 new.txt"); got != ".env 1000 1000 600\nsub2 1000 1000 750\nnew.txt 0 0 644\n" {
		t.Fatalf("after WriteVolume the drive's owners and modes are:\n%s", got)
	}

	// A broken archive leaves the volume as it was.
	if err := d.WriteVolume(ctx, drive, image, strings.NewReader("not a tar archive, not at all")); err == nil {
		t.Fatal("WriteVolume took a broken archive")
	}
	if got := sh("cd /mnt/ct-drive && find . | sort"); got != ".\n./.env\n./new.txt\n./sub2\n./sub2/c.txt\n" {
		t.Fatalf("after a failed WriteVolume the drive holds:\n%s", got)
	}

	// What a crash left of a WriteVolume (its staging folder) goes; the
	// contents stay.
	sh("mkdir -p /mnt/ct-drive/.paddock-restore-0badf00d/half && touch /mnt/ct-drive/.paddock-restore-0badf00d/half/x")
	must(t, d.CleanVolume(ctx, drive, image))
	if got := sh("cd /mnt/ct-drive && find . | sort"); got != ".\n./.env\n./new.txt\n./sub2\n./sub2/c.txt\n" {
		t.Fatalf("after CleanVolume the drive holds:\n%s", got)
	}

	missing := driver.VolumeRef{Kind: driver.KindDrive, Name: "ct-none"}
	if _, err := d.ReadVolume(ctx, missing, image); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("ReadVolume of a missing volume: %v, want ErrNotFound", err)
	}
	if err := d.WriteVolume(ctx, missing, image, &next); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("WriteVolume of a missing volume: %v, want ErrNotFound", err)
	}
}
