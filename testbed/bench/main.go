// Command bench measures Paddock's operations beside the raw Docker
// operations they rest on, in one run on one machine, and prints a table
// with the ratio. Both sides are driven through their command-line tools
// (the paddock CLI against a local paddockd; the docker CLI against the
// same engine), so each figure includes one process start and one API round
// trip.
//
//	go run ./testbed/bench [-n 5] [-big-n 7]
//	go run ./testbed/bench -scale    # at 1, 10, 50 and again 1 idle boxes
//	go run ./testbed/bench -section images   # image builds beside docker build on the server's engine
//	go run ./testbed/bench -section docker   # a box's first docker command beside dockerd started by hand
//	go run ./testbed/bench -section cluster  # a box on a second server beside that server's engine
//	go run ./testbed/bench -section capacity # three servers against one, each with a memory budget
//	go run ./testbed/bench -section first -n 3  # new + push on a server just started, beside the same settled
//	go run ./testbed/bench -section files -log-level debug  # the copies; paddockd logs their phases
//	go run ./testbed/bench -section e2b -n 10  # E2B's SDK from npm beside Paddock's TypeScript SDK
//	go run ./testbed/bench -section ship -n 3   # snapshots shipped to an S3 server beside rclone copy
//
// It needs root and the testbed engine and image (it makes them if missing),
// sends traffic only to loopback and the local engine, and removes what it
// made.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/testbed/harness"
	"github.com/paddock-dev/paddock/testbed/load"
)

type runner struct {
	env  []string
	bins harness.Bins
}

func (r *runner) run(name string, args ...string) string {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), r.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		// The time, to find the moment in paddockd's log.
		check(fmt.Errorf("%s %s (ended %s): %v\n%s", name, strings.Join(args, " "), time.Now().UTC().Format("15:04:05.000"), err, out))
	}
	return strings.TrimSpace(string(out))
}

func (r *runner) paddock(args ...string) string { return r.run(r.bins.Paddock, args...) }
func (r *runner) docker(args ...string) string  { return r.run("docker", args...) }

// keepLog keeps paddockd's log after the run removes its folder (prefix
// "failed-" for a run that failed), and says where.
func keepLog(d *harness.Daemon, prefix string) {
	if prefix == "failed-" {
		// A paddockd killed (SIGKILL: the OOM killer, say) leaves nothing
		// in its log; a client only reads a broken connection.
		if exited, err := d.Exited(); exited {
			fmt.Fprintf(os.Stderr, "bench: paddockd had exited (%v)\n", err)
		} else {
			fmt.Fprintln(os.Stderr, "bench: paddockd was still running")
		}
	}
	kept := filepath.Join(os.TempDir(), "paddock-bench-"+prefix+d.Instance+".log")
	if b, err := os.ReadFile(d.LogPath()); err == nil && os.WriteFile(kept, b, 0o644) == nil {
		fmt.Fprintln(os.Stderr, "bench: paddockd's log:", kept)
	}
}

// frontDoor is the environment of a daemon that serves HTTPS through
// Caddy, with a certificate from Caddy's internal CA for paddock.test, on
// a loopback port (httpsAddr), as a server does for its users.
func frontDoor() (env []string, httpsAddr string) {
	httpsAddr, err := harness.FreeAddr()
	check(err)
	httpAddr, err := harness.FreeAddr()
	check(err)
	return []string{"PADDOCK_HOSTNAME=paddock.test", "PADDOCK_TLS=internal",
		"PADDOCK_HTTPS_LISTEN=" + httpsAddr, "PADDOCK_HTTP_LISTEN=" + httpAddr}, httpsAddr
}

// httpsRunner is a CLI that logged in as a user does, to d's front door
// (see frontDoor) with its CA certificate, its settings in dir, through a
// CONNECT proxy on loopback that stands in for DNS. stop ends the proxy.
func httpsRunner(d *harness.Daemon, bins harness.Bins, httpsAddr, dir string) (r *runner, stop func()) {
	proxy, stop, err := harness.ConnectProxy("127.0.0.1")
	check(err)
	_, port, _ := net.SplitHostPort(httpsAddr)
	r = &runner{env: []string{"HTTPS_PROXY=" + proxy, "NO_PROXY=", "PADDOCK_HOST=", "PADDOCK_TOKEN=",
		"PADDOCK_CONFIG_DIR=" + dir}, bins: bins}
	r.paddock("login", "https://paddock.test:"+port, "--token", d.Token,
		"--ca-cert", filepath.Join(d.StateDir, "caddy", "pki", "authorities", "local", "root.crt"))
	return r, stop
}

// timeIt runs setup (untimed), op (timed) and teardown (untimed) n times and
// returns the median of op.
func timeIt(n int, setup func(i int), op func(i int), teardown func(i int)) sample {
	var ds []time.Duration
	for i := 0; i < n; i++ {
		ds = append(ds, step{setup, op, teardown}.run(i, false))
	}
	return summarize(ds)
}

func summarize(ds []time.Duration) sample {
	sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
	return sample{P50: ds[len(ds)/2], P95: ds[min(len(ds)-1, len(ds)*95/100)], N: len(ds)}
}

// step is one side of a row: op timed, setup and teardown around it not.
type step struct{ setup, op, teardown func(i int) }

// run runs the step's i-th time and returns how long op took; with
// flush, the kernel writes out dirty pages first (untimed).
func (s step) run(i int, flush bool) time.Duration {
	if s.setup != nil {
		s.setup(i)
	}
	if flush {
		syscall.Sync()
	}
	start := time.Now()
	s.op(i)
	took := time.Since(start)
	if s.teardown != nil {
		s.teardown(i)
	}
	return took
}

// timePair times paddock's side and the raw side of a row that writes to
// the disk (copies, snapshots) in turns (paddock first in even runs, the
// raw side first in odd ones), and has the kernel write out dirty pages
// before each timed run (untimed). Timed
// as two blocks of runs, the writeback of one side's last copy and of its
// teardown fell into the other side's first run, and a drift of the
// machine's disk over a block (this machine's varies two- to threefold
// within minutes) fell on one side only.
func timePair(n int, p, d step) (sample, sample) {
	var ps, ds []time.Duration
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			ps = append(ps, p.run(i, true))
			ds = append(ds, d.run(i, true))
		} else {
			ds = append(ds, d.run(i, true))
			ps = append(ps, p.run(i, true))
		}
	}
	return summarize(ps), summarize(ds)
}

// sample is the p50 and p95 of n timed runs.
type sample struct {
	P50, P95 time.Duration
	N        int
}

// one is a sample of a single figure.
func one(d time.Duration) sample { return sample{d, d, 1} }

type row struct {
	name            string
	paddock, docker sample
}

func makeTrees(dir string) (small, big string) {
	small = filepath.Join(dir, "small")
	os.MkdirAll(small, 0o755)
	chunk := make([]byte, 10<<10)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	// 100 MB of small files: 10,000 files of 10 KiB in 100 directories.
	for d := 0; d < 100; d++ {
		sub := filepath.Join(small, fmt.Sprintf("d%03d", d))
		os.MkdirAll(sub, 0o755)
		for f := 0; f < 100; f++ {
			os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.txt", f)), chunk, 0o644)
		}
	}
	big = filepath.Join(dir, "big")
	os.MkdirAll(big, 0o755)
	f, _ := os.Create(filepath.Join(big, "blob.bin"))
	block := make([]byte, 1<<20)
	for i := 0; i < 100; i++ {
		block[0] = byte(i)
		f.Write(block)
	}
	f.Close()
	return small, big
}

func main() {
	n := flag.Int("n", 5, "runs of each quick operation (median reported)")
	bigN := flag.Int("big-n", 7, "runs of each copy, a side (the disk moves one run by more than a row's difference: 3 could not call rows within 0.3 of 1.0)")
	section := flag.String("section", "all", "boxes, files (the copy rows only), policies, pool, all, load (the mixed load, not in all), first (a first request on a server just started, not in all), cluster (a box on a second server, not in all), images (users' image builds beside docker build, not in all), docker (Docker in a box: its first command, not in all), capacity (three servers against one, not in all), e2b (E2B's SDK beside Paddock's TypeScript SDK, not in all), or ship (snapshots shipped to an S3 server beside rclone, not in all)")
	logLevel := flag.String("log-level", "warn", "paddockd's log level (debug logs each push's and claim's phases; the log's path is printed)")
	policyBoxes := flag.Int("policy-boxes", 50, "boxes in the policy benchmark")
	poolIdle := flag.Int("pool-idle", 0, "with the pool section: boxes running beside it while it is measured")
	scale := flag.Bool("scale", false, "measure at 1, 10 and 50 idle boxes instead (create, plan, exec, policy change, memory)")
	flag.StringVar(&jsonOut, "json", "", "also write the rows as JSON to this file (p50 and p95 of each side)")
	flag.Parse()
	if reason := harness.EngineReason(); reason != "" {
		fmt.Fprintln(os.Stderr, "bench:", reason)
		os.Exit(1)
	}
	image, err := harness.Image()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	work, err := os.MkdirTemp("", "paddock-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(work)
	bins, err := harness.Build(work)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *section == "capacity" {
		printCapacity(benchCapacity(bins, work))
		return
	}
	if *section == "images" {
		printRows(benchImages(bins, image, work, *n), "the small test image as the base", *n, *bigN)
		return
	}
	if *section == "docker" {
		printRows(benchDocker(bins, image, work, *n), image, *n, *bigN)
		return
	}
	if *section == "ship" {
		printRows(benchShip(bins, image, work, *n), image, *n, *bigN)
		return
	}
	if *section == "cluster" {
		rows := benchCluster(bins, work, *n, *bigN)
		printRows(rows, "the small test image", *n, *bigN)
		return
	}
	d, err := harness.NewDaemon(bins, image, work)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The front door too: HTTPS from Caddy's internal CA on loopback ports.
	door, httpsAddr := frontDoor()
	d.Env = append([]string{"PADDOCK_LOG_LEVEL=" + *logLevel}, door...)
	if *scale {
		// Boxes have their own Docker engine, as Sysbox lets them in
		// production (runc boxes here), so that what it costs counts.
		d.Env = append(d.Env, "PADDOCK_UNSAFE_DOCKER_IN_RUNC_BOXES=true")
	}
	if err := d.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer d.Cleanup()
	onError(func() { keepLog(d, "failed-"); d.Cleanup() })
	if *logLevel != "warn" {
		defer keepLog(d, "")
	}
	raw := "pdkbench-" + d.Instance
	defer harness.Sweep(raw)
	onError(func() { harness.Sweep(raw) })
	label := "paddock.instance=" + raw

	r := &runner{env: append(d.CLIEnv(), "PADDOCK_CONFIG_DIR="+filepath.Join(work, "cli")), bins: bins}
	var rows []row
	if *scale {
		rows, extra := benchScale(r, d, work, *n, []int{1, 10, 50, 1})
		printScale(rows, extra)
		return
	}
	if *section == "all" || *section == "policies" {
		rows = append(rows, benchPolicies(r, d, work, *n, *policyBoxes)...)
	}
	if *section == "policies" {
		printRows(rows, image, *n, *bigN)
		return
	}
	if *section == "first" {
		printFirst(benchFirst(bins, image, work, *n))
		return
	}
	if *section == "pool" {
		rows = benchPool(bins, image, work, *n, *poolIdle)
		printRows(rows, image, *n, *bigN)
		printPoolRows(rows)
		return
	}
	if *section == "e2b" {
		printE2B(benchE2B(d, *n))
		return
	}
	if *section == "load" {
		// The mixed load of package load at full size (at most 2 min).
		res, err := load.Run(context.Background(), d, load.Full)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(res)
		for _, e := range res.Errors {
			fmt.Println("  error:", e)
		}
		return
	}
	small, big := makeTrees(filepath.Join(work, "trees"))
	modules, files, size := makeModules(filepath.Join(work, "trees"))
	modulesName := fmt.Sprintf("node_modules shape (%d files, %d MB, symlinks)", files, size>>20)

	copiesOnly := *section == "files"
	var p, dk sample
	if !copiesOnly {
		// create to first exec
		p = timeIt(*n, nil, func(i int) {
			r.paddock("new", "--name", fmt.Sprintf("c%d", i))
			r.paddock("exec", fmt.Sprintf("c%d", i), "--", "true")
		}, func(i int) { r.paddock("rm", "--force", fmt.Sprintf("c%d", i)) })
		dk = timeIt(*n, nil, func(i int) { rawCreate(r, d, raw, image, i) }, func(i int) { r.docker("rm", "-f", "-v", fmt.Sprintf("%s-c%d", raw, i)) })
		rows = append(rows, row{"create + first exec", p, dk})
	}

	r.paddock("new", "--name", "bench")
	rawBox := raw + "-box"
	r.docker("run", "-d", "--init", "--label", label, "--name", rawBox, image)

	if !copiesOnly {
		p = timeIt(*n*2, nil, func(int) { r.paddock("exec", "bench", "--", "true") }, nil)
		dk = timeIt(*n*2, nil, func(int) { r.docker("exec", rawBox, "true") }, nil)
		rows = append(rows, row{"exec true (round trip)", p, dk})
		// At an agent's pace: a command, then a pause (untimed) before
		// the next, in which a warm exec is ready again.
		pause := func(int) { time.Sleep(time.Second) }
		p = timeIt(*n*2, pause, func(int) { r.paddock("exec", "bench", "--", "true") }, nil)
		dk = timeIt(*n*2, pause, func(int) { r.docker("exec", rawBox, "true") }, nil)
		rows = append(rows, row{"exec true, 1 s apart", p, dk})
		rows = append(rows, watchRow(r, d.Client(), rawBox, *n*2))
	}

	// The same through the front door: HTTPS (a new TLS connection per
	// command), Caddy's proxy, paddockd's socket.
	rf, stopProxy := httpsRunner(d, bins, httpsAddr, filepath.Join(work, "cli-https"))
	defer stopProxy()
	if !copiesOnly {
		p = timeIt(*n*2, nil, func(int) { rf.paddock("exec", "bench", "--", "true") }, nil)
		rows = append(rows, row{"exec true through HTTPS (Caddy)", p, dk})
	}

	p, dk = timePair(*bigN, step{op: func(i int) {
		rf.paddock("push", "bench", big, "--to", fmt.Sprintf("/tmp/pushs%d", i))
	}, teardown: func(i int) { r.paddock("exec", "bench", "--", "rm", "-rf", fmt.Sprintf("/tmp/pushs%d", i)) }}, step{op: func(i int) {
		r.docker("cp", big, fmt.Sprintf("%s:/tmp/cps%d", rawBox, i))
	}, teardown: func(i int) { r.docker("exec", rawBox, "rm", "-rf", fmt.Sprintf("/tmp/cps%d", i)) }})
	rows = append(rows, row{"push 100 MB, one file, through HTTPS", p, dk})

	for _, tree := range []struct{ name, dir string }{{"100 MB, 10k small files", small}, {"100 MB, one file", big}, {modulesName, modules}} {
		p, dk = timePair(*bigN, step{op: func(i int) {
			r.paddock("push", "bench", tree.dir, "--to", fmt.Sprintf("/tmp/push%d", i))
		}, teardown: func(i int) { r.paddock("exec", "bench", "--", "rm", "-rf", fmt.Sprintf("/tmp/push%d", i)) }}, step{op: func(i int) {
			r.docker("cp", tree.dir, fmt.Sprintf("%s:/tmp/cp%d", rawBox, i))
		}, teardown: func(i int) { r.docker("exec", rawBox, "rm", "-rf", fmt.Sprintf("/tmp/cp%d", i)) }})
		rows = append(rows, row{"push " + tree.name, p, dk})

		r.paddock("push", "bench", tree.dir, "--to", "/tmp/src")
		r.docker("cp", tree.dir, rawBox+":/tmp/src")
		p, dk = timePair(*bigN, step{op: func(i int) {
			r.paddock("pull", "bench", "/tmp/src", "--to", filepath.Join(work, fmt.Sprintf("pull%d", i)))
		}, teardown: func(i int) { os.RemoveAll(filepath.Join(work, fmt.Sprintf("pull%d", i))) }}, step{op: func(i int) {
			r.docker("cp", rawBox+":/tmp/src", filepath.Join(work, fmt.Sprintf("cp%d", i)))
		}, teardown: func(i int) { os.RemoveAll(filepath.Join(work, fmt.Sprintf("cp%d", i))) }})
		rows = append(rows, row{"pull " + tree.name, p, dk})
		r.paddock("exec", "bench", "--", "rm", "-rf", "/tmp/src")
		r.docker("exec", rawBox, "rm", "-rf", "/tmp/src")
	}

	// A push into a box just made (its start goes on beside the push),
	// beside docker cp into a container just run.
	p, dk = timePair(*bigN, step{setup: func(i int) { r.paddock("new", "--name", fmt.Sprintf("j%d", i)) }, op: func(i int) {
		r.paddock("push", fmt.Sprintf("j%d", i), modules, "--to", "/tmp/push")
	}, teardown: func(i int) { r.paddock("rm", "--force", fmt.Sprintf("j%d", i)) }}, step{setup: func(i int) {
		r.docker("run", "-d", "--init", "--label", label, "--name", fmt.Sprintf("%s-j%d", raw, i), image)
	}, op: func(i int) {
		r.docker("cp", modules, fmt.Sprintf("%s-j%d:/tmp/cp", raw, i))
	}, teardown: func(i int) { r.docker("rm", "-f", fmt.Sprintf("%s-j%d", raw, i)) }})
	rows = append(rows, row{"push " + modulesName + " into a box just made", p, dk})

	// Drive restore and backup of the 100 MB file, beside the same copies
	// through a container made for each (the engine reaches a volume no box
	// has only through a container).
	bigTar := filepath.Join(work, "big.tar")
	r.run("tar", "-C", big, "-cf", bigTar, ".")
	r.paddock("drive", "new", "bk")
	r.docker("volume", "create", "--label", label, raw+"-bk")
	viaContainer := func(script string) {
		r.run("sh", "-c", fmt.Sprintf(`c=$(docker create --label %s -v %s-bk:/v %s) && %s; s=$?; docker rm -f "$c" >/dev/null; exit $s`, label, raw, image, script))
	}
	p, dk = timePair(*bigN, step{op: func(int) { r.paddock("drive", "restore", "bk", bigTar, "--yes") }},
		step{op: func(int) { viaContainer(`docker cp - "$c:/v" < ` + bigTar) }})
	rows = append(rows, row{"drive restore 100 MB, one file", p, dk})
	p, dk = timePair(*bigN, step{op: func(i int) {
		r.paddock("drive", "backup", "bk", "--to", filepath.Join(work, fmt.Sprintf("bk%d.tar", i)))
	}, teardown: func(i int) { os.Remove(filepath.Join(work, fmt.Sprintf("bk%d.tar", i))) }}, step{op: func(i int) {
		viaContainer(fmt.Sprintf(`docker cp "$c:/v" - > %s`, filepath.Join(work, fmt.Sprintf("raw%d.tar", i))))
	}, teardown: func(i int) { os.Remove(filepath.Join(work, fmt.Sprintf("raw%d.tar", i))) }})
	rows = append(rows, row{"drive backup 100 MB, one file", p, dk})
	r.paddock("drive", "rm", "bk")
	r.docker("volume", "rm", raw+"-bk")
	if copiesOnly {
		printRows(rows, image, *n, *bigN)
		return
	}

	r.paddock("exec", "bench", "--", "sh", "-c", "head -c 20000000 /dev/urandom > /config/state.bin")
	r.docker("exec", rawBox, "sh", "-c", "head -c 20000000 /dev/urandom > /config/state.bin")
	// Snapshots, forks and stops write the box's changes into an image:
	// timed in turns, as the copies are.
	p, dk = timePair(*n, step{op: func(int) { r.paddock("snapshot", "bench") }}, step{op: func(i int) {
		r.docker("commit", "-c", "LABEL "+label, rawBox, fmt.Sprintf("%s-snap:%d", raw, i))
	}})
	rows = append(rows, row{"snapshot (20 MB changed)", p, dk})

	// The raw side makes what a fork makes: a box's container (rawRun, as
	// the create row's raw side), from the commit. (Until 4 December it
	// ran the commit in a plain container: no box network, address,
	// volume or limits.)
	p, dk = timePair(*n, step{op: func(i int) {
		r.paddock("fork", "bench", "--name", fmt.Sprintf("f%d", i))
	}, teardown: func(i int) { r.paddock("rm", "--force", fmt.Sprintf("f%d", i)) }}, step{op: func(i int) {
		ref := fmt.Sprintf("%s-fork:%d", raw, i)
		r.docker("commit", "-c", "LABEL "+label, rawBox, ref)
		rawRun(r, d, raw, ref, fmt.Sprintf("%s-f%d", raw, i), i)
	}, teardown: func(i int) {
		r.docker("rm", "-f", fmt.Sprintf("%s-f%d", raw, i))
		r.docker("volume", "rm", fmt.Sprintf("%s-f%d-v", raw, i))
	}})
	rows = append(rows, row{"fork (snapshot + new box)", p, dk})

	r.paddock("new", "--name", "desk", "--desktop")
	r.paddock("screenshot", "desk", "-o", filepath.Join(work, "warm.png")) // waits for the desktop
	p = timeIt(*n, nil, func(int) { r.paddock("screenshot", "desk", "-o", filepath.Join(work, "shot.png")) }, nil)
	dk = timeIt(*n, nil, func(int) {
		r.run("sh", "-c", fmt.Sprintf("docker exec -u paddock -e DISPLAY=:1 %s-desk import -window root png:- > %s", d.Instance, filepath.Join(work, "raw.png")))
	}, nil)
	rows = append(rows, row{"screenshot 1280x800", p, dk})

	p, dk = timePair(*n, step{setup: func(int) { r.paddock("start", "bench") }, op: func(int) { r.paddock("stop", "bench") }},
		step{setup: func(int) { r.docker("start", rawBox) }, op: func(i int) {
			r.docker("commit", "-c", "LABEL "+label, rawBox, fmt.Sprintf("%s-stop:%d", raw, i))
			r.docker("stop", rawBox)
		}})
	rows = append(rows, row{"stop (snapshot + stop)", p, dk})

	poolRows := benchPool(bins, image, work, *n, *poolIdle)
	rows = append(rows, poolRows...)
	printRows(rows, image, *n, *bigN)
	printPoolRows(poolRows)
}

func printRows(rows []row, image string, n, bigN int) {
	out, _ := exec.Command("docker", "version", "--format", "{{.Server.Version}} (API {{.Server.APIVersion}})").Output()
	fmt.Printf("Docker %s, %s, medians of %d (copies: %d) runs\n\n", strings.TrimSpace(string(out)), image, n, bigN)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tpaddock\traw\tratio\t")
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t\n", row.name, shown(row.paddock.P50), shown(row.docker.P50), float64(row.paddock.P50)/float64(row.docker.P50))
	}
	tw.Flush()
	for _, row := range rows {
		if strings.Contains(row.name, "through the broker") {
			fmt.Printf("%s: the broker adds %s at p50, %s at p95\n", row.name,
				(row.paddock.P50 - row.docker.P50).Round(10*time.Microsecond), (row.paddock.P95 - row.docker.P95).Round(10*time.Microsecond))
		}
	}
	if jsonOut != "" {
		if err := writeJSON(jsonOut, strings.TrimSpace(string(out)), image, rows); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// shown is a time as the table prints it: to the millisecond, or to 10
// µs under 10 ms.
func shown(d time.Duration) time.Duration {
	if d < 10*time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

// jsonOut is where -json writes the rows ("" : nowhere).
var jsonOut string

// writeJSON writes a run's rows so that runs can be compared: per row the
// p50 and p95 of Paddock's and the raw operation's times in milliseconds,
// the runs behind each, and the ratio of the p50s.
func writeJSON(path, engine, image string, rows []row) error {
	type fig struct {
		P50ms float64 `json:"p50_ms"`
		P95ms float64 `json:"p95_ms"`
		Runs  int     `json:"runs"`
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	type jrow struct {
		Operation string  `json:"operation"`
		Paddock   fig     `json:"paddock"`
		Raw       fig     `json:"raw"`
		Ratio     float64 `json:"ratio_p50"`
	}
	doc := struct {
		Engine string    `json:"engine"`
		Image  string    `json:"image"`
		When   time.Time `json:"when"`
		Rows   []jrow    `json:"rows"`
	}{Engine: engine, Image: image, When: time.Now().UTC()}
	for _, r := range rows {
		doc.Rows = append(doc.Rows, jrow{r.name,
			fig{ms(r.paddock.P50), ms(r.paddock.P95), r.paddock.N},
			fig{ms(r.docker.P50), ms(r.docker.P95), r.docker.N},
			float64(r.paddock.P50) / float64(r.docker.P50)})
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
