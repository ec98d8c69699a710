package service

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

func withIdle(t config.BoxType, d time.Duration) config.BoxType {
	t.IdleStop = d
	return t
}

// A box with an idle stop is stopped, with a snapshot and a note, once
// unused that long; a use under way (a command, a session) or CPU over
// idle_cpu between two looks keeps it running; a sleeping box wakes on
// use (its TTL kept), a box stopped by hand does not; a TTL that ran out
// while it slept leaves it stopped; and a box without an idle stop is
// never stopped for it.
func TestIdleStopAndWake(t *testing.T) {
	s, drv := newService(t)
	var mu sync.Mutex
	now := time.Now()
	s.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	later := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ctx := context.Background()
	for _, p := range []api.BoxPost{{Name: "idle", IdleStop: "30m"}, {Name: "keep"}, {Name: "off", IdleStop: "off"}} {
		if _, err := s.CreateBox(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "bad", IdleStop: "soon"}); err == nil || !strings.Contains(err.Error(), "idle_stop") {
		t.Fatalf("a bad idle stop: %v", err)
	}
	check := func() {
		t.Helper()
		if err := s.CheckIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	state := func(name string) api.Box {
		t.Helper()
		b, err := s.GetBox(name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	check() // the first look: unused from now
	later(29 * time.Minute)
	check()
	if b := state("idle"); b.Desired != "running" {
		t.Fatalf("after 29 minutes: %s", b.Desired)
	}
	// A command under way keeps it, however long it lasts.
	done, woke, err := s.Use(ctx, "idle")
	if err != nil || woke {
		t.Fatalf("use of a running box: woke %v, %v", woke, err)
	}
	later(2 * time.Hour)
	check()
	if b := state("idle"); b.Desired != "running" {
		t.Fatalf("stopped while a command ran: %s", b.Desired)
	}
	done()
	// CPU over idle_cpu between two looks is use.
	later(20 * time.Minute)
	check()
	drv.Use = map[string]driver.Usage{"idle": {CPU: 15 * time.Minute}} // 15 of 20 minutes: busy
	later(20 * time.Minute)
	check()
	if b := state("idle"); b.Desired != "running" {
		t.Fatalf("stopped while its CPU was busy: %s", b.Desired)
	}
	s.Cfg.Types["small"] = withIdle(s.Cfg.Types["small"], 0)
	later(31 * time.Minute)
	check()
	b := state("idle")
	if b.Desired != "stopped" || !b.Sleeping || !strings.Contains(b.Note, "unused for 30m0s") {
		t.Fatalf("after 31 unused minutes: desired %s, sleeping %v, note %q", b.Desired, b.Sleeping, b.Note)
	}
	if snaps, _ := s.Store.ListSnapshots("idle"); len(snaps) != 1 || snaps[0].Reason != "idle" {
		t.Fatalf("the idle stop's snapshot: %+v", snaps)
	}
	if b := state("keep"); b.Desired != "running" {
		t.Fatalf("a box with no idle stop: %s", b.Desired)
	}
	// A use wakes it, and it runs.
	done, woke, err = s.Use(ctx, "idle")
	if err != nil || !woke {
		t.Fatalf("use of a sleeping box: woke %v, %v", woke, err)
	}
	done()
	if b := state("idle"); b.Desired != "running" || b.Sleeping || b.Note != "" {
		t.Fatalf("after the wake: %+v", b)
	}
	// Stopped by hand: no wake.
	if _, err := s.StopBox(ctx, "idle", "user"); err != nil {
		t.Fatal(err)
	}
	if _, woke, err := s.Use(ctx, "idle"); err != nil || woke {
		t.Fatalf("use of a box stopped by hand: woke %v, %v", woke, err)
	}
	if b := state("idle"); b.Desired != "stopped" {
		t.Fatalf("a box stopped by hand was started: %s", b.Desired)
	}
	// A type's idle stop applies to boxes without their own; "off" wins.
	// (Its unused time counts from the first look with an idle stop.)
	s.Cfg.Types["small"] = withIdle(s.Cfg.Types["small"], time.Hour)
	check()
	later(61 * time.Minute)
	check()
	if b := state("keep"); b.Desired != "stopped" || !b.Sleeping {
		t.Fatalf("a box of a type with idle_stop = 1h, after 61 minutes: %s", b.Desired)
	}
	if b := state("off"); b.Desired != "running" {
		t.Fatalf("a box with idle_stop off: %s", b.Desired)
	}
	// A TTL that ran out while it slept: no wake, and a note.
	if err := s.UpdateBox("keep", func(_ *store.Tx, sb *store.Box) error {
		exp := now.Add(-time.Minute)
		sb.ExpiresAt = &exp
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, woke, err := s.Use(ctx, "keep"); err != nil || woke {
		t.Fatalf("use of a sleeping box whose TTL ran out: woke %v, %v", woke, err)
	}
	if b := state("keep"); b.Desired != "stopped" || b.Sleeping || !strings.Contains(b.Note, "TTL ran out") {
		t.Fatalf("after its TTL ran out asleep: %+v", b)
	}
	// Stopped by hand while asleep: it sleeps no more (no wake on use).
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "nap", IdleStop: "10m"}); err != nil {
		t.Fatal(err)
	}
	check()
	later(11 * time.Minute)
	check()
	if b := state("nap"); !b.Sleeping {
		t.Fatalf("nap after 11 unused minutes: %+v", b)
	}
	if _, err := s.StopBox(ctx, "nap", "user"); err != nil {
		t.Fatal(err)
	}
	if _, woke, err := s.Use(ctx, "nap"); err != nil || woke || state("nap").Sleeping {
		t.Fatalf("use of a sleeping box then stopped by hand: woke %v, %v", woke, err)
	}
}

// A running job is a use of its box until it ends, however long and
// whatever CPU it uses (none here): its box is not stopped for idleness
// meanwhile, and is once the job has ended and the idle stop has passed.
func TestAJobKeepsItsBoxAwake(t *testing.T) {
	s, drv := newService(t)
	var mu sync.Mutex
	now := time.Now()
	s.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	later := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ctx := context.Background()
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "worker", IdleStop: "30m"}); err != nil {
		t.Fatal(err)
	}
	release, ended := make(chan struct{}), make(chan struct{})
	drv.ExecFunc = func(box string, spec driver.ExecSpec) (int, error) {
		defer close(ended)
		<-release
		return 0, nil
	}
	if err := s.CheckIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := jobsOf(s).Start("worker", api.ExecPost{Cmd: []string{"sleep", "infinity"}}); err != nil {
		t.Fatal(err)
	}
	desired := func() string {
		b, err := s.GetBox("worker")
		if err != nil {
			t.Fatal(err)
		}
		return b.Desired
	}
	for range 4 {
		later(time.Hour)
		if err := s.CheckIdle(ctx); err != nil {
			t.Fatal(err)
		}
		if d := desired(); d != "running" {
			t.Fatalf("stopped for idleness while its job ran: %s", d)
		}
	}
	close(release)
	<-ended
	// The job's end is its last use: the box sleeps an idle stop later.
	deadline := time.Now().Add(10 * time.Second)
	for desired() == "running" && time.Now().Before(deadline) {
		later(31 * time.Minute)
		if err := s.CheckIdle(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d := desired(); d != "stopped" {
		t.Fatalf("after its job ended and the idle stop passed: %s", d)
	}
}
