package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Idle stop, and waking on use.
//
// A box with an idle stop (its own: 'new --idle-stop', a Boxfile's
// idle_stop; else its type's) that went that long unused is stopped as
// 'paddock stop' stops it (a snapshot, then the stop), with a note that
// says so, and sleeps. Use is what people and programs do with a box
// through Paddock: a command (exec, a job, an agent's prompt), an SSH
// connection, the web terminal, a desktop viewer, a push or a pull, a
// preview request (Use). What lasts (a command, a session, a job, a
// viewer) counts until it ends. Paddock's own looks at a box (show's
// probes, the pool's, the disk check's) are not use. Between two looks
// (idle_check_interval), a box whose processes used more than idle_cpu
// CPUs on average is in use too: a server it runs with no one asking, a
// build left running.
//
// A sleeping box wakes on use: the request starts it (as 'paddock start'
// does, its files as they were) and then goes on. A box stopped by hand
// or for its disk does not: the request says how to start it. A TTL ends
// a box whatever its use.
//
// Use is kept in this process: after paddockd starts, a box's unused
// time counts from its first look.

// boxUse is what is known of a box's use.
type boxUse struct {
	last time.Time // the last use, or the first look
	open int       // uses under way
	// cpu is the box's CPU time at the last look, taken at cpuAt.
	cpu   time.Duration
	cpuAt time.Time
}

// idleStopOf is how long box b may go unused (0: no idle stop).
func idleStopOf(b store.Box, types map[string]config.BoxType) time.Duration {
	switch {
	case b.IdleStop < 0:
		return 0
	case b.IdleStop > 0:
		return b.IdleStop
	}
	return types[b.Type].IdleStop
}

// useOf is box name's use record, made (as used now) at its first look.
// Called with memMu held.
func (s *Service) useOf(name string) *boxUse {
	if s.uses == nil {
		s.uses = map[string]*boxUse{}
	}
	u, ok := s.uses[name]
	if !ok {
		u = &boxUse{last: s.now()}
		s.uses[name] = u
	}
	return u
}

// touch marks a box used now (a start counts as use).
func (s *Service) touch(name string) {
	s.memMu.Lock()
	s.useOf(name).last = s.now()
	s.memMu.Unlock()
}

// Use marks box name in use until done is called, first waking it when
// its idle stop put it to sleep (woke says so): it is started, and Use
// returns once it runs. A box that does not exist, or was stopped
// otherwise, is left as it is: what the caller does next says why it
// cannot. The caller has checked that the user may use the box.
func (s *Service) Use(ctx context.Context, name string) (done func(), woke bool, err error) {
	b, err := s.Store.GetBox(name)
	if err == nil && b.Asleep() {
		// One wake at a time: a second use waits, then finds it awake.
		s.wakeMu.Lock()
		b, err = s.Store.GetBox(name)
		switch {
		case err != nil || !b.Asleep():
		case b.ExpiresAt != nil && !b.ExpiresAt.After(s.now()):
			// Its TTL ran out while it slept: it stays stopped, as a TTL
			// leaves a box, and says so.
			err = s.UpdateBox(name, func(_ *store.Tx, sb *store.Box) error {
				sb.Slept = false
				sb.Note = fmt.Sprintf("its TTL ran out at %s while it slept: 'paddock start %s' starts it again", b.ExpiresAt.UTC().Format(time.RFC3339), name)
				return nil
			})
		default:
			s.Log.Info("waking a box on use", "box", name)
			_, err = s.startBox(ctx, name, true)
			woke = err == nil
		}
		s.wakeMu.Unlock()
		if err != nil {
			return nil, false, fmt.Errorf("waking box %q: %w", name, err)
		}
	}
	if err != nil {
		// No such box: nothing to count (the caller's own check says so).
		return func() {}, false, nil
	}
	return s.counted(name), woke, nil
}

// UseAwake is Use of box b, just read by the caller and not asleep
// (b.Asleep() false: a sleeping one goes through Use, which wakes it):
// it is marked in use until done is called, with no read of its own.
func (s *Service) UseAwake(b store.Box) (done func()) {
	return s.counted(b.Name)
}

// counted marks box name in use until the function it returns is called
// (once; more calls do nothing).
func (s *Service) counted(name string) func() {
	s.memMu.Lock()
	u := s.useOf(name)
	u.open++
	u.last = s.now()
	s.memMu.Unlock()
	var once bool
	return func() {
		s.memMu.Lock()
		defer s.memMu.Unlock()
		if !once {
			once = true
			u.open--
			u.last = s.now()
		}
	}
}

// CheckIdle stops the running boxes that went unused for their idle stop:
// no use under way, none since, and their CPU under idle_cpu since the
// last look.
func (s *Service) CheckIdle(ctx context.Context) error {
	boxes, err := s.Store.ListBoxes()
	if err != nil {
		return err
	}
	meter := driver.BoxUsage.Has(s.Driver)
	// The use of boxes that are gone is forgotten.
	declared := map[string]bool{}
	for _, b := range boxes {
		declared[b.Name] = true
	}
	s.memMu.Lock()
	for name, u := range s.uses {
		if u.open == 0 && !declared[name] {
			delete(s.uses, name)
		}
	}
	s.memMu.Unlock()
	var errs []error
	for _, b := range boxes {
		idle := idleStopOf(b, s.Cfg.Types)
		if idle <= 0 || b.Desired != "running" || b.Observed != "running" {
			continue
		}
		now := s.now()
		s.memMu.Lock()
		u := s.useOf(b.Name)
		open, prevCPU, prevAt := u.open, u.cpu, u.cpuAt
		s.memMu.Unlock()
		if open > 0 {
			continue
		}
		cpu, cpuErr := time.Duration(0), errors.ErrUnsupported
		if meter {
			var u driver.Usage
			u, cpuErr = driver.BoxUsage.Do(ctx, s.Driver, b.Key())
			cpu = u.CPU
		}
		s.memMu.Lock()
		if cpuErr == nil {
			// Busy since the last look: in use now.
			if !prevAt.IsZero() && cpu >= prevCPU && float64(cpu-prevCPU) > s.Cfg.IdleCPU*float64(now.Sub(prevAt)) {
				u.last = now
			}
			u.cpu, u.cpuAt = cpu, now
		}
		unused := now.Sub(u.last)
		s.memMu.Unlock()
		if unused < idle {
			continue
		}
		if err := s.sleep(ctx, b.Name, idle); err != nil {
			errs = append(errs, fmt.Errorf("idle stop of %s: %w", b.Name, err))
		}
	}
	return errors.Join(errs...)
}

// errUsedAgain is a sleep given up: the box was used meanwhile.
var errUsedAgain = errors.New("used again")

// sleep stops a box its idle stop ends: a snapshot, then the stop, with a
// note; it wakes on use. A use that began meanwhile keeps it running.
func (s *Service) sleep(ctx context.Context, name string, idle time.Duration) error {
	var snap string
	err := s.UpdateBox(name, func(tx *store.Tx, b *store.Box) error {
		s.memMu.Lock()
		u := s.useOf(name)
		used := u.open > 0 || s.now().Sub(u.last) < idle
		s.memMu.Unlock()
		if used || b.Desired != "running" {
			return errUsedAgain
		}
		b.Desired, b.Slept = "stopped", true
		b.Note = fmt.Sprintf("stopped at %s: unused for %s (its idle stop); its next use starts it again",
			s.now().UTC().Format(time.RFC3339), idle)
		sn, err := s.addSnapshot(tx, name, "idle")
		snap = sn.ID
		return err
	})
	if errors.Is(err, errUsedAgain) {
		return nil
	}
	s.Log.Info("idle stop", "box", name, "idle_stop", idle)
	addrs := []string{"box." + name}
	if snap != "" {
		addrs = append(addrs, "snapshot."+snap)
	}
	_, err = s.Settle(ctx, name, err, addrs...)
	return err
}
