package jobs

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
)

// A job whose exec breaks because its box stopped is killed, and its log
// says so; one whose exec breaks while the box runs on is lost; one that
// ends by itself exited with its code.
func TestAJobOfAStoppedBoxIsKilled(t *testing.T) {
	jb, s, drv := withCore(t)
	s.Cfg.StateDir = t.TempDir()
	ctx := context.Background()
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	release := make(chan error)
	drv.ExecFunc = func(string, driver.ExecSpec) (int, error) {
		if err := <-release; err != nil {
			return -1, err
		}
		return 0, nil
	}
	ended := func(id string) api.Job {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if j, err := jb.Get("b", id); err != nil || j.State != "running" {
				if err != nil {
					t.Fatal(err)
				}
				return j
			}
		}
		t.Fatalf("job %s did not end", id)
		return api.Job{}
	}
	broken := errors.New("the box's warm exec ended while the command ran: EOF")

	lost, err := jb.Start("b", api.ExecPost{Cmd: []string{"sleep", "1"}})
	if err != nil {
		t.Fatal(err)
	}
	release <- broken
	if j := ended(lost.ID); j.State != "lost" || j.ExitCode != nil {
		t.Fatalf("a broken exec in a running box: %+v", j)
	}

	done, err := jb.Start("b", api.ExecPost{Cmd: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	release <- nil
	if j := ended(done.ID); j.State != "exited" || j.ExitCode == nil || *j.ExitCode != 0 {
		t.Fatalf("a job that ended: %+v", j)
	}

	killed, err := jb.Start("b", api.ExecPost{Cmd: []string{"sleep", "infinity"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.StopBox(ctx, "b", "stop"); err != nil {
		t.Fatal(err)
	}
	release <- broken
	if j := ended(killed.ID); j.State != "killed" || j.ExitCode != nil {
		t.Fatalf("a job whose box stopped: %+v", j)
	}
	log, err := os.ReadFile(jb.jobLog(killed.ID))
	if err != nil || !strings.Contains(string(log), "paddock: job killed: its box stopped while it ran") || strings.Contains(string(log), "EOF") {
		t.Fatalf("its log: %q %v", log, err)
	}
}

// How an exec's end reads, for each way it can end.
func TestJobEnd(t *testing.T) {
	eof := errors.New("EOF")
	for _, c := range []struct {
		code    int
		err     error
		stopped bool
		state   string
		exit    string
	}{
		{0, nil, false, "exited", "0"},
		{137, nil, false, "exited", "137"},
		{3, nil, true, "exited", "3"}, // it ended by itself, then the box stopped
		{137, nil, true, "killed", "137"},
		{-1, eof, true, "killed", "-"},
		{-1, eof, false, "lost", "-"},
	} {
		state, exit := jobEnd(c.code, c.err, c.stopped)
		got := "-"
		if exit != nil {
			got = strconv.Itoa(*exit)
		}
		if state != c.state || got != c.exit {
			t.Errorf("jobEnd(%d, %v, stopped %v) = %s %s, want %s %s", c.code, c.err, c.stopped, state, got, c.state, c.exit)
		}
	}
}

// A job in a terminal runs with one, of the size asked, its input open;
// a resize reaches its command while it runs (its answer waits until the
// driver says the terminal has it: input sent next is read at that size),
// and is refused once it has ended, as it is for a job without a
// terminal.
func TestTerminalJob(t *testing.T) {
	jb, s, drv := withCore(t)
	s.Cfg.StateDir = t.TempDir()
	if _, err := s.CreateBox(context.Background(), api.BoxPost{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	sizes := make(chan [2]uint16, 2)
	var has atomic.Value // the terminal's size, as the driver set it
	drv.ExecFunc = func(_ string, spec driver.ExecSpec) (int, error) {
		if !spec.TTY || spec.Stdin == nil || spec.Rows != 30 || spec.Cols != 100 || spec.Resize == nil || spec.Resized == nil {
			return 1, nil
		}
		for sz := range spec.Resize {
			has.Store(sz)
			sizes <- sz
			spec.Resized <- sz
			if sz == [2]uint16{1, 1} {
				return 0, nil
			}
		}
		return 2, nil
	}
	j, _, err := jb.StartWithOptions("b", api.ExecPost{Cmd: []string{"bash"}, Rows: 30, Cols: 100}, StartOptions{TTY: true})
	if err != nil {
		t.Fatal(err)
	}
	if !jb.Terminal("b", j.ID) {
		t.Fatal("a job started in a terminal says it has none")
	}
	if err := jb.Resize("b", j.ID, 40, 120); err != nil {
		t.Fatal(err)
	}
	if sz, _ := has.Load().([2]uint16); sz != [2]uint16{40, 120} {
		t.Fatalf("the resize answered before the terminal had its size (it has %v)", sz)
	}
	if sz := <-sizes; sz != [2]uint16{40, 120} {
		t.Fatalf("the command saw %v", sz)
	}
	if err := jb.Resize("b", j.ID, 1, 1); err != nil {
		t.Fatal(err)
	}
	<-sizes
	for deadline := time.Now().Add(10 * time.Second); jb.Terminal("b", j.ID); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the job did not end")
		}
	}
	if got, _ := jb.Get("b", j.ID); got.ExitCode == nil || *got.ExitCode != 0 {
		t.Fatalf("the terminal's command was not run as asked: %+v", got)
	}
	if err := jb.Resize("b", j.ID, 40, 120); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("a resize after the end: %v", err)
	}
	drv.ExecFunc = func(string, driver.ExecSpec) (int, error) { <-t.Context().Done(); return -1, t.Context().Err() }
	plain, err := jb.Start("b", api.ExecPost{Cmd: []string{"sleep", "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := jb.Resize("b", plain.ID, 40, 120); err == nil || !strings.Contains(err.Error(), "no terminal") {
		t.Fatalf("a resize of a job without a terminal: %v", err)
	}
}
