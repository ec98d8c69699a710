package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// poolSize is the warm pool of the pool section's daemon.
const poolSize = 2

// benchPool measures a new box's first command with a warm pool of small
// boxes: new, then exec true, through the CLI (two process starts; to
// paddockd's own HTTP address, then as a user's, through HTTPS) and
// through the API (the Go client, as the SDKs do), each run starting with
// the pool full and ready (waited for, untimed); beside them the cold
// path through the API (a medium box: the pool has none) and docker run
// -d + docker exec of the same container, in the same run. With idle > 0,
// that many other boxes (medium: not from the pool) run meanwhile.
func benchPool(bins harness.Bins, image, work string, n, idle int) []row {
	d, err := harness.NewDaemon(bins, image, filepath.Join(work, "pool"))
	check(err)
	door, httpsAddr := frontDoor()
	d.Env = append([]string{"PADDOCK_LOG_LEVEL=warn", fmt.Sprintf("PADDOCK_WARM_POOL__SMALL=%d", poolSize)}, door...)
	check(d.Start())
	defer d.Cleanup()
	onError(func() { keepLog(d, "failed-"); d.Cleanup() })
	rf, stopProxy := httpsRunner(d, bins, httpsAddr, filepath.Join(work, "pool-cli-https"))
	defer stopProxy()
	raw := "pdkbench-" + d.Instance
	defer harness.Sweep(raw)
	onError(func() { harness.Sweep(raw) })
	db, err := d.StateDB()
	check(err)
	defer db.Close()
	full := func(int) { waitPoolReady(db, 2*time.Minute) }
	r := &runner{env: append(d.CLIEnv(), "PADDOCK_CONFIG_DIR="+filepath.Join(work, "pool-cli")), bins: bins}
	c := d.Client()
	ctx := context.Background()
	claims := 0
	claimed := func(name string) {
		var engine string
		check(db.QueryRow(`SELECT engine FROM boxes WHERE name=?`, name).Scan(&engine))
		if engine != "" {
			claims++
		}
	}
	apiNew := func(name, typ string) {
		_, err := c.CreateBox(ctx, api.BoxPost{Name: name, Type: typ})
		check(err)
		apiExecTrue(c, name)
	}
	var rows []row
	runs := max(n*2, 10)
	for i := range idle {
		_, err := c.CreateBox(ctx, api.BoxPost{Name: fmt.Sprintf("idle%d", i), Type: "medium"})
		check(err)
	}

	cli := timeIt(runs, full, func(i int) {
		r.paddock("new", "--name", fmt.Sprintf("wc%d", i))
		r.paddock("exec", fmt.Sprintf("wc%d", i), "--", "true")
	}, func(i int) { claimed(fmt.Sprintf("wc%d", i)); r.paddock("rm", "--force", fmt.Sprintf("wc%d", i)) })
	// As a user's CLI on another machine: HTTPS through Caddy, a new TLS
	// connection per command.
	cliHTTPS := timeIt(runs, full, func(i int) {
		rf.paddock("new", "--name", fmt.Sprintf("wh%d", i))
		rf.paddock("exec", fmt.Sprintf("wh%d", i), "--", "true")
	}, func(i int) { claimed(fmt.Sprintf("wh%d", i)); r.paddock("rm", "--force", fmt.Sprintf("wh%d", i)) })
	warm := timeIt(runs, full, func(i int) { apiNew(fmt.Sprintf("wa%d", i), "small") },
		func(i int) { claimed(fmt.Sprintf("wa%d", i)); check(c.RemoveBox(ctx, fmt.Sprintf("wa%d", i))) })
	cold := timeIt(n, full, func(i int) { apiNew(fmt.Sprintf("ca%d", i), "medium") },
		func(i int) { check(c.RemoveBox(ctx, fmt.Sprintf("ca%d", i))) })
	if claims != 3*runs {
		check(fmt.Errorf("%d of %d warm runs were claimed from the pool", claims, 3*runs))
	}
	dk := timeIt(runs, nil, func(i int) { rawCreate(r, d, raw, image, i) }, func(i int) { r.docker("rm", "-f", "-v", fmt.Sprintf("%s-c%d", raw, i)) })
	with := ""
	if idle > 0 {
		with = fmt.Sprintf(", %d boxes running", idle)
	}
	rows = append(rows,
		row{"new + first exec, warm pool, CLI" + with, cli, dk},
		row{"new + first exec, warm pool, CLI through HTTPS" + with, cliHTTPS, dk},
		row{"new + first exec, warm pool, API" + with, warm, dk},
		row{"new + first exec, cold, API" + with, cold, dk})
	return rows
}

// apiExecTrue runs exec true in a box through the API, as the SDKs do.
func apiExecTrue(c *client.Client, box string) {
	code, err := c.Exec(context.Background(), box, api.ExecPost{Cmd: []string{"true"}}, client.ExecIO{Stdout: io.Discard, Stderr: io.Discard})
	check(err)
	if code != 0 {
		check(fmt.Errorf("exec true in %s: exit %d", box, code))
	}
}

// rawCreate is what a box is, made by hand (rawRun), then its first
// command.
func rawCreate(r *runner, d *harness.Daemon, raw, image string, i int) {
	name := fmt.Sprintf("%s-c%d", raw, i)
	rawRun(r, d, raw, image, name, i)
	r.docker("exec", name, "true")
}

// rawRun runs what a box is, by hand: a container of image on the box
// network with a fixed address (of slot) and the gateway as DNS, a new
// volume for /var/lib/docker, and a small box's limits (1 CPU, 2 GiB).
func rawRun(r *runner, d *harness.Daemon, raw, image, name string, slot int) {
	label := "paddock.instance=" + raw
	gw := netip.MustParsePrefix(d.Subnet).Addr().Next()
	ip := netip.MustParsePrefix(d.Subnet).Addr().As4()
	ip[3] = byte(200 + slot%50)
	r.docker("run", "-d", "--init", "--label", label, "--name", name,
		"--network", d.Instance, "--ip", netip.AddrFrom4(ip).String(), "--dns", gw.String(),
		"--mount", fmt.Sprintf("type=volume,source=%s-v,target=/var/lib/docker,volume-label=%s", name, label),
		"--cpus", "1", "--memory", "2g", image)
}

// printPoolRows prints the pool rows with their p95s, and the goal.
func printPoolRows(rows []row) {
	fmt.Printf("\nwarm pool of %d small boxes; p50 / p95 (goal with the pool warm: p50 <= 100 ms, p95 <= 200 ms)\n\n", poolSize)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tpaddock p50\tp95\tdocker run + exec p50\tp95\truns\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t\n", r.name, r.paddock.P50.Round(time.Millisecond), r.paddock.P95.Round(time.Millisecond),
			r.docker.P50.Round(time.Millisecond), r.docker.P95.Round(time.Millisecond), r.paddock.N)
	}
	tw.Flush()
}

// waitPoolReady waits until the daemon's warm pool (of db) is full and
// ready, failing the bench after within.
func waitPoolReady(db *sql.DB, within time.Duration) {
	deadline := time.Now().Add(within)
	for {
		var ready int
		check(db.QueryRow(`SELECT count(*) FROM pool WHERE ready=1`).Scan(&ready))
		if ready == poolSize {
			return
		}
		if time.Now().After(deadline) {
			check(fmt.Errorf("the warm pool was not full and ready within %s", within))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		os.Exit(1)
	}
}

// undo is what check runs, newest first, before the bench ends on an
// error: its exit runs no deferred call, and what a section started on
// this machine (servers, their engines, a swarm) must not outlive it.
var undo []func()

// onError adds f to what check runs before the bench ends on an error.
func onError(f func()) { undo = append(undo, f) }
