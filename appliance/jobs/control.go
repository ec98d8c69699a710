package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

// Get control: signals for a running job's process group, and input for
// a job started with its input open.
//
// A job's signals go to the driver with its command (ExecSpec.Signals):
// the driver sends them through the exec it started, to the box's own
// processes only, never to a process number looked up later. A job's
// input is a pipe from paddockd into the command; sends are written to
// it one at a time, in the order they arrive, and an end of input closes
// it. Both end with the job: a signal or a send to a job that has ended
// is refused, saying how it ended.

// runningJob is what paddockd holds of a job while it runs.
type runningJob struct {
	done    chan struct{} // closed once the job has ended and is recorded
	signals chan syscall.Signal
	ended   chan struct{} // closed when the command has ended
	endOnce sync.Once

	// input is the job's input (nil: started without one); inputEnd is
	// the command's end of it.
	inputMu  sync.Mutex // one send at a time
	input    *io.PipeWriter
	inputEnd *io.PipeReader
	closed   bool

	taps taps // its output as it comes

	// resize carries a terminal's new sizes (nil: no terminal), one at a
	// time; it is closed once the command has ended. resized is told
	// when the terminal has one.
	resizeMu  sync.Mutex
	resize    chan [2]uint16
	resized   chan [2]uint16
	resizeEnd bool
}

func newRunningJob(stdin, tty bool) *runningJob {
	j := &runningJob{done: make(chan struct{}), signals: make(chan syscall.Signal), ended: make(chan struct{})}
	if stdin {
		j.inputEnd, j.input = io.Pipe()
	}
	if tty {
		j.resize = make(chan [2]uint16, 1)
		j.resized = make(chan [2]uint16, 1)
	}
	return j
}

// end is called once the command has ended: signals and sends wait for
// it no longer, and the input's reader is let go.
func (j *runningJob) end() {
	j.endOnce.Do(func() {
		close(j.ended)
		if j.inputEnd != nil {
			j.inputEnd.CloseWithError(errJobEnded)
		}
		if j.resize != nil {
			j.resizeMu.Lock()
			j.resizeEnd = true
			close(j.resize)
			j.resizeMu.Unlock()
		}
	})
}

var errJobEnded = errors.New("the job has ended")

// jobSignals are the signals a job may be sent, by name.
var jobSignals = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL, "HUP": syscall.SIGHUP,
	"QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
}

// ParseSignal reads a signal's name (TERM, SIGTERM, term; "" is TERM).
func ParseSignal(name string) (syscall.Signal, error) {
	n := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(name)), "SIG")
	if n == "" {
		n = "TERM"
	}
	if sig, ok := jobSignals[n]; ok {
		return sig, nil
	}
	names := make([]string, 0, len(jobSignals))
	for k := range jobSignals {
		names = append(names, k)
	}
	sort.Strings(names)
	return 0, api.Invalid("signal", "signal %q: give one of %s", name, strings.Join(names, ", "))
}

// runningJobOf is job id of box name while it runs; a job that has ended
// is a conflict that says how.
func (jb *Jobs) runningJobOf(name, id string) (*runningJob, error) {
	j, err := jb.Get(name, id)
	if err != nil {
		return nil, err
	}
	jb.mu.Lock()
	rj := jb.running[id]
	jb.mu.Unlock()
	if rj == nil || j.State != "running" {
		how := j.State
		if j.ExitCode != nil {
			how = fmt.Sprintf("%s with code %d", j.State, *j.ExitCode)
		}
		return nil, api.Conflict("job %s of box %s is not running (%s)", id, name, how)
	}
	return rj, nil
}

// Signal sends a signal to a running job's process group.
func (jb *Jobs) Signal(ctx context.Context, name, id, signal string) (api.Job, error) {
	sig, err := ParseSignal(signal)
	if err != nil {
		return api.Job{}, err
	}
	rj, err := jb.runningJobOf(name, id)
	if err != nil {
		return api.Job{}, err
	}
	select {
	case rj.signals <- sig:
	case <-rj.ended:
		return api.Job{}, api.Conflict("job %s of box %s ended before the signal was sent", id, name)
	case <-ctx.Done():
		return api.Job{}, ctx.Err()
	}
	return jb.Get(name, id)
}

// Terminal says whether a running job has a terminal.
func (jb *Jobs) Terminal(name, id string) bool {
	rj, err := jb.runningJobOf(name, id)
	return err == nil && rj.resize != nil
}

// Resize sets the size of a running job's terminal: the command sees
// it (and a SIGWINCH) as from a terminal window made that size, by the
// time Resize returns.
func (jb *Jobs) Resize(name, id string, rows, cols uint16) error {
	rj, err := jb.runningJobOf(name, id)
	if err != nil {
		return err
	}
	if rj.resize == nil {
		return api.Conflict("job %s of box %s has no terminal to resize", id, name)
	}
	if rows == 0 || cols == 0 {
		return api.Invalid("size", "a terminal of %d rows and %d columns: give both", rows, cols)
	}
	rj.resizeMu.Lock()
	defer rj.resizeMu.Unlock()
	if rj.resizeEnd {
		return api.Conflict("job %s of box %s ended before its terminal was resized", id, name)
	}
	select { // a size told after a wait given up
	case <-rj.resized:
	default:
	}
	select { // one not yet taken (a wait given up): the latest counts
	case <-rj.resize:
	default:
	}
	rj.resize <- [2]uint16{rows, cols}
	// Input sent after the answer must find the terminal at its new size
	// (envd answers a resize once it is done): wait until it has it, the
	// command ended, or, at worst, a while (a driver that does not say).
	select {
	case <-rj.resized:
	case <-rj.ended:
	case <-time.After(resizeWait):
	}
	return nil
}

// resizeWait bounds a resize's wait for its terminal to have the size.
const resizeWait = 30 * time.Second

// Input writes body to a running job's input; with eof, the input
// ends after it. A job started without its input open refuses it.
func (jb *Jobs) Input(ctx context.Context, name, id string, body io.Reader, eof bool) (api.JobInput, error) {
	rj, err := jb.runningJobOf(name, id)
	if err != nil {
		return api.JobInput{}, err
	}
	if rj.input == nil {
		return api.JobInput{}, api.Conflict("job %s of box %s was started without its input open: start it with 'paddock exec --detach --stdin' (stdin: true)", id, name)
	}
	rj.inputMu.Lock()
	defer rj.inputMu.Unlock()
	if rj.closed {
		return api.JobInput{Closed: true}, api.Conflict("the input of job %s of box %s was ended by an earlier send", id, name)
	}
	// The copy stops with the job (its reader is closed then) or with
	// the caller; what was written by then has reached the command. A
	// write waits while the command does not read.
	n, err := copyUntil(ctx, rj.input, body)
	if err != nil {
		if errors.Is(err, errJobEnded) || errors.Is(err, io.ErrClosedPipe) {
			return api.JobInput{Bytes: n}, api.Conflict("job %s of box %s ended after %d bytes of this input", id, name, n)
		}
		return api.JobInput{Bytes: n}, fmt.Errorf("the input for job %s broke off after %d bytes: %w", id, n, err)
	}
	if eof {
		rj.input.Close()
		rj.closed = true
	}
	return api.JobInput{Bytes: n, Closed: rj.closed}, nil
}

// copyUntil copies r to w until r ends, a write fails or ctx is done
// (checked between chunks).
func copyUntil(ctx context.Context, w io.Writer, r io.Reader) (int64, error) {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		k, rerr := r.Read(buf)
		if k > 0 {
			m, werr := w.Write(buf[:k])
			n += int64(m)
			if werr != nil {
				return n, werr
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}
