package node

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/paddock-dev/paddock/appliance/driver"
)

// Exec frames: one websocket message each, its first byte the kind.
const (
	frameSpec   = 's' // caller: the execSpec, JSON; first
	frameInput  = 'i' // caller: input bytes
	frameEOF    = 'c' // caller: the input ended
	frameResize = 'r' // caller: rows, cols (2 bytes each, big endian)
	frameSignal = 'k' // caller: a signal for the command's group (1 byte, its number)
	frameStdout = 'o' // agent: output bytes
	frameStderr = 'e' // agent: error output bytes
	frameExit   = 'x' // agent: execExit, JSON; last
)

// frameMax bounds an input or output frame's bytes.
const frameMax = 32 << 10

// execSpec is driver.ExecSpec without its streams.
type execSpec struct {
	Cmd     []string
	Env     []string
	WorkDir string
	User    string
	TTY     bool
	Rows    uint16
	Cols    uint16
	Stdin   bool // the caller sends input (else the command has none)
	Timeout time.Duration
	Signals bool // the caller may send signals
}

type execExit struct {
	Code  int
	Error string `json:",omitempty"`
	Kind  string `json:",omitempty"`
}

// errInputCut is the input of an exec whose caller went before its end.
var errInputCut = errors.New("the caller's input broke off")

// serveExec runs one command for a caller over a websocket.
func (a *Agent) serveExec(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(frameMax + 1<<16)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	typ, b, err := c.Read(ctx)
	if err != nil || typ != websocket.MessageBinary || len(b) == 0 || b[0] != frameSpec {
		c.Close(websocket.StatusPolicyViolation, "the first frame must be the spec")
		return
	}
	var in execSpec
	if err := json.Unmarshal(b[1:], &in); err != nil {
		c.Close(websocket.StatusPolicyViolation, "the spec: "+err.Error())
		return
	}
	var wmu sync.Mutex
	send := func(kind byte, p []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return c.Write(ctx, websocket.MessageBinary, append([]byte{kind}, p...))
	}
	spec := driver.ExecSpec{Cmd: in.Cmd, Env: in.Env, WorkDir: in.WorkDir, User: in.User, TTY: in.TTY,
		Rows: in.Rows, Cols: in.Cols, Timeout: in.Timeout,
		Stdout: frameWriter{frameStdout, send}, Stderr: frameWriter{frameStderr, send}}
	var stdin *io.PipeWriter
	if in.Stdin {
		var pr *io.PipeReader
		pr, stdin = io.Pipe()
		spec.Stdin = pr
	}
	resize, resized := make(chan [2]uint16, 4), make(chan [2]uint16, 1)
	if in.TTY {
		spec.Resize, spec.Resized = resize, resized
	}
	signals := make(chan syscall.Signal, 4)
	if in.Signals {
		spec.Signals = signals
	}
	// The caller's frames: input, its end, sizes. A read that fails
	// before the end of input cuts the input (not an end of it) and ends
	// the command.
	go func() {
		ended := false
		for {
			typ, b, err := c.Read(ctx)
			if err != nil || typ != websocket.MessageBinary || len(b) == 0 {
				if stdin != nil && !ended {
					stdin.CloseWithError(errInputCut)
				}
				cancel()
				return
			}
			switch b[0] {
			case frameInput:
				if stdin != nil && !ended {
					if _, err := stdin.Write(b[1:]); err != nil {
						ended = true // the command no longer reads
					}
				}
			case frameEOF:
				if stdin != nil && !ended {
					stdin.Close()
				}
				ended = true
			case frameSignal:
				if len(b) == 2 && in.Signals {
					select {
					case signals <- syscall.Signal(b[1]):
					case <-ctx.Done():
					}
				}
			case frameResize:
				if len(b) == 5 && in.TTY {
					select {
					case <-resized:
					default:
					}
					select {
					case resize <- [2]uint16{binary.BigEndian.Uint16(b[1:3]), binary.BigEndian.Uint16(b[3:5])}:
						// The frames after it (input) reach the command
						// once its terminal has the size.
						select {
						case <-resized:
						case <-ctx.Done():
						}
					default:
					}
				}
			}
		}
	}()
	code, err := a.Driver.Exec(ctx, r.PathValue("name"), spec)
	out := execExit{Code: code}
	if err != nil {
		out.Error, out.Kind = err.Error(), kindOf(err)
	}
	j, _ := json.Marshal(out)
	if send(frameExit, j) == nil {
		c.Close(websocket.StatusNormalClosure, "")
	}
}

// frameWriter sends what is written as frames of one kind.
type frameWriter struct {
	kind byte
	send func(byte, []byte) error
}

func (f frameWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), frameMax)
		if err := f.send(f.kind, p[:k]); err != nil {
			return n, err
		}
		n += k
		p = p[k:]
	}
	return n, nil
}

// Exec runs a command in a box of the node.
func (r *Remote) Exec(ctx context.Context, box string, spec driver.ExecSpec) (int, error) {
	ctx, cancel := r.bound(ctx)
	defer cancel()
	c, _, err := websocket.Dial(ctx, r.url("boxes/"+pathEscape(box)+"/exec"), &websocket.DialOptions{HTTPClient: r.hc})
	if err != nil {
		return -1, fmt.Errorf("node %s: exec: %w", r.Name, err)
	}
	defer c.CloseNow()
	c.SetReadLimit(frameMax + 1<<16)
	var wmu sync.Mutex
	send := func(kind byte, p []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return c.Write(ctx, websocket.MessageBinary, append([]byte{kind}, p...))
	}
	j, _ := json.Marshal(execSpec{Cmd: spec.Cmd, Env: spec.Env, WorkDir: spec.WorkDir, User: spec.User, TTY: spec.TTY,
		Rows: spec.Rows, Cols: spec.Cols, Stdin: spec.Stdin != nil, Timeout: spec.Timeout, Signals: spec.Signals != nil})
	if err := send(frameSpec, j); err != nil {
		return -1, fmt.Errorf("node %s: exec: %w", r.Name, err)
	}
	if spec.Stdin != nil {
		go func() {
			buf := make([]byte, frameMax)
			for {
				n, err := spec.Stdin.Read(buf)
				if n > 0 {
					if send(frameInput, buf[:n]) != nil {
						return
					}
				}
				if err == io.EOF {
					send(frameEOF, nil)
					return
				}
				if err != nil {
					// Input cut short is no end of input: the command ends.
					c.Close(websocket.StatusGoingAway, "the input broke off")
					return
				}
			}
		}()
	}
	if spec.Signals != nil {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case sig, ok := <-spec.Signals:
					if !ok {
						return
					}
					send(frameSignal, []byte{byte(sig)})
				}
			}
		}()
	}
	if spec.Resize != nil {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case sz, ok := <-spec.Resize:
					if !ok {
						return
					}
					b := make([]byte, 4)
					binary.BigEndian.PutUint16(b[0:2], sz[0])
					binary.BigEndian.PutUint16(b[2:4], sz[1])
					send(frameResize, b)
					// The agent takes the frames after it (input) only
					// once the terminal has the size.
					if spec.Resized != nil {
						select {
						case spec.Resized <- sz:
						default:
						}
					}
				}
			}
		}()
	}
	stdout, stderr := orDiscard(spec.Stdout), orDiscard(spec.Stderr)
	for {
		typ, b, err := c.Read(ctx)
		if err != nil {
			return -1, fmt.Errorf("node %s: the exec's stream ended before its exit: %w", r.Name, err)
		}
		if typ != websocket.MessageBinary || len(b) == 0 {
			continue
		}
		switch b[0] {
		case frameStdout:
			if _, err := stdout.Write(b[1:]); err != nil {
				return -1, err
			}
		case frameStderr:
			if _, err := stderr.Write(b[1:]); err != nil {
				return -1, err
			}
		case frameExit:
			var x execExit
			if err := json.Unmarshal(b[1:], &x); err != nil {
				return -1, fmt.Errorf("node %s: the exec's exit: %w", r.Name, err)
			}
			if x.Error != "" {
				return x.Code, fromWire(wireError{Error: x.Error, Kind: x.Kind})
			}
			return x.Code, nil
		}
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
