package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/computer"
	"github.com/paddock-dev/paddock/appliance/driver"
)

// desktopLocks holds one lock per box: its requests of desktop actions
// run one at a time, so that two agent loops on one desktop do not
// interleave their clicks.
type desktopLocks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

func (l *desktopLocks) of(box string) *sync.Mutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*sync.Mutex{}
	}
	if l.m[box] == nil {
		l.m[box] = &sync.Mutex{}
	}
	return l.m[box]
}

// DesktopActions runs a request's actions on a box's desktop, in order
// (package computer), and answers with each one's result and, when
// asked, a screenshot. The first action that fails stops the rest; the
// error says which, and how many were done.
func (s *Service) DesktopActions(ctx context.Context, name string, p api.DesktopActionsPost) (api.DesktopActionsResult, error) {
	if err := computer.Check(p); err != nil {
		return api.DesktopActionsResult{}, err
	}
	used, _, err := s.Use(ctx, name)
	if err != nil {
		return api.DesktopActionsResult{}, err
	}
	defer used()
	if err := s.DesktopBox(name); err != nil {
		return api.DesktopActionsResult{}, err
	}
	if p.Scale == 0 {
		p.Scale = 1
	}
	lock := s.desktop.of(name)
	lock.Lock()
	defer lock.Unlock()
	bound := computer.Bound(p)
	in, err := json.Marshal(p)
	if err != nil {
		return api.DesktopActionsResult{}, err
	}
	out := &limitedBuffer{max: 16 * maxScreenshot}
	errb := &limitedBuffer{max: 64 << 10}
	code, err := s.Driver.Exec(ctx, s.engineName(name), driver.ExecSpec{
		Cmd: []string{"python3", "-c", computer.Script}, Env: []string{"DISPLAY=" + Display},
		Stdin: bytes.NewReader(in), Stdout: out, Stderr: errb, Timeout: bound,
	})
	if err != nil {
		return api.DesktopActionsResult{}, err
	}
	if out.over {
		return api.DesktopActionsResult{}, fmt.Errorf("the desktop actions of box %q answered more than %d MiB", name, out.max>>20)
	}
	return computer.Answer(name, p, out.Bytes(), code, errb.String(), bound)
}
