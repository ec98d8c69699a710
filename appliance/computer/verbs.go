package computer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/capped"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Core is what computer use needs of paddockd's core (package service's
// Service has it): a box in use while its actions run (a sleeping one
// wakes), the box as it runs with its desktop, and a command in it.
type Core interface {
	Use(ctx context.Context, box string) (done func(), woke bool, err error)
	DesktopBox(name string) (store.Box, error)
	RunIn(ctx context.Context, b store.Box, spec driver.ExecSpec) (int, error)
}

// maxAnswer bounds what one request's actions answer (screenshots
// among them).
const maxAnswer = 1 << 30

// Computer is the verb of computer use and its API route.
type Computer struct {
	Core Core
	// locks holds one lock per box: its requests of desktop actions run
	// one at a time, so that two agent loops on one desktop do not
	// interleave their clicks.
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// New is computer use over core.
func New(core Core) *Computer { return &Computer{Core: core} }

func (c *Computer) lockOf(box string) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.locks == nil {
		c.locks = map[string]*sync.Mutex{}
	}
	if c.locks[box] == nil {
		c.locks[box] = &sync.Mutex{}
	}
	return c.locks[box]
}

// DesktopActions runs a request's actions on a box's desktop, in order,
// and answers with each one's result and, when asked, a screenshot. The
// first action that fails stops the rest; the error says which, and how
// many were done.
func (c *Computer) DesktopActions(ctx context.Context, name string, p api.DesktopActionsPost) (api.DesktopActionsResult, error) {
	if err := Check(p); err != nil {
		return api.DesktopActionsResult{}, err
	}
	used, _, err := c.Core.Use(ctx, name)
	if err != nil {
		return api.DesktopActionsResult{}, err
	}
	defer used()
	b, err := c.Core.DesktopBox(name)
	if err != nil {
		return api.DesktopActionsResult{}, err
	}
	if p.Scale == 0 {
		p.Scale = 1
	}
	lock := c.lockOf(name)
	lock.Lock()
	defer lock.Unlock()
	bound := Bound(p)
	in, err := json.Marshal(p)
	if err != nil {
		return api.DesktopActionsResult{}, err
	}
	out := &capped.Buffer{Max: maxAnswer}
	errb := &capped.Buffer{Max: 64 << 10}
	code, err := c.Core.RunIn(ctx, b, driver.ExecSpec{
		Cmd: []string{"python3", "-c", Script}, Env: []string{"DISPLAY=" + driver.Display},
		Stdin: bytes.NewReader(in), Stdout: out, Stderr: errb, Timeout: bound,
	})
	if err != nil {
		return api.DesktopActionsResult{}, err
	}
	if out.Over {
		return api.DesktopActionsResult{}, fmt.Errorf("the desktop actions of box %q answered more than %d MiB", name, out.Max>>20)
	}
	return Answer(name, p, out.Bytes(), code, errb.String(), bound)
}

// Routes registers computer use's API route.
func (c *Computer) Routes(a route.API) {
	a.Handle("POST /"+api.Version+"/boxes/{name}/desktop/actions", c.desktopActions)
}

func (c *Computer) desktopActions(w http.ResponseWriter, r *http.Request) error {
	var p api.DesktopActionsPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	names := make([]string, len(p.Actions))
	for i, a := range p.Actions {
		names[i] = a.Action
	}
	audit.From(r.Context()).Note("actions", names)
	res, err := c.DesktopActions(r.Context(), r.PathValue("name"), p)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, res)
}
