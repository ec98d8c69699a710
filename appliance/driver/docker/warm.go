package docker

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/docker/procs"
)

// Warm execs.
//
// Most of an exec's time is the runtime starting a process in the box
// (runc's two process starts and its seccomp filter: 80 to 100 ms on two
// cores), not the command. A warm exec is that process started ahead:
// an engine exec, as root, of a small Python program (warmScript) that
// says it is up and then waits on its stdin for commands, one at a time.
// Exec hands it the command, user, environment and folder; the command
// gets the user's ids and groups, the folder and the environment as the
// engine would give them (without a group named, the user's groups from
// /etc/group and its own; HOME from /etc/passwd unless given), and leads
// a session of its own as an exec's process does.
//
// How it is started costs most of a warm command's time: a fork of the
// program, a Python interpreter, copies its page tables and then faults
// on every page either side writes (9 to 11 ms of CPU time a command in
// a 1-CPU box here; a vfork, which shares them until the exec, 1.9 ms).
// Python starts a command by vfork only when the ids stay as they are.
// So a command with the program's own ids (root's: the engine starts it
// as root) starts from the program itself; one of another user's starts
// from that user's spawner: a child of the program forked once, that
// took them and keeps them, and that is
// handed each command and its three pipes over a socket. The box's user's
// is started with the program, before it says it is up. A spawner holds
// nothing else of the program's (not its stream), takes the user's ids
// as the user's own processes have them (none can write to it, nor trace
// it: it changed ids), and says only whether the command started and how
// it ended; the program does not act on anything else it could say. One
// of other ids ends when another is needed; where none can be had (a
// Python without send_fds, a command too large for one message), the
// program forks a child that takes the ids itself, as before. Commands
// back to back: 6.4 ms p50 through the API, from 12.6 to 14.6.
//
// The program carries the command's
// input and output in frames over the exec's own stream, and its exit
// code (128 + the signal when a signal ended it, as the engine says) once
// the command has ended and its output has closed, as the engine waits
// for both. The command has the cgroup, namespaces, seccomp filter and
// capability bounds of every exec (its parent is one), and loses its
// capabilities when it takes a user other than root, as runc's do. A
// timeout signals its process group from this machine, as for any exec.
//
// Whatever the child cannot do as the runtime would (a user, folder or
// command it cannot find or run) it does not try further: the program
// says "no", and Exec runs the command the usual way, so errors read as
// they always do. A box whose image has no python3 gets no warm exec.
//
// A warm exec serves one Exec without a terminal at a time, and after it
// the next: commands back to back reuse it, and none of them waits for
// the runtime. Commands side by side in one box each need one: a box
// keeps, beside its warm exec, up to maxSpare more that served commands
// at the same time as another (a spare, handed to the next command
// before the box's own), so that a box whose commands run two or three
// at a time has them all warm, rather than each second command waiting
// for the runtime and each warm exec handed back thrown away for the one
// started meanwhile. One whose command's caller went away (its input and output
// with it) is not reused: the program waits for the command to end, and
// exits. The warm pool keeps one in each ready pool box, so that the first
// command of a claimed box does not wait for the runtime. With
// Config.KeepWarm, a box whose command ran the usual way (the first, or
// one beside a command that had the warm exec) has one started in the
// background as that command ends (keepWarm). An Exec that finds one
// being started waits for it; a second Exec at the same time does not
// wait, and starts its command the usual way. A box whose
// warm exec could not start gets none for warmRetry, or until it starts
// again. In ps, the program reads as python3 with this package's comment
// line, the parent of the commands it ran. A warm exec that is never used
// waits until its box stops, or until paddockd's connection to the engine
// closes (the program reads the end of its input and exits).
//
// Frames, both ways: a type byte, a 4-byte big-endian length, the data.
// To the program: r (a command, JSON), i (input), c (end of input). From
// it: R (up), G (the command started), N (run it the usual way), o and e
// (output), x (the exit code, 4 bytes). Frames of a command that has
// ended are skipped.

// warmScript is the program a warm exec runs (python3 -c; warm.py). Its first
// argument says whether the box's own environment lacks HOME (the runtime
// then gave it the root's, and the command gets its user's instead); a
// second names the box's user, whose spawner it starts before it says it
// is up.
//
//go:embed warm.py
var warmScript string

// warmExec is a started warm exec: its program's stream, its output read
// out of the engine's frames, and its process ID as this machine sees it.
type warmExec struct {
	att client.ExecAttachResult
	out *bufio.Reader
	pid int
	cg  string // the box's cgroup: where its commands' signals may go
	buf []byte

	mu    sync.Mutex // one frame at a time to the program
	cmd   uint64     // the command being served: frames of any other are not sent
	ended bool       // the command cmd has ended: send it nothing more
}

func newWarmExec(att client.ExecAttachResult) *warmExec {
	return &warmExec{att: att, out: bufio.NewReaderSize(&stdoutOf{r: att.Reader}, 64<<10)}
}

// stdoutOf reads what an exec wrote to its stdout out of the engine's
// multiplexed stream (stdcopy's frames), and skips its stderr (the warm
// exec's program's own errors).
type stdoutOf struct {
	r    io.Reader
	left int  // bytes of the current frame not read yet
	out  bool // the current frame is stdout's
}

func (s *stdoutOf) Read(p []byte) (int, error) {
	for s.left == 0 || !s.out {
		if s.left > 0 {
			if _, err := io.CopyN(io.Discard, s.r, int64(s.left)); err != nil {
				return 0, err
			}
		}
		var h [8]byte
		if _, err := io.ReadFull(s.r, h[:]); err != nil {
			return 0, err
		}
		s.out = h[0] == byte(stdcopy.Stdout)
		s.left = int(binary.BigEndian.Uint32(h[4:]))
	}
	n, err := s.r.Read(p[:min(len(p), s.left)])
	s.left -= n
	return n, err
}

// maxFrame bounds a frame from the program (its output frames are 64 KiB).
const maxFrame = 1 << 20

// send writes one frame to the program. A frame of a command (of > 0) is
// sent only while that command is the one served and has not ended
// (errEnded): the input of a command that ended must never reach the next
// one, whose input the program takes from the same stream.
func (w *warmExec) send(t byte, b []byte, of uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if of > 0 && (of != w.cmd || w.ended) {
		return errEnded
	}
	m := make([]byte, 5, 5+len(b))
	m[0] = t
	binary.BigEndian.PutUint32(m[1:], uint32(len(b)))
	_, err := w.att.Conn.Write(append(m, b...))
	return err
}

var errEnded = errors.New("the command has ended")

// recv reads one frame from the program; its data is valid until the next.
func (w *warmExec) recv() (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(w.out, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("a frame of %d bytes from the warm exec", n)
	}
	if cap(w.buf) < int(n) {
		w.buf = make([]byte, n)
	}
	b := w.buf[:n]
	if _, err := io.ReadFull(w.out, b); err != nil {
		return 0, nil, err
	}
	return h[0], b, nil
}

// warmSlot is a box's warm exec: being started, started (w until it is
// taken), or one that could not start (err).
type warmSlot struct {
	done    chan struct{} // closed when the start has ended
	w       *warmExec
	err     error
	retry   time.Time // a failed slot is tried again from then
	claimed bool      // an Exec waits for this one
}

// warmUpTimeout bounds a warm exec's start, up to its program saying it
// is up.
const warmUpTimeout = 10 * time.Second

// warmRetry is how long a box whose warm exec could not start goes
// without one (a start of the box ends that).
const warmRetry = 5 * time.Minute

// live says whether s stands for the box: a slot that failed stands
// until its retry time.
func (s *warmSlot) live() bool { return s != nil && (s.err == nil || time.Now().Before(s.retry)) }

// WarmExec starts a warm exec in the running box unless it has one (then
// it says false); the box's next Exec without a terminal uses it. One
// being started when it is called is waited for, and counts as its own
// (its error too). A box whose start failed less than warmRetry ago is
// not tried again: false, and that start's error.
func (d *Driver) WarmExec(ctx context.Context, box string) (bool, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return false, errors.New("the driver is closed")
	}
	s := d.warm[box]
	if !s.live() {
		s = d.newSlot(box)
		d.mu.Unlock()
		return d.fill(ctx, box, s)
	}
	d.mu.Unlock()
	select {
	case <-s.done: // there, or failed a while ago
		d.mu.Lock()
		defer d.mu.Unlock()
		return false, s.err
	default:
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return s.err == nil, s.err
}

// newSlot puts a new slot, to be filled, in the box's place (d.mu held).
func (d *Driver) newSlot(box string) *warmSlot {
	s := &warmSlot{done: make(chan struct{})}
	if d.warm == nil {
		d.warm = map[string]*warmSlot{}
	}
	d.warm[box] = s
	return s
}

// fill starts the warm exec of slot s and puts it in s, or the error.
func (d *Driver) fill(ctx context.Context, box string, s *warmSlot) (bool, error) {
	w, err := d.startWarm(ctx, box)
	d.mu.Lock()
	defer d.mu.Unlock()
	defer close(s.done)
	switch {
	case d.warm[box] != s: // dropped (the box stopped) while it started
		if w != nil {
			w.att.Close()
		}
		return false, nil
	case err != nil && ctx.Err() != nil: // not the box's doing
		delete(d.warm, box)
		return false, err
	case err != nil:
		s.err, s.retry = err, time.Now().Add(warmRetry)
		return false, err
	}
	s.w = w
	return true, nil
}

// execPID is the process ID (as this machine sees it) of exec id, which
// runs: asked again while the engine says 0, within ctx.
func (d *Driver) execPID(ctx context.Context, id string) (int, error) {
	for {
		ei, err := d.c.ExecInspect(ctx, id, client.ExecInspectOptions{})
		if err != nil {
			return 0, err
		}
		if ei.PID > 0 {
			return ei.PID, nil
		}
		if !ei.Running && ei.ExitCode != 0 {
			return 0, fmt.Errorf("it ended (exit %d)", ei.ExitCode)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("the engine did not say its process ID: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// startWarm starts a warm exec in the box and waits for its program to
// say it is up.
func (d *Driver) startWarm(ctx context.Context, box string) (*warmExec, error) {
	ctx, cancel := context.WithTimeout(ctx, warmUpTimeout)
	defer cancel()
	name := d.containerName(box)
	ins, err := d.c.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		return nil, wrap(err)
	}
	noHome := "1"
	if ins.Container.Config != nil {
		for _, e := range ins.Container.Config.Env {
			if strings.HasPrefix(e, "HOME=") {
				noHome = "0"
			}
		}
	}
	// Up to its "R" the runtime is starting it: no commit then (Snapshot).
	g := d.gate(box)
	g.RLock()
	defer g.RUnlock()
	cr, err := d.c.ExecCreate(ctx, name, client.ExecCreateOptions{
		User: "0", AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Cmd: []string{"python3", "-c", warmScript, noHome, d.cfg.User},
	})
	if err != nil {
		return nil, wrap(err)
	}
	// The connection outlives the call: it is the warm exec.
	att, err := d.c.ExecAttach(context.WithoutCancel(ctx), cr.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, wrap(err)
	}
	w := newWarmExec(att)
	deadline, _ := ctx.Deadline()
	att.Conn.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { att.Conn.SetReadDeadline(time.Now()) })
	m, _, err := w.recv()
	stop()
	att.Conn.SetReadDeadline(time.Time{})
	if err == nil && m != 'R' {
		err = fmt.Errorf("it said %q", m)
	}
	if err == nil {
		// Its process ID and the box's cgroup, for the timeouts of its
		// commands. The engine records the ID a moment after the process
		// runs, and may say 0 until then, even once the program spoke: a
		// warm exec whose ID is not known would time nothing out.
		w.pid, err = d.execPID(ctx, cr.ID)
		if err == nil {
			w.cg, err = containerCgroup(ins.Container.ID, ins.Container.State.Pid)
		}
	}
	if err != nil {
		att.Close()
		return nil, fmt.Errorf("box %s: no warm exec (python3 in the image?): %w", box, err)
	}
	return w, nil
}

// maxSpare bounds the warm execs a box keeps beside its own: each is a
// waiting python3 of some 4 MiB in the box.
const maxSpare = 3

// takeWarm takes a spare warm exec of the box, or the box's own, if it
// has one. One being started is waited for unless another Exec waits for
// it.
func (d *Driver) takeWarm(ctx context.Context, box string) *warmExec {
	d.mu.Lock()
	if sp := d.spare[box]; len(sp) > 0 {
		w := sp[len(sp)-1]
		d.spare[box] = sp[:len(sp)-1]
		d.mu.Unlock()
		return w
	}
	s := d.warm[box]
	if s == nil || s.claimed || s.err != nil {
		d.mu.Unlock()
		return nil
	}
	s.claimed = true
	d.mu.Unlock()
	select {
	case <-s.done:
	case <-ctx.Done():
		d.mu.Lock()
		s.claimed = false
		d.mu.Unlock()
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	w := s.w
	s.w = nil
	if d.warm[box] == s && s.err == nil {
		delete(d.warm, box)
	}
	return w
}

// keepWarm starts a warm exec for the box's next commands in the
// background, when the driver is to keep one in every box that runs
// commands (Config.KeepWarm) and the box has none.
//
// A command that ran the usual way because no warm exec was free when
// it began (beside), and that ends with the box having one again (handed
// back, or being started), ran beside another: then a spare is started,
// while the box has fewer than maxSpare and none is being started (one
// at a time: commands that go on running side by side while it starts
// do not each start one).
// Without it, two commands at a time whose warm exec starts slower than
// a command runs the usual way settle into one warm and one not, for
// good: the second's end finds the box's warm exec back, or coming.
func (d *Driver) keepWarm(box string, beside bool) {
	if !d.cfg.KeepWarm {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	if s := d.warm[box]; s.live() {
		if beside && s.err == nil && !d.sparing[box] && len(d.spare[box]) < maxSpare {
			d.spareWarm(box)
		}
		return
	}
	s := d.newSlot(box)
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		d.fill(d.bgCtx, box, s)
	}()
}

// spareWarm starts a warm exec in the background to be a spare of the
// box (d.mu held): kept if the box still has its own and room for it.
func (d *Driver) spareWarm(box string) {
	if d.sparing == nil {
		d.sparing = map[string]bool{}
	}
	d.sparing[box] = true
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		w, err := d.startWarm(d.bgCtx, box)
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.sparing, box)
		if err != nil {
			return
		}
		if s := d.warm[box]; d.closed || !s.live() || s.err != nil || len(d.spare[box]) >= maxSpare {
			w.att.Close()
			return
		}
		if d.spare == nil {
			d.spare = map[string][]*warmExec{}
		}
		d.spare[box] = append(d.spare[box], w)
	}()
}

// DropWarm ends the box's warm exec, if it has one (its program reads the
// end of its input), and forgets one that could not start; one being
// started is ended when it is up. A command it is running goes on.
func (d *Driver) DropWarm(box string) {
	d.mu.Lock()
	s := d.warm[box]
	delete(d.warm, box)
	ws := d.spare[box]
	delete(d.spare, box)
	if s != nil && s.w != nil {
		ws = append(ws, s.w)
		s.w = nil
	}
	d.mu.Unlock()
	for _, w := range ws {
		w.att.Close()
	}
}

// warmCommand is what a warm exec's program is handed.
type warmCommand struct {
	User string   `json:"user"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	Cmd  []string `json:"cmd"`
}

// warmRun is how a command went in a warm exec.
type warmRun int

const (
	warmRan    warmRun = iota // it ran: its code, or the error of its stream; w serves again
	warmNo                    // its program refused it: run it the usual way; w serves again
	warmGone                  // w was gone before the command started: run it the usual way
	warmBroken                // it may have started, and w failed
)

// reuse says whether the warm exec may serve again after a command went so.
func (h warmRun) reuse() bool { return h == warmRan || h == warmNo }

// ran says whether the command ran (or may have): its result stands.
func (h warmRun) ran() bool { return h == warmRan || h == warmBroken }

// runWarm runs the command in w (spec's streams and timeout, c the rest).
func (d *Driver) runWarm(ctx context.Context, w *warmExec, spec driver.ExecSpec, c warmCommand) (code int, how warmRun, err error) {
	b, err := json.Marshal(c)
	if err != nil {
		return -1, warmNo, nil
	}
	w.mu.Lock()
	w.cmd++
	this := w.cmd
	w.ended = false
	w.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { w.att.Conn.Close() })
	defer stop()
	if err := w.send('r', b, 0); err != nil {
		return -1, warmGone, nil
	}
	m, _, err := w.recv()
	switch {
	case ctx.Err() != nil:
		return -1, warmBroken, ctx.Err()
	case errors.Is(err, io.EOF):
		return -1, warmGone, nil // gone before it could say anything
	case err != nil:
		return -1, warmBroken, fmt.Errorf("the warm exec's stream: %w", err)
	case m == 'N':
		return -1, warmNo, nil
	case m != 'G':
		return -1, warmBroken, fmt.Errorf("the warm exec said %q", m)
	}
	end := func() {
		w.mu.Lock()
		w.ended = true
		w.mu.Unlock()
	}
	defer end()
	var cut atomic.Value // the error that cut the command's input short
	if spec.Stdin != nil {
		// This goroutine may outlive the command (its input may end
		// later, or never): its frames carry the command's identity, and
		// once another command is served they are not sent.
		go func() {
			p := make([]byte, 32<<10)
			for {
				n, err := spec.Stdin.Read(p)
				if n > 0 && w.send('i', p[:n], this) != nil {
					return
				}
				switch {
				case errors.Is(err, io.EOF):
					w.send('c', nil, this)
					return
				case err != nil:
					// Input cut short (its caller went away) is not an
					// end of input: the command must not take what it got
					// for the whole. The stream closes; the program sees
					// its caller gone before the end of input, kills the
					// command's group, and is not served again.
					w.mu.Lock()
					if this == w.cmd && !w.ended {
						cut.Store(err)
						w.att.Conn.Close()
					}
					w.mu.Unlock()
					return
				}
			}
		}()
	} else if err := w.send('c', nil, this); err != nil {
		return -1, warmBroken, fmt.Errorf("the warm exec's stream: %w", err)
	}
	timedOut := startTimeout(spec.Timeout, w.signal)
	defer timedOut.stop()
	defer forwardSignals(spec.Signals, w.signal)()
	stdout, stderr := orDiscard(spec.Stdout), orDiscard(spec.Stderr)
	for {
		t, b, err := w.recv()
		if ctx.Err() != nil {
			return -1, warmBroken, ctx.Err()
		}
		if err, ok := cut.Load().(error); ok {
			return -1, warmBroken, inputCut(err)
		}
		if err != nil {
			return -1, warmBroken, fmt.Errorf("the box's warm exec ended while the command ran (killed in the box, or the box stopped); its exit code is not known: %w", err)
		}
		var werr error
		switch t {
		case 'o':
			_, werr = stdout.Write(b)
		case 'e':
			_, werr = stderr.Write(b)
		case 'x':
			if len(b) != 4 {
				return -1, warmBroken, fmt.Errorf("the warm exec's exit frame of %d bytes", len(b))
			}
			end()
			if timedOut.fired() {
				return 124, warmRan, nil
			}
			return int(int32(binary.BigEndian.Uint32(b))), warmRan, nil
		}
		if werr != nil {
			return -1, warmBroken, fmt.Errorf("exec stream: %w", werr)
		}
	}
}

// signal signals the process group of w's command: a child of the
// program, or of its spawner (a child of the program in the program's
// own group), which leads its own. The program and the spawner reap the
// command only once its output has closed, so that the group's ID stays
// the command's while any process of the group may hold it open, as the
// engine's exec's does. Only the box's processes are signalled
// (signal.go): the groups the program's children lead, and those the
// children of a child that leads none lead, all inside the box's cgroup.
func (w *warmExec) signal(sig syscall.Signal) {
	for _, pid := range procs.ChildrenOf(w.pid) {
		if _, pgid, err := procs.Stat(pid); err == nil && pgid != pid {
			for _, k := range procs.ChildrenOf(pid) {
				procs.SignalGroup(w.cg, k, sig)
			}
			continue
		}
		procs.SignalGroup(w.cg, pid, sig)
	}
}

// giveBack puts w, which has served a command, back as the box's warm
// exec; or, when the box has one (or one being started) by now, as a
// spare while it has fewer than maxSpare.
func (d *Driver) giveBack(box string, w *warmExec) {
	d.mu.Lock()
	s := d.warm[box]
	if !d.closed && s.live() && s.err == nil && len(d.spare[box]) < maxSpare {
		if d.spare == nil {
			d.spare = map[string][]*warmExec{}
		}
		d.spare[box] = append(d.spare[box], w)
		d.mu.Unlock()
		return
	}
	if d.closed || s.live() {
		d.mu.Unlock()
		w.att.Close()
		return
	}
	s = d.newSlot(box)
	s.w = w
	close(s.done)
	d.mu.Unlock()
}
