package jobs

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
)

// A tap started with its job has all its output, stdout and stderr apart
// and in order, then its end once the end is recorded; the log has them
// as one. A tap taken later has what comes after; a reader that falls
// too far behind is cut off and the job runs on.
func TestTaps(t *testing.T) {
	jb, s, drv := withCore(t)
	s.Cfg.StateDir = t.TempDir()
	ctx := context.Background()
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	step := make(chan string)
	drv.ExecFunc = func(_ string, spec driver.ExecSpec) (int, error) {
		if spec.User != "root" {
			return 1, errors.New("not as root")
		}
		for w := range step {
			if w == "end" {
				return 3, nil
			}
			out := spec.Stdout
			if strings.HasPrefix(w, "err:") {
				out = spec.Stderr
			}
			io.WriteString(out, w)
		}
		return 0, nil
	}
	j, tap, err := jb.StartWithOptions("b", api.ExecPost{Cmd: []string{"x"}}, StartOptions{User: "root", Tap: true})
	if err != nil {
		t.Fatal(err)
	}
	next := func(tp *JobTap) string {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		data, stderr, err := tp.Next(c)
		if err != nil {
			return err.Error()
		}
		if stderr {
			return "stderr " + string(data)
		}
		return "stdout " + string(data)
	}
	step <- "one"
	step <- "err:two"
	if got := next(tap) + "|" + next(tap); got != "stdout one|stderr err:two" {
		t.Fatalf("the first tap: %s", got)
	}
	later, err := jb.Tap("b", j.ID)
	if err != nil {
		t.Fatal(err)
	}
	step <- "three"
	if a, b := next(tap), next(later); a != "stdout three" || b != "stdout three" {
		t.Fatalf("after a second tap: %s, %s", a, b)
	}
	later.Close()
	step <- "end"
	if got := next(tap); got != io.EOF.Error() {
		t.Fatalf("after the end: %s", got)
	}
	if got, _ := jb.Get("b", j.ID); got.State != "exited" || got.ExitCode == nil || *got.ExitCode != 3 {
		t.Fatalf("at the tap's end the job is %+v", got)
	}
	if _, err := jb.Tap("b", j.ID); err == nil {
		t.Fatal("a tap of a job that ended")
	}

	// Behind by more than the backlog: cut off, the job's log whole.
	step = make(chan string)
	_, slow, err := jb.StartWithOptions("b", api.ExecPost{Cmd: []string{"x"}}, StartOptions{User: "root", Tap: true})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 1<<20)
	for range MaxTapBacklog>>20 + 1 {
		step <- big
	}
	step <- "end"
	for {
		if got := next(slow); got == ErrTapBehind.Error() {
			break
		} else if got == io.EOF.Error() {
			t.Fatal("a reader past the backlog read to the end")
		}
	}
}
