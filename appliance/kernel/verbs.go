package kernel

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/capped"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Core is what the interpreter's verbs need of paddockd's core (package
// service's Service has it): a box in use while an operation runs (a
// sleeping one wakes), the box as it runs, and a command in it.
type Core interface {
	Use(ctx context.Context, box string) (done func(), woke bool, err error)
	RunningBox(name string) (store.Box, error)
	RunIn(ctx context.Context, b store.Box, spec driver.ExecSpec) (int, error)
}

// Interpreter is the code interpreter's verbs, each one operation of
// Script, run in the box as its user, and the API routes over them.
type Interpreter struct {
	Core Core
}

// New is the interpreter over core.
func New(core Core) *Interpreter { return &Interpreter{Core: core} }

// do runs one operation in a box's interpreter; each, when not nil, has
// a streamed run's events as they come.
func (k *Interpreter) do(ctx context.Context, name string, op Op, bound time.Duration, each func(api.RunEvent)) (Outcome, error) {
	used, _, err := k.Core.Use(ctx, name)
	if err != nil {
		return Outcome{}, err
	}
	defer used()
	b, err := k.Core.RunningBox(name)
	if err != nil {
		return Outcome{}, err
	}
	in, err := json.Marshal(op)
	if err != nil {
		return Outcome{}, err
	}
	out := &capped.Buffer{Max: MaxOutput}
	errb := &capped.Buffer{Max: 64 << 10}
	stdout := io.Writer(out)
	var ev *events
	if each != nil {
		ev = &events{out: out, each: each}
		stdout = ev
	}
	if op.Op == "run" {
		// A run whose caller went away is interrupted, as one past its
		// timeout is: the kernel keeps its state and is free for the
		// next run, not busy with code no one waits for.
		defer context.AfterFunc(ctx, func() { k.interrupt(context.WithoutCancel(ctx), name, op.Name) })()
	}
	code, err := k.Core.RunIn(ctx, b, driver.ExecSpec{
		Cmd: []string{"python3", "-c", Script}, Stdin: bytes.NewReader(in), Stdout: stdout, Stderr: errb, Timeout: bound,
	})
	if ev != nil {
		ev.flush()
	}
	if err != nil {
		return Outcome{}, err
	}
	if out.Over {
		return Outcome{}, fmt.Errorf("the code's output in box %q is more than %d MiB", name, MaxOutput>>20)
	}
	return Answer(name, op, out.Bytes(), code, errb.String(), bound)
}

// interrupt interrupts the kernel of a box's context, if it runs.
func (k *Interpreter) interrupt(ctx context.Context, name, cname string) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	k.do(ctx, name, Op{Op: "interrupt", Name: cname}, time.Minute, nil)
}

// events passes the lines of a streamed run's output that are events to
// each, as they come, and the rest (the outcome) to out.
type events struct {
	out  io.Writer
	each func(api.RunEvent)
	line []byte
}

func (e *events) Write(p []byte) (int, error) {
	e.line = append(e.line, p...)
	for {
		i := bytes.IndexByte(e.line, '\n')
		if i < 0 {
			break
		}
		var l struct {
			Event *api.RunEvent `json:"event"`
		}
		if json.Unmarshal(e.line[:i], &l) == nil && l.Event != nil {
			e.each(*l.Event)
		} else {
			e.out.Write(e.line[:i+1])
		}
		e.line = e.line[i+1:]
	}
	if len(e.line) > MaxOutput {
		e.flush() // no event is that long: the buffer says over
	}
	return len(p), nil
}

// flush passes what is left to out.
func (e *events) flush() {
	e.out.Write(e.line)
	e.line = nil
}

// RunCode runs code in a context of a box's interpreter.
func (k *Interpreter) RunCode(ctx context.Context, name string, p api.RunPost) (api.RunResult, error) {
	return k.RunCodeEach(ctx, name, p, nil)
}

// RunCodeEach is RunCode that calls each, when not nil, with what the
// run says as it runs (api.RunEvent), in order, before it returns.
func (k *Interpreter) RunCodeEach(ctx context.Context, name string, p api.RunPost, each func(api.RunEvent)) (api.RunResult, error) {
	op, bound, err := RunOp(p)
	if err != nil {
		return api.RunResult{}, err
	}
	op.Stream = each != nil
	o, err := k.do(ctx, name, op, bound, each)
	if err != nil {
		return api.RunResult{}, err
	}
	if o.Run == nil {
		return api.RunResult{}, fmt.Errorf("the code interpreter of box %q gave no result", name)
	}
	return *o.Run, nil
}

// Contexts lists the contexts of a box's interpreter.
func (k *Interpreter) Contexts(ctx context.Context, name string) ([]api.CodeContext, error) {
	o, err := k.do(ctx, name, Op{Op: "list"}, time.Minute, nil)
	if err != nil {
		return nil, err
	}
	if o.Contexts == nil {
		o.Contexts = []api.CodeContext{}
	}
	return o.Contexts, nil
}

// CreateContext starts a new context (a kernel) in a box.
func (k *Interpreter) CreateContext(ctx context.Context, name string, p api.ContextPost) (api.CodeContext, error) {
	lang, err := Lang(p.Lang)
	if err != nil {
		return api.CodeContext{}, err
	}
	if err := CheckName(p.Name); err != nil {
		return api.CodeContext{}, err
	}
	if p.Name == "" {
		b := make([]byte, 3)
		rand.Read(b)
		p.Name = lang + "-" + hex.EncodeToString(b)
	}
	o, err := k.do(ctx, name, Op{Op: "start", Name: p.Name, Lang: lang, Max: MaxContexts}, 2*time.Minute, nil)
	if err != nil {
		return api.CodeContext{}, err
	}
	return *o.Context, nil
}

// RestartContext starts a context's kernel again: its state is gone.
func (k *Interpreter) RestartContext(ctx context.Context, name, cname string) (api.CodeContext, error) {
	if err := CheckName(cname); err != nil {
		return api.CodeContext{}, err
	}
	o, err := k.do(ctx, name, Op{Op: "restart", Name: cname}, 2*time.Minute, nil)
	if err != nil {
		return api.CodeContext{}, err
	}
	return *o.Context, nil
}

// RemoveContext ends a context's kernel and forgets it.
func (k *Interpreter) RemoveContext(ctx context.Context, name, cname string) error {
	if err := CheckName(cname); err != nil {
		return err
	}
	_, err := k.do(ctx, name, Op{Op: "remove", Name: cname}, time.Minute, nil)
	return err
}
