package jobs

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/paddock-dev/paddock/appliance/api"
)

// A tap is a running job's output as it comes, stdout and stderr apart
// (its log holds them as one): a client that tells the two apart (E2B's
// process stream) follows a job through one. A tap started with its job
// (StartOptions.Tap) has its output from the first byte; one taken later
// (Tap) from then on. Output waits in the tap for its reader up to
// MaxTapBacklog bytes; a reader further behind than that is cut off
// (ErrTapBehind), and the job runs on, its log whole.

// MaxTapBacklog bounds the output a tap holds for a reader that is slow.
const MaxTapBacklog = 8 << 20

// ErrTapBehind ends a tap whose reader fell MaxTapBacklog behind.
var ErrTapBehind = errors.New("the job's output came faster than it was read: follow its log instead")

// Output is a piece of a job's output, as a tap holds it.
type Output struct {
	Stderr bool
	Data   []byte
}

// JobTap is a running job's output as it comes.
type JobTap struct {
	mu      sync.Mutex
	pending []Output
	size    int
	ready   chan struct{} // signalled when output or the end comes
	ended   bool          // the job ended (after its end was recorded)
	err     error         // ErrTapBehind, or closed by its reader
	detach  func()
}

func newTap() *JobTap { return &JobTap{ready: make(chan struct{}, 1)} }

func (t *JobTap) wake() {
	select {
	case t.ready <- struct{}{}:
	default:
	}
}

func (t *JobTap) put(o Output) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil || t.ended {
		return
	}
	if t.size+len(o.Data) > MaxTapBacklog {
		t.err, t.pending = ErrTapBehind, nil
		t.wake()
		return
	}
	t.pending = append(t.pending, Output{Stderr: o.Stderr, Data: append([]byte(nil), o.Data...)})
	t.size += len(o.Data)
	t.wake()
}

func (t *JobTap) end() {
	t.mu.Lock()
	t.ended = true
	t.mu.Unlock()
	t.wake()
}

// Next is the next piece of output (stderr says from which stream),
// waiting for it; io.EOF once the job has ended (its end is recorded by
// then: Jobs.Get says how) and all its output was read.
func (t *JobTap) Next(ctx context.Context) (data []byte, stderr bool, err error) {
	for {
		t.mu.Lock()
		switch {
		case t.err != nil:
			err := t.err
			t.mu.Unlock()
			return nil, false, err
		case len(t.pending) > 0:
			o := t.pending[0]
			t.pending = t.pending[1:]
			t.size -= len(o.Data)
			t.mu.Unlock()
			return o.Data, o.Stderr, nil
		case t.ended:
			t.mu.Unlock()
			return nil, false, io.EOF
		}
		t.mu.Unlock()
		select {
		case <-t.ready:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// Close stops the tap (the job runs on).
func (t *JobTap) Close() {
	t.mu.Lock()
	if t.err == nil {
		t.err = io.ErrClosedPipe
	}
	t.pending = nil
	d := t.detach
	t.mu.Unlock()
	if d != nil {
		d()
	}
}

// taps are a running job's taps.
type taps struct {
	mu   sync.Mutex
	set  map[*JobTap]bool
	over bool // the job has ended
}

func (ts *taps) add(t *JobTap) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.over {
		t.end()
		return
	}
	if ts.set == nil {
		ts.set = map[*JobTap]bool{}
	}
	ts.set[t] = true
	t.detach = func() {
		ts.mu.Lock()
		delete(ts.set, t)
		ts.mu.Unlock()
	}
}

func (ts *taps) put(o Output) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for t := range ts.set {
		t.put(o)
	}
}

func (ts *taps) end() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for t := range ts.set {
		t.end()
	}
	ts.set, ts.over = nil, true
}

// tapWriter writes a job's stream to its log, then to its taps.
type tapWriter struct {
	log    io.Writer
	taps   *taps
	stderr bool
}

func (w tapWriter) Write(p []byte) (int, error) {
	n, err := w.log.Write(p)
	if n > 0 {
		w.taps.put(Output{Stderr: w.stderr, Data: p[:n]})
	}
	return n, err
}

// Tap follows a running job's output from now on; a job that has ended
// is a conflict that says how.
func (jb *Jobs) Tap(name, id string) (*JobTap, error) {
	rj, err := jb.runningJobOf(name, id)
	if err != nil {
		return nil, err
	}
	t := newTap()
	rj.taps.add(t) // ended at once if the job ended since the look
	return t, nil
}

// Running is the ids of a box's jobs that run now.
func (jb *Jobs) Running(name string) ([]api.Job, error) {
	js, err := jb.List(name)
	if err != nil {
		return nil, err
	}
	out := js[:0]
	for _, j := range js {
		if j.State == "running" {
			out = append(out, j)
		}
	}
	return out, nil
}
