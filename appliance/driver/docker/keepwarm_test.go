package docker_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/docker"
)

// With KeepWarm, a box that has run a command keeps one warm exec: after
// a command the usual way, after a warm one, after commands back to back
// there is one waiting program, no more; the commands after the first
// run in it, back to back too, and none of them starts another. Commands
// side by side leave at most 1+maxSpare (4); two at a time, again and
// again, soon run both warm, and then start none. A box that cannot
// start one is not asked again after each command; a stop ends them;
// Close ends them all.
func TestKeepWarm(t *testing.T) {
	d, image := engine(t, func(c *docker.Config) { c.KeepWarm = true })
	ctx := context.Background()
	box, ctr := runningBox(t, d, image, "kw")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	run := func(script string) string {
		t.Helper()
		var out, errb bytes.Buffer
		code, err := d.Exec(ctx, box, driver.ExecSpec{Cmd: []string{"sh", "-c", script}, Stdout: &out, Stderr: &errb})
		if err != nil || code != 0 {
			t.Fatalf("%s: code %d, %v: %s", script, code, err, errb.String())
		}
		return out.String()
	}
	// The box's waiting programs, seen from outside (an Exec would take
	// one); not their spawners (forked, a program's children).
	waiting := func() int {
		t.Helper()
		out := raw(t, "docker", "exec", ctr, "sh", "-c", `prog() { tr "\0" " " 2>/dev/null <"$1/cmdline" | grep -q "^[^ ]*python3[^ ]* -c # paddock: "; }
for p in /proc/[0-9]*; do prog $p && ! prog /proc/$(cut -d" " -f4 $p/stat) && echo program; done | grep -c program || true`)
		n, err := strconv.Atoi(strings.TrimSpace(out))
		must(err)
		return n
	}
	// settlesWithin waits for the count to be from lo to hi and stay so
	// for a moment.
	settlesWithin := func(lo, hi int, why string) {
		t.Helper()
		same := 0
		for i := 0; i < 100 && same < 3; i++ {
			if n := waiting(); n >= lo && n <= hi {
				same++
			} else {
				same = 0
			}
			time.Sleep(100 * time.Millisecond)
		}
		if same < 3 {
			t.Fatalf("%s: %d waiting programs, want %d to %d", why, waiting(), lo, hi)
		}
	}
	// settles waits for the count to be want and stay so for a moment.
	settles := func(want int, why string) {
		t.Helper()
		settlesWithin(want, want, why)
	}
	// Whether the warm exec's program started the command.
	const warm = `tr '\0' ' ' 2>/dev/null </proc/$PPID/cmdline | grep -q '# paddock:' && echo warm || echo cold`

	if got := run(warm); got != "cold\n" {
		t.Fatalf("first command: %q, want it run the usual way", got)
	}
	settles(1, "after a command the usual way")
	if got := run(warm); got != "warm\n" {
		t.Fatalf("second command: %q, want it run warm", got)
	}
	settles(1, "after a warm command")
	raw(t, "docker", "exec", ctr, "sh", "-c", `mv /usr/bin/python3 /usr/bin/python3.real && printf '#!/bin/sh\necho x >>/tmp/starts\nexec /usr/bin/python3.real "$@"\n' >/usr/bin/python3 && chmod 755 /usr/bin/python3`)
	for i := 0; i < 8; i++ {
		if got := run(fmt.Sprintf("echo %d; %s", i, warm)); got != fmt.Sprintf("%d\nwarm\n", i) {
			t.Fatalf("back to back, command %d: %q", i, got)
		}
	}
	settles(1, "after eight commands back to back")
	if got := raw(t, "docker", "exec", ctr, "sh", "-c", "cat /tmp/starts 2>/dev/null || true"); got != "" {
		t.Fatalf("warm execs started by eight commands back to back: %q, want none", got)
	}
	raw(t, "docker", "exec", ctr, "mv", "/usr/bin/python3.real", "/usr/bin/python3")
	var wg sync.WaitGroup
	outs := make([]string, 6)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			d.Exec(ctx, box, driver.ExecSpec{Cmd: []string{"sh", "-c", fmt.Sprintf("echo %d", i)}, Stdout: &out})
			outs[i] = out.String()
		}()
	}
	wg.Wait()
	for i, o := range outs {
		if o != fmt.Sprintf("%d\n", i) {
			t.Fatalf("side by side, command %d: %q", i, o)
		}
	}
	settlesWithin(1, 4, "after six commands side by side")
	// Two at a time: a few rounds to have two warm execs, then rounds in
	// which both run warm and no program starts.
	pair := func() [2]string {
		var got [2]string
		var wg sync.WaitGroup
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var out bytes.Buffer
				d.Exec(ctx, box, driver.ExecSpec{Cmd: []string{"sh", "-c", "sleep 0.2; " + warm}, Stdout: &out})
				got[i] = out.String()
			}()
		}
		wg.Wait()
		return got
	}
	// A warm exec that starts slower than a command runs the usual way
	// (a busy machine's): the rounds that warm them up still end with
	// two, not one warm and one not for good.
	raw(t, "docker", "exec", ctr, "sh", "-c", `mv /usr/bin/python3 /usr/bin/python3.real && printf '#!/bin/sh
sleep 1
exec /usr/bin/python3.real "$@"
' >/usr/bin/python3 && chmod 755 /usr/bin/python3`)
	d.DropWarm(box)
	run("true")
	for i := 0; i < 4; i++ {
		pair()
	}
	// Both up before starts are counted, however long a start takes here.
	// Two, or three: a spare started for a command that ran beside the
	// other may come up as that command's own program is handed back (the
	// machine's speed decides; a box keeps up to maxSpare). Never one warm
	// and one cold for good: the rounds below run both warm.
	settlesWithin(2, 3, "after rounds of two side by side to warm them")
	raw(t, "docker", "exec", ctr, "mv", "/usr/bin/python3.real", "/usr/bin/python3")
	raw(t, "docker", "exec", ctr, "sh", "-c", `rm -f /tmp/starts; mv /usr/bin/python3 /usr/bin/python3.real && printf '#!/bin/sh\necho x >>/tmp/starts\nexec /usr/bin/python3.real "$@"\n' >/usr/bin/python3 && chmod 755 /usr/bin/python3`)
	for i := 0; i < 5; i++ {
		if got := pair(); got != [2]string{"warm\n", "warm\n"} {
			t.Fatalf("two side by side, round %d: %q, want both warm", i, got)
		}
	}
	if got := raw(t, "docker", "exec", ctr, "sh", "-c", "cat /tmp/starts 2>/dev/null || true"); got != "" {
		t.Fatalf("warm execs started by five rounds of two side by side: %q, want none", got)
	}
	raw(t, "docker", "exec", ctr, "mv", "/usr/bin/python3.real", "/usr/bin/python3")
	settlesWithin(2, 3, "after rounds of two side by side")

	// A box where the program cannot start is tried once, not after
	// every command.
	raw(t, "docker", "exec", ctr, "sh", "-c", `mv /usr/bin/python3 /usr/bin/python3.off && printf '#!/bin/sh\necho x >>/tmp/tries\nexit 1\n' >/usr/bin/python3 && chmod 755 /usr/bin/python3`)
	d.DropWarm(box)
	for i := 0; i < 4; i++ {
		run("true")
	}
	time.Sleep(time.Second)
	if got := raw(t, "docker", "exec", ctr, "cat", "/tmp/tries"); got != "x\n" {
		t.Fatalf("tries of a warm exec that cannot start: %q, want one", got)
	}
	raw(t, "docker", "exec", ctr, "mv", "/usr/bin/python3.off", "/usr/bin/python3")
	// A start of the box is a fresh start.
	must(d.StopBox(ctx, box))
	must(d.StartBox(ctx, box))
	run("true")
	settles(1, "after a restart of the box")

	// The program killed in the box while it runs a command: that
	// command's exit code is lost, and the error says so; the next
	// command runs.
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, err := d.Exec(ctx, box, driver.ExecSpec{Cmd: []string{"sh", "-c", "{ " + warm + "; } >/tmp/how; sleep 30"}})
		done <- err
	}()
	for i := 0; raw(t, "docker", "exec", ctr, "sh", "-c", "pgrep -fx 'sleep 30' || true") == ""; i++ {
		if i == 100 {
			t.Fatal("the command did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := raw(t, "docker", "exec", ctr, "cat", "/tmp/how"); got != "warm\n" {
		t.Fatalf("the command to be cut off ran %q, want warm", got)
	}
	raw(t, "docker", "exec", ctr, "pkill", "-9", "-f", "# paddock: this box's commands")
	if err := <-done; err == nil || !strings.Contains(err.Error(), "its exit code is not known") {
		t.Fatalf("a command whose warm exec was killed: %v, want its exit code said unknown", err)
	}
	run("true")

	must(d.Close())
	settles(0, "after Close")
}

// raw runs a command on this machine and returns its output.
func raw(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// A commit pauses the box; an exec the runtime starts meanwhile hangs, and
// the engine with it. Commands side by side with snapshots, and the warm
// execs they start behind them, must leave every snapshot and command
// done. (Should the engine hang, the box is thawed by hand so that the
// tests after this one still have an engine.)
func TestSnapshotsBesideExecs(t *testing.T) {
	d, image := engine(t, func(c *docker.Config) { c.KeepWarm = true })
	ctx := context.Background()
	box, ctr := runningBox(t, d, image, "sx")
	for i := 0; i < 12; i++ {
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for j := 0; j < 3; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(j*30) * time.Millisecond)
				cctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				if code, err := d.Exec(cctx, box, driver.ExecSpec{Cmd: []string{"true"}}); err != nil || code != 0 {
					errs <- fmt.Errorf("exec: code %d, %v", code, err)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i*10) * time.Millisecond)
			sctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := d.Snapshot(sctx, box, fmt.Sprintf("%s-%d", box, i)); err != nil {
				errs <- fmt.Errorf("snapshot: %v", err)
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			thaw(ctr)
			t.Fatalf("round %d: %v", i, err)
		}
	}
}

// thaw thaws the container's cgroup (cgroup v1 freezer or v2).
func thaw(ctr string) {
	for _, f := range []string{"/sys/fs/cgroup/freezer/docker/" + ctr + "/freezer.state", "/sys/fs/cgroup/docker/" + ctr + "/cgroup.freeze", "/sys/fs/cgroup/system.slice/docker-" + ctr + ".scope/cgroup.freeze"} {
		v := "0"
		if strings.HasSuffix(f, "state") {
			v = "THAWED"
		}
		os.WriteFile(f, []byte(v), 0o644)
	}
}
