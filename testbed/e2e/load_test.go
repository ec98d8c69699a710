package e2e

import (
	"context"
	"testing"

	"github.com/paddock-dev/paddock/testbed/load"
)

// A short mixed load (load.Short: boxes, concurrent exec streams,
// concurrent pushes, an events follower and a job-log follower, 15 s):
// no request fails, and paddockd's memory comes back near where it
// started. The full load runs from the bench (-section load). The run
// also says what an exec cost the machine, part by part (the bench's
// bound on a loaded exec's round trip): each part it reads is there.
func TestLoad(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	res, err := load.Run(context.Background(), d, load.Short)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	for _, e := range res.Errors {
		t.Errorf("under load: %s", e)
	}
	if res.Execs == 0 || res.Pushes == 0 || res.Events == 0 {
		t.Errorf("the load did not run: %d execs, %d pushes, %d events", res.Execs, res.Pushes, res.Events)
	}
	if u := res.CPU; u.PerExec <= 0 || u.Daemon <= 0 || u.Engine <= 0 || u.Client <= 0 || u.Boxes <= 0 {
		t.Errorf("the machine's time an exec not read, or a part missing: %+v", u)
	}
	// Memory: back within 20% of the start, or 16 MB (a small heap's
	// noise), whichever is more.
	if slack := max(res.RSSStart/5, 16<<20); res.RSSEnd > res.RSSStart+slack {
		t.Errorf("paddockd kept %d bytes after the load, from %d at the start", res.RSSEnd, res.RSSStart)
	}
}
