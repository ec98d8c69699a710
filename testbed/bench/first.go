package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/testbed/harness"
)

// benchFirst measures a user's first request on a server just started:
// 'paddock new' then 'paddock push' of the node_modules-shaped tree, as
// soon as paddockd answers, with its warm pool of desktop boxes to fill
// (background work), beside the same on a server just started with no
// pool (no background work), runs of each in turn; and, on the first
// kind, the same once it has settled, and on the second kind the same
// once it has settled (a cold create again: the like-for-like figure
// for the first request without a pool). Each run has a daemon of its own,
// and no daemon is removed before the last run: ext4 is slow to make
// files for about 30 s after many were deleted, which would weigh on
// whichever run came next.
func benchFirst(bins harness.Bins, image, work string, n int) (withPool, noPool, settled, settledCold sample) {
	modules, _, _ := makeModules(filepath.Join(work, "trees"))
	// The tree was just written: its pages go to the disk first, or the
	// first run's push would compete with that.
	syscall.Sync()
	var ds [4][]time.Duration
	var daemons []*harness.Daemon
	defer func() {
		for _, d := range daemons {
			d.Cleanup()
		}
	}()
	for i := range 2 * n {
		pool := i%2 == 0
		d, err := harness.NewDaemon(bins, image, filepath.Join(work, fmt.Sprintf("first%d", i)))
		check(err)
		size := 0
		if pool {
			size = poolSize
		}
		d.Env = []string{"PADDOCK_LOG_LEVEL=warn", fmt.Sprintf("PADDOCK_WARM_POOL__SMALL=%d", size), "PADDOCK_DESKTOP_DEFAULT=true"}
		check(d.Start())
		daemons = append(daemons, d)
		r := &runner{env: append(d.CLIEnv(), "PADDOCK_CONFIG_DIR="+filepath.Join(work, fmt.Sprintf("first%d-cli", i))), bins: bins}
		newPush := func(name string) time.Duration {
			t0 := time.Now()
			r.paddock("new", "--name", name)
			r.paddock("push", name, modules, "--to", "/config/p", "--no-ignore")
			return time.Since(t0)
		}
		if !pool {
			ds[1] = append(ds[1], newPush("first"))
			time.Sleep(5 * time.Second)
			ds[3] = append(ds[3], newPush("settled"))
			continue
		}
		ds[0] = append(ds[0], newPush("first"))
		db, err := d.StateDB()
		check(err)
		waitPoolReady(db, 3*time.Minute)
		db.Close()
		time.Sleep(5 * time.Second)
		ds[2] = append(ds[2], newPush("settled"))
	}
	med := func(ds []time.Duration) sample {
		slices.Sort(ds)
		return sample{P50: ds[len(ds)/2], P95: ds[len(ds)-1], N: len(ds)}
	}
	return med(ds[0]), med(ds[1]), med(ds[2]), med(ds[3])
}

// printFirst prints the first-request figures: with the pool's
// background work against without it (goal: a ratio near 1), and the
// settled figures: the first request against the same request on the
// same kind of server once settled (goal: a ratio near 1 too).
func printFirst(withPool, noPool, settled, settledCold sample) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "new + push of the node_modules tree, paddockd just started\tp50\tmax\truns\t")
	fmt.Fprintf(tw, "with a warm pool of %d desktop boxes filling\t%s\t%s\t%d\t\n", poolSize, withPool.P50.Round(time.Millisecond), withPool.P95.Round(time.Millisecond), withPool.N)
	fmt.Fprintf(tw, "with no pool (no background work)\t%s\t%s\t%d\t\n", noPool.P50.Round(time.Millisecond), noPool.P95.Round(time.Millisecond), noPool.N)
	fmt.Fprintf(tw, "the first kind, settled (pool full, 5 s idle)\t%s\t%s\t%d\t\n", settled.P50.Round(time.Millisecond), settled.P95.Round(time.Millisecond), settled.N)
	fmt.Fprintf(tw, "the second kind, settled (no pool, 5 s idle: a cold create)\t%s\t%s\t%d\t\n", settledCold.P50.Round(time.Millisecond), settledCold.P95.Round(time.Millisecond), settledCold.N)
	tw.Flush()
	fmt.Printf("ratio with pool / without: %.2f\n", float64(withPool.P50)/float64(noPool.P50))
	fmt.Printf("ratio just started / settled, no pool: %.2f\n", float64(noPool.P50)/float64(settledCold.P50))
}
