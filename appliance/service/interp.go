package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/kernel"
)

// The code interpreter's verbs: each one operation of package kernel's
// program, run in the box.

// interp runs one operation in a box's interpreter.
func (s *Service) interp(ctx context.Context, name string, op kernel.Op, bound time.Duration) (kernel.Outcome, error) {
	used, _, err := s.Use(ctx, name)
	if err != nil {
		return kernel.Outcome{}, err
	}
	defer used()
	if _, err := s.RunningBox(name); err != nil {
		return kernel.Outcome{}, err
	}
	in, err := json.Marshal(op)
	if err != nil {
		return kernel.Outcome{}, err
	}
	out := &limitedBuffer{max: kernel.MaxOutput}
	errb := &limitedBuffer{max: 64 << 10}
	code, err := s.Driver.Exec(ctx, s.engineName(name), driver.ExecSpec{
		Cmd: []string{"python3", "-c", kernel.Script}, Stdin: bytes.NewReader(in), Stdout: out, Stderr: errb, Timeout: bound,
	})
	if err != nil {
		return kernel.Outcome{}, err
	}
	if out.over {
		return kernel.Outcome{}, fmt.Errorf("the code's output in box %q is more than %d MiB", name, kernel.MaxOutput>>20)
	}
	return kernel.Answer(name, op, out.Bytes(), code, errb.String(), bound)
}

// RunCode runs code in a context of a box's interpreter.
func (s *Service) RunCode(ctx context.Context, name string, p api.RunPost) (api.RunResult, error) {
	op, bound, err := kernel.RunOp(p)
	if err != nil {
		return api.RunResult{}, err
	}
	o, err := s.interp(ctx, name, op, bound)
	if err != nil {
		return api.RunResult{}, err
	}
	if o.Run == nil {
		return api.RunResult{}, fmt.Errorf("the code interpreter of box %q gave no result", name)
	}
	return *o.Run, nil
}

// Contexts lists the contexts of a box's interpreter.
func (s *Service) Contexts(ctx context.Context, name string) ([]api.CodeContext, error) {
	o, err := s.interp(ctx, name, kernel.Op{Op: "list"}, time.Minute)
	if err != nil {
		return nil, err
	}
	if o.Contexts == nil {
		o.Contexts = []api.CodeContext{}
	}
	return o.Contexts, nil
}

// CreateContext starts a new context (a kernel) in a box.
func (s *Service) CreateContext(ctx context.Context, name string, p api.ContextPost) (api.CodeContext, error) {
	lang, err := kernel.Lang(p.Lang)
	if err != nil {
		return api.CodeContext{}, err
	}
	if err := kernel.CheckName(p.Name); err != nil {
		return api.CodeContext{}, err
	}
	if p.Name == "" {
		p.Name = lang + "-" + randHex(3)
	}
	o, err := s.interp(ctx, name, kernel.Op{Op: "start", Name: p.Name, Lang: lang, Max: kernel.MaxContexts}, 2*time.Minute)
	if err != nil {
		return api.CodeContext{}, err
	}
	return *o.Context, nil
}

// RestartContext starts a context's kernel again: its state is gone.
func (s *Service) RestartContext(ctx context.Context, name, cname string) (api.CodeContext, error) {
	if err := kernel.CheckName(cname); err != nil {
		return api.CodeContext{}, err
	}
	o, err := s.interp(ctx, name, kernel.Op{Op: "restart", Name: cname}, 2*time.Minute)
	if err != nil {
		return api.CodeContext{}, err
	}
	return *o.Context, nil
}

// RemoveContext ends a context's kernel and forgets it.
func (s *Service) RemoveContext(ctx context.Context, name, cname string) error {
	if err := kernel.CheckName(cname); err != nil {
		return err
	}
	_, err := s.interp(ctx, name, kernel.Op{Op: "remove", Name: cname}, time.Minute)
	return err
}
