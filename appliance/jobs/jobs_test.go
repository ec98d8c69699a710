package jobs

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
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
