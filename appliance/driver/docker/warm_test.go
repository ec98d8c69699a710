package docker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver/docker/procs"
	"github.com/paddock-dev/paddock/appliance/driver/docker/procs/procstest"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// scriptPeer runs warmScript on this machine and speaks its frames, as
// paddockd does over the engine's stream.
type scriptPeer struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	cg   string
	user string // whom its commands run as
}

// searchable is a PATH for the program's commands that every user may
// search (python3 here may come with its own, in root's home).
var searchable = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}

// scriptUsers are the users the program's tests run commands as: root
// (the program's own ids) and another (through its spawner).
var scriptUsers = []string{"0", "65534"}

// sharedDir is a folder that every scriptUsers user may write in.
func sharedDir(t *testing.T) string {
	d, err := os.MkdirTemp("", "warm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	return d
}

func startScript(t *testing.T, user string) *scriptPeer {
	t.Helper()
	python := harness.Tool(t, "python3") // runs the warm exec's program
	harness.NeedRoot(t, "the warm exec's program takes the command's user")
	args := []string{"-c", warmScript, "0"}
	if user != "0" {
		args = append(args, user) // the box's user: its spawner starts at once
	}
	c := exec.Command(python, args...)
	// root's ids as the engine gives them (its group among its groups):
	// its commands then start from the program itself, others' from a
	// spawner.
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{0}}}
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); c.Process.Kill(); c.Wait() })
	// In a cgroup of its own, as in a box: only there may a timeout's
	// signal go.
	p := &scriptPeer{t: t, cmd: c, in: in, out: bufio.NewReader(out), cg: procstest.CgroupFor(t, c.Process.Pid), user: user}
	if m, _ := p.recv(); m != 'R' {
		t.Fatalf("first frame %q, want R", m)
	}
	return p
}

func (p *scriptPeer) send(typ byte, b []byte) {
	p.t.Helper()
	m := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(m[1:], uint32(len(b)))
	if _, err := p.in.Write(append(m, b...)); err != nil {
		p.t.Fatal(err)
	}
}

func (p *scriptPeer) recv() (byte, []byte) {
	p.t.Helper()
	var h [5]byte
	if _, err := io.ReadFull(p.out, h[:]); err != nil {
		p.t.Fatalf("reading a frame: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(h[1:]))
	if _, err := io.ReadFull(p.out, b); err != nil {
		p.t.Fatalf("reading a frame: %v", err)
	}
	return h[0], b
}

// run hands the program a command (as p.user) and returns what it said:
// "N", or its stdout, stderr and code.
func (p *scriptPeer) run(script string, input ...string) string {
	p.t.Helper()
	// A command that has not ended in a minute never will: the program
	// is stopped, and the test fails at once rather than at its timeout.
	defer time.AfterFunc(time.Minute, func() { p.cmd.Process.Kill() }).Stop()
	b, _ := json.Marshal(warmCommand{User: p.user, Env: searchable, Cmd: []string{"sh", "-c", script}})
	p.send('r', b)
	if m, _ := p.recv(); m != 'G' {
		return string(m)
	}
	for _, s := range input {
		p.send('i', []byte(s))
	}
	p.send('c', nil)
	var out, errb bytes.Buffer
	for {
		m, b := p.recv()
		switch m {
		case 'o':
			out.Write(b)
		case 'e':
			errb.Write(b)
		case 'x':
			return fmt.Sprintf("out %q err %q code %d", out.String(), errb.String(), binary.BigEndian.Uint32(b))
		default:
			p.t.Fatalf("frame %q during a command", m)
		}
	}
}

// The warm exec's program runs commands one after another: their input,
// output and exit code (128 + a signal that ended one) each their own;
// frames left over from a command that ended are skipped; what it cannot
// start is refused, and it serves the next; it waits for output that a
// command's background process holds open, as the engine does; a command
// that reads none of a large input still ends; when paddockd goes away
// mid-command, it waits for the command and exits without a word. As
// root and as another user.
func TestWarmScriptServesCommandsInTurn(t *testing.T) {
	for _, user := range scriptUsers {
		t.Run("user-"+user, func(t *testing.T) { servesCommandsInTurn(t, user) })
	}
}

func servesCommandsInTurn(t *testing.T, user string) {
	p := startScript(t, user)
	want := func(got, want string) {
		t.Helper()
		if got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
	spawner := 0
	if user != "0" {
		// The spawner, started with the program (its only child before
		// any command), holds nothing but its socket to the program and
		// /dev/null: not the program's stream, through which the user's
		// processes could otherwise answer for root's commands.
		kids := procs.ChildrenOf(p.cmd.Process.Pid)
		if len(kids) != 1 {
			t.Fatalf("the program's children before any command: %v, want its spawner", kids)
		}
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", kids[0]))
		if err != nil {
			t.Fatal(err)
		}
		// (It may still hold the pidfd of the command it ran as it
		// started: its own child's.)
		var held []string
		n := 0
		for _, fd := range fds {
			l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", kids[0], fd.Name()))
			switch {
			case errors.Is(err, os.ErrNotExist):
				// Closed between the listing and its reading: a file
				// the spawner had for a moment as it started, not held.
			case l == "anon_inode:[pidfd]":
			case l == "/dev/null" || strings.HasPrefix(l, "socket:"):
				n++
			default:
				held = append(held, fd.Name()+" "+l)
			}
		}
		if len(held) > 0 || n != 4 {
			t.Fatalf("the spawner holds %d files, want /dev/null (0, 1, 2) and its socket; not those: %v", n, held)
		}
		// The user's processes may signal it (pkill python3): what would
		// end a process it outlives, and it serves on.
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1} {
			if err := syscall.Kill(kids[0], sig); err != nil {
				t.Fatal(err)
			}
		}
		spawner = kids[0]
	}
	want(p.run("cat; echo err >&2; exit 3", "hel", "lo\n"), `out "hello\n" err "err\n" code 3`)
	if now := procs.ChildrenOf(p.cmd.Process.Pid); spawner != 0 && (len(now) != 1 || now[0] != spawner) {
		t.Fatalf("after the signals and a command, the program's children are %v, want its spawner %d", now, spawner)
	}
	// Input for a command that has ended, as a slow reader of the caller's
	// input may send it.
	p.send('i', []byte("stale\n"))
	p.send('c', nil)
	want(p.run("cat", "fresh\n"), `out "fresh\n" err "" code 0`)
	want(p.run("exec nosuchcmd"), `out "" err "sh: 1: exec: nosuchcmd: not found\n" code 127`)
	b, _ := json.Marshal(warmCommand{User: "nosuchuser", Cmd: []string{"true"}})
	p.send('r', b)
	if m, _ := p.recv(); m != 'N' {
		t.Fatalf("a user it cannot find: %q, want N", m)
	}
	b, _ = json.Marshal(warmCommand{User: user, Env: searchable, Cmd: []string{"nosuchcmd"}})
	p.send('r', b)
	if m, _ := p.recv(); m != 'N' {
		t.Fatalf("a command it cannot find: %q, want N", m)
	}
	want(p.run("kill -9 $$"), `out "" err "" code 137`)
	want(p.run("(sleep 0.3; echo late) & echo now"), `out "now\nlate\n" err "" code 0`)
	want(p.run("test $$ = $(cut -d' ' -f6 /proc/$$/stat) && echo leads"), `out "leads\n" err "" code 0`)
	// 2 MiB of input to a command that reads none.
	big := strings.Repeat("x", 64<<10)
	go func() {
		for range 32 {
			p.send('i', []byte(big))
		}
		p.send('c', nil)
	}()
	b, _ = json.Marshal(warmCommand{User: user, Env: searchable, Cmd: []string{"sh", "-c", "sleep 0.2; echo done"}})
	p.send('r', b)
	if m, _ := p.recv(); m != 'G' {
		t.Fatalf("%q", m)
	}
	if m, b := p.recv(); m != 'o' || string(b) != "done\n" {
		t.Fatalf("%q %q", m, b)
	}
	if m, b := p.recv(); m != 'x' || binary.BigEndian.Uint32(b) != 0 {
		t.Fatalf("%q %q", m, b)
	}
	time.Sleep(200 * time.Millisecond)
	want(p.run("echo after"), `out "after\n" err "" code 0`)
	// A command that has ended while a process of its group holds its
	// output open: the program keeps the child unreaped, so its group can
	// still be signalled (a timeout's way), and the exit comes then, not
	// when the background process would have ended (an hour on).
	b, _ = json.Marshal(warmCommand{User: user, Env: searchable, Cmd: []string{"sh", "-c", "sleep 3600 &"}})
	p.send('r', b)
	if m, _ := p.recv(); m != 'G' {
		t.Fatalf("%q", m)
	}
	p.send('c', nil)
	time.Sleep(300 * time.Millisecond)
	w := &warmExec{pid: p.cmd.Process.Pid, cg: p.cg}
	if kids := procs.ChildrenOf(w.pid); len(kids) != 1 {
		t.Fatalf("children of the program while a command's output is open: %v, want its child", kids)
	}
	w.signal(syscall.SIGKILL)
	// The background sleep's hour is far beyond this: only the kill ends
	// the wait within it.
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		if m, b := p.recv(); m != 'x' || binary.BigEndian.Uint32(b) != 0 {
			t.Errorf("after its group was killed: %q %q", m, b)
		}
	}()
	select {
	case <-exited:
	case <-time.After(5 * time.Minute):
		t.Fatal("the command's group was killed and its exit did not come")
	}
	// paddockd goes away while a command runs, after the command's end of
	// input: the program waits for the command (which marks its end in a
	// file), says nothing, and exits.
	mark := sharedDir(t) + "/ended"
	b, _ = json.Marshal(warmCommand{User: user, Env: searchable, Cmd: []string{"sh", "-c", "read x; sleep 1; echo unheard; touch " + mark}})
	p.send('r', b)
	if m, _ := p.recv(); m != 'G' {
		t.Fatalf("%q", m)
	}
	p.send('i', []byte("line\n"))
	p.send('c', nil)
	p.in.Close()
	rest, _ := io.ReadAll(p.out)
	p.cmd.Wait()
	if _, err := os.Stat(mark); len(rest) != 0 || err != nil {
		t.Fatalf("after paddockd went away: %q; the command's end: %v", rest, err)
	}
}

// paddockd goes away before a command's end of input: that is no end of
// input, so the program kills the command's group (it never reads one),
// says nothing, and exits. As root and as another user.
func TestWarmScriptKillsACommandWhoseInputIsCut(t *testing.T) {
	for _, user := range scriptUsers {
		t.Run("user-"+user, func(t *testing.T) { killsACommandWhoseInputIsCut(t, user) })
	}
}

func killsACommandWhoseInputIsCut(t *testing.T, user string) {
	p := startScript(t, user)
	mark := sharedDir(t) + "/ended"
	b, _ := json.Marshal(warmCommand{User: user, Env: searchable, Cmd: []string{"sh", "-c", "read x; echo unheard; touch " + mark}})
	p.send('r', b)
	if m, _ := p.recv(); m != 'G' {
		t.Fatalf("%q", m)
	}
	p.send('i', []byte("half a li"))
	p.in.Close()
	rest, _ := io.ReadAll(p.out)
	p.cmd.Wait()
	if _, err := os.Stat(mark); len(rest) != 0 || err == nil {
		t.Fatalf("after paddockd went away mid-input: %q; the command ran on and marked its end", rest)
	}
}

// stdoutOf reads an exec's stdout out of the engine's frames, whole across
// frames, and skips its stderr.
func TestStdoutOfSkipsStderr(t *testing.T) {
	frame := func(stream byte, s string) []byte {
		h := []byte{stream, 0, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(h[4:], uint32(len(s)))
		return append(h, s...)
	}
	var in []byte
	for _, f := range [][]byte{frame(2, "err first\n"), frame(1, "out "), frame(1, ""), frame(2, "err"), frame(1, "and more\n")} {
		in = append(in, f...)
	}
	got, err := io.ReadAll(&stdoutOf{r: bytes.NewReader(in)})
	if err != nil || string(got) != "out and more\n" {
		t.Fatalf("%q, %v", got, err)
	}
}
