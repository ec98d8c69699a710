package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

// A member with a quota of 2 running jobs starts 20 at once, each request
// let go at the same moment: the count and the record were two steps,
// and up to 5 of 20 ran with a quota of 1. Now 2 run; the others are
// refused naming the quota.
func TestAttackJobQuotaRace(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mallory := member(t, d, "mallory")
	two := 2
	if _, err := d.Client().SetQuota(ctx, "mallory", api.QuotaPut{Jobs: &two}); err != nil {
		t.Fatal(err)
	}
	if _, err := mallory.CreateBox(ctx, api.BoxPost{Name: "jr"}); err != nil {
		t.Fatal(err)
	}
	// A first command, so that the box's warm exec is up before the race.
	if _, err := mallory.StartJob(ctx, "jr", api.ExecPost{Cmd: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the first job's end", func() bool {
		js, err := mallory.Jobs(ctx, "jr")
		return err == nil && len(js) == 1 && js[0].State != "running"
	})
	go20 := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	started, refused := 0, 0
	for range 20 {
		wg.Go(func() {
			<-go20
			_, err := mallory.StartJob(ctx, "jr", api.ExecPost{Cmd: []string{"sleep", "300"}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				started++
			case strings.Contains(err.Error(), "has 2 jobs running, the most allowed"):
				refused++
			default:
				t.Errorf("a job start: %v", err)
			}
		})
	}
	close(go20)
	wg.Wait()
	js, err := mallory.Jobs(ctx, "jr")
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, j := range js {
		if j.State == "running" {
			running++
		}
	}
	if started != 2 || refused != 18 || running != 2 {
		t.Fatalf("20 job starts at once with a quota of 2: %d started, %d refused, %d running", started, refused, running)
	}
}
