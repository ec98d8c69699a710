package docker

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// Warm execs.
//
// Most of an exec's time is the runtime starting a process in the box
// (runc's two process starts and its seccomp filter: 80 to 100 ms on two
// cores), not the command. A warm exec is that process started ahead:
// an engine exec, as root, of a small Python program (warmScript) that
// says it is up and then waits on its stdin for one command. Exec hands
// it the command, user, environment and folder; the program takes the
// user's ids and groups, the folder and the environment as the engine
// would (without a group named, the user's groups from /etc/group and
// its own; HOME from /etc/passwd unless given), says "go" and replaces
// itself with the command. From there it is an engine exec like any other: the engine
// carries its output and keeps its exit code, its process group is what
// a timeout ends, and it has the cgroup, namespaces, seccomp filter and
// capability bounds of every exec (it is one). It loses its
// capabilities when it takes a user other than root, as runc's do.
//
// Whatever the program cannot do as the runtime would (a user, folder or
// command it cannot find) it does not try: it says "no" and ends, and
// Exec runs the command the usual way, so errors read as they always do.
// A box whose image has no python3 gets no warm exec.
//
// A warm exec serves one Exec without a terminal, then it is gone. The
// warm pool keeps one in each ready pool box, so that the first command
// of a claimed box does not wait for the runtime. With Config.KeepWarm,
// every command without a terminal has the next one's started in the
// background once it has ended and the box has been left alone for
// warmQuiet (keepWarm); a command that comes sooner calls it off and
// starts the usual way. An Exec that finds one being started waits for
// it; a second Exec at the same time does not wait, and starts its
// command the usual way. A box whose warm exec could not start gets none
// for warmRetry, or until it starts again. In ps, the waiting program
// reads as python3 with this package's comment line. A warm exec that is
// never used waits until its box stops, or until paddockd's connection to
// the engine closes (the program reads the end of its input and exits).

// warmScript is the program a warm exec runs (python3 -c). Its argument
// says whether the box's own environment lacks HOME (the runtime then
// gave it the root's, and the command gets its user's instead). The
// markers are single bytes on stdout: R (up), G (the command follows),
// N (run it the usual way).
const warmScript = `# paddock: this box's next command, started ahead (warm exec)
import os, sys, json, signal, pwd, grp
def rd(n):
    b = b''
    while len(b) < n:
        c = os.read(0, n - len(b))
        if not c:
            os._exit(0)
        b += c
    return b
os.write(1, b'R')
n = int.from_bytes(rd(4), 'big')
try:
    s = json.loads(rd(n))
    name, _, group = s['user'].partition(':')
    p = None
    if name.isdigit():
        uid = int(name)
        try:
            p = pwd.getpwuid(uid)
        except KeyError:
            pass
    else:
        p = pwd.getpwnam(name)
        uid = p.pw_uid
    gid = p.pw_gid if p else 0
    if group:
        gid = int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
        groups = [gid]
    else:
        groups = [g.gr_gid for g in grp.getgrall() if p and p.pw_name in g.gr_mem] + [gid]
    env = {}
    for k, v in os.environb.items():
        if not (k == b'HOME' and sys.argv[1] == '1'):
            env[k] = v
    for e in s['env'] or []:
        k, eq, v = os.fsencode(e).partition(b'=')
        if eq:
            env[k] = v
        else:
            env.pop(k, None)
    if b'HOME' not in env:
        env[b'HOME'] = os.fsencode(p.pw_dir if p else '/')
    later = False
    if s['dir']:
        try:
            os.chdir(s['dir'])
        except PermissionError:
            later = True
    os.setgroups(groups)
    os.setgid(gid)
    os.setuid(uid)
    if later:
        os.chdir(s['dir'])
    cmd = s['cmd']
    path = None
    if '/' in cmd[0]:
        path = cmd[0]
    else:
        paths = os.fsdecode(env.get(b'PATH', b''))
        for d in paths.split(':'):
            f = os.path.join(d or '.', cmd[0])
            if os.path.isfile(f) and os.access(f, os.X_OK):
                path = f
                break
    if path is None or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise OSError('not found')
except Exception:
    os.write(1, b'N')
    os._exit(0)
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
os.write(1, b'G')
try:
    os.execve(path, cmd, env)
except OSError as e:
    os.write(2, ('exec %s: %s\n' % (cmd[0], e.strerror)).encode())
    os._exit(126)
`

// warmExec is a started warm exec.
type warmExec struct {
	id  string
	att client.ExecAttachResult
}

// warmSlot is a box's warm exec: due to start (timer), being started,
// started (w until it is taken), or one that could not start (err).
type warmSlot struct {
	timer   *time.Timer   // keepWarm's, until it fires
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

// warmQuiet is how long a box's commands must have left it alone before
// keepWarm starts the next one's warm exec. An exec the engine starts
// while another of the box ends, or starts beside it, slows both (the
// ending command by about the start's 100 ms, measured on 2 cores), so
// commands that come back to back start the usual way, none of them
// waiting for a warm exec, and commands with time between them come warm.
const warmQuiet = 250 * time.Millisecond

// live says whether s stands for the box: a slot that failed stands
// until its retry time.
func (s *warmSlot) live() bool { return s != nil && (s.err == nil || time.Now().Before(s.retry)) }

// WarmExec starts a warm exec in the running box unless it has one (then
// it says false); the box's next Exec without a terminal uses it. One
// being started when it is called is waited for, and counts as its own
// (its error too); one due to start is started now. A box whose start
// failed less than warmRetry ago is not tried again: false, no error.
func (d *Driver) WarmExec(ctx context.Context, box string) (bool, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return false, errors.New("the driver is closed")
	}
	s := d.warm[box]
	if !s.live() || d.callOff(s) {
		s = d.newSlot(box)
		d.mu.Unlock()
		return d.fill(ctx, box, s)
	}
	d.mu.Unlock()
	select {
	case <-s.done: // there, or failed a while ago
		return false, nil
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

// callOff stops the start of s if it is still only due (keepWarm's
// timer), and says whether it did; the slot is then done and empty
// (d.mu held).
func (d *Driver) callOff(s *warmSlot) bool {
	if s.timer == nil || !s.timer.Stop() {
		return false
	}
	s.timer = nil
	close(s.done)
	d.bg.Done()
	return true
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
		Cmd: []string{"python3", "-c", warmScript, noHome},
	})
	if err != nil {
		return nil, wrap(err)
	}
	// The connection outlives the call: it is the warm exec.
	att, err := d.c.ExecAttach(context.WithoutCancel(ctx), cr.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, wrap(err)
	}
	deadline, _ := ctx.Deadline()
	att.Conn.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { att.Conn.SetReadDeadline(time.Now()) })
	m, replay, err := firstOut(att.Reader)
	stop()
	att.Conn.SetReadDeadline(time.Time{})
	if err != nil || m != 'R' || len(replay) > 0 {
		att.Close()
		if err == nil {
			err = fmt.Errorf("it said %q", m)
		}
		return nil, fmt.Errorf("box %s: no warm exec (python3 in the image?): %w", box, err)
	}
	return &warmExec{id: cr.ID, att: att}, nil
}

// takeWarm takes the box's warm exec, if it has one. One being started is
// waited for unless another Exec waits for it; one due to start (keepWarm)
// is called off.
func (d *Driver) takeWarm(ctx context.Context, box string) *warmExec {
	d.mu.Lock()
	s := d.warm[box]
	if s == nil || s.claimed || s.err != nil {
		d.mu.Unlock()
		return nil
	}
	if d.callOff(s) {
		delete(d.warm, box)
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

// keepWarm has the box's next command's warm exec start once the box has
// been left alone for warmQuiet, when the driver is to keep one in every
// box that runs commands (Config.KeepWarm) and the box has none.
func (d *Driver) keepWarm(box string) {
	if !d.cfg.KeepWarm {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.warm[box].live() {
		return
	}
	s := d.newSlot(box)
	d.bg.Add(1)
	s.timer = time.AfterFunc(warmQuiet, func() {
		defer d.bg.Done()
		d.fill(d.bgCtx, box, s)
	})
}

// dropWarm ends the box's warm exec, if it has one (its program reads the
// end of its input), calls off one due to start, and forgets one that
// could not start.
func (d *Driver) dropWarm(box string) {
	d.mu.Lock()
	s := d.warm[box]
	delete(d.warm, box)
	var w *warmExec
	if s != nil {
		w, s.w = s.w, nil
		d.callOff(s)
	}
	d.mu.Unlock()
	if w != nil {
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

// begin hands w its command. On ok the command runs, and replay is
// what of its output the engine sent before the "go" was read (frames as
// the engine frames them), to be read before the rest of the stream. On
// fallback the command did not start (the program said no, or it was
// gone before it could say anything): the caller closes w and runs the
// command the usual way. An error means the command may have started.
// Nothing of the command's own input has been sent in any case.
func (w *warmExec) begin(ctx context.Context, c warmCommand) (replay []byte, fallback bool, err error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, false, err
	}
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	stop := context.AfterFunc(ctx, func() { w.att.Conn.Close() })
	defer stop()
	if _, err := w.att.Conn.Write(append(msg, b...)); err != nil {
		return nil, true, nil
	}
	m, replay, err := firstOut(w.att.Reader)
	switch {
	case ctx.Err() != nil:
		return nil, false, ctx.Err()
	case err == nil && m == 'G':
		return replay, false, nil
	case err == nil && m == 'N', errors.Is(err, io.EOF) && len(replay) == 0:
		return nil, true, nil
	case err == nil:
		return nil, false, fmt.Errorf("the warm exec said %q", m)
	}
	return nil, false, fmt.Errorf("the warm exec's stream: %w", err)
}

// maxReplay bounds what of a command's stderr firstOut keeps while it
// waits for the marker on stdout.
const maxReplay = 1 << 20

// firstOut reads the engine's multiplexed stream up to the first byte
// written to stdout, and returns it. The engine copies stdout and stderr
// separately, so frames of stderr (the command's, once the marker is
// written) may come first; they, and the rest of the marker's frame, are
// returned as frames to be read again.
func firstOut(r io.Reader) (byte, []byte, error) {
	var replay []byte
	for {
		var h [8]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return 0, replay, err
		}
		n := binary.BigEndian.Uint32(h[4:8])
		if n == 0 {
			continue
		}
		if len(replay)+int(n) > maxReplay {
			return 0, replay, errors.New("too much output before the marker")
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return 0, replay, err
		}
		if h[0] != 1 {
			replay = append(append(replay, h[:]...), body...)
			continue
		}
		if n > 1 {
			binary.BigEndian.PutUint32(h[4:8], n-1)
			replay = append(append(replay, h[:]...), body[1:]...)
		}
		return body[0], replay, nil
	}
}
