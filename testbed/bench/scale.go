package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/testbed/harness"
)

// scaleRow is what -scale measures with a number of idle boxes declared
// and running.
type scaleRow struct {
	boxes      int
	applyEach  time.Duration // the apply that added them, per box added (0: it removed boxes)
	plan       sample        // a plan with nothing to change
	create     sample        // one more box: new + first exec (+ rm, untimed)
	exec       sample        // exec true round trip
	apiExec    sample        // the same through the API (the Go client): no CLI process
	execPaced  sample        // the same, 1 s apart
	rawExec    sample        // docker exec true in the same container
	policy     sample        // policy set on one box
	daemonRSS  int64
	boxMemMean int64   // the boxes' memory (their cgroups), mean
	idleBusy   float64 // share of the machine's CPU time busy with nothing asked, before the timings
	settle     time.Duration
}

// benchScale grows (or shrinks) one Boxfile project of boxes without
// desktops to each size in turn (applying it) and measures, at that size:
// a no-change plan, one more box made and used, an exec round trip, a
// policy change, the memory of paddockd and of the boxes (each with its
// own Docker engine ready, as in production: an engine with no containers
// starts on first use). Then one idle box with a desktop, and one whose
// engine was used.
func benchScale(r *runner, d *harness.Daemon, work string, n int, sizes []int) ([]scaleRow, scaleExtra) {
	dir := filepath.Join(work, "scale")
	os.MkdirAll(dir, 0o755)
	file := filepath.Join(dir, "Boxfile.hcl")
	var rows []scaleRow
	prev := 0
	for _, size := range sizes {
		var hcl strings.Builder
		hcl.WriteString("project = \"scale\"\n")
		for i := 0; i < size; i++ {
			fmt.Fprintf(&hcl, "box \"s%02d\" {}\n", i)
		}
		os.WriteFile(file, []byte(hcl.String()), 0o644)
		start := time.Now()
		r.paddock("apply", "-f", file, "--auto-approve")
		row := scaleRow{boxes: size}
		if size > prev {
			row.applyEach = time.Since(start) / time.Duration(size-prev)
		}
		prev = size
		var names []string
		for i := 0; i < size; i++ {
			names = append(names, fmt.Sprintf("%s-s%02d", d.Instance, i))
		}
		// Idle means idle: the boxes just added start their own engines,
		// which for a few seconds takes the cores the timings below need.
		row.settle = settleBoxes(r, names)
		row.idleBusy = busyShare(5 * time.Second)
		row.plan = timeIt(n, nil, func(int) { r.paddock("plan", "-f", file) }, nil)
		row.create = timeIt(n, nil, func(i int) {
			r.paddock("new", "--name", fmt.Sprintf("x%d", i))
			r.paddock("exec", fmt.Sprintf("x%d", i), "--", "true")
		}, func(i int) { r.paddock("rm", "--force", fmt.Sprintf("x%d", i)) })
		// Round trips of 20 to 60 ms move by a few ms with the machine's
		// background: more runs than the other rows, for a steady median.
		row.exec = timeIt(n*6, nil, func(int) { r.paddock("exec", "s00", "--", "true") }, nil)
		row.rawExec = timeIt(n*6, nil, func(int) { r.docker("exec", d.Instance+"-s00", "true") }, nil)
		c := d.Client()
		row.apiExec = timeIt(n*6, nil, func(int) { apiExecTrue(c, "s00") }, nil)
		row.execPaced = timeIt(n*2, func(int) { time.Sleep(time.Second) }, func(int) { r.paddock("exec", "s00", "--", "true") }, nil)
		row.policy = timeIt(n*2, nil, func(i int) {
			pol := "deny-all"
			if i%2 == 1 {
				pol = "allow-all"
			}
			r.paddock("policy", "set", "s00", pol)
		}, nil)
		r.paddock("policy", "set", "s00", "allow-all")
		time.Sleep(5 * time.Second)
		row.daemonRSS = d.RSS()
		mem := boxMemory(names)
		row.boxMemMean = mem / int64(size)
		rows = append(rows, row)
		fmt.Fprintf(os.Stderr, "bench: at %d boxes (engines up after %s, then %.1f%% busy idle): exec %s, new + exec %s, paddockd %d MiB, box %d MiB\n",
			size, row.settle.Round(time.Second), row.idleBusy*100, row.exec.P50.Round(time.Millisecond), row.create.P50.Round(time.Millisecond), row.daemonRSS>>20, row.boxMemMean>>20)
	}
	r.paddock("destroy", "-f", file, "--auto-approve")

	var x scaleExtra
	r.paddock("new", "--name", "deskmem", "--desktop")
	r.paddock("screenshot", "deskmem", "-o", filepath.Join(work, "deskmem.png")) // the desktop is up
	time.Sleep(5 * time.Second)                                                  // and settled
	x.desk = boxMemory([]string{d.Instance + "-deskmem"})
	r.paddock("rm", "--force", "deskmem")

	// Docker's first use starts the box's engine; the second finds it up.
	r.paddock("new", "--name", "dockmem")
	settleBoxes(r, []string{d.Instance + "-dockmem"})
	x.dockerIdle = boxMemory([]string{d.Instance + "-dockmem"})
	start := time.Now()
	r.paddock("exec", "dockmem", "--", "docker", "info")
	x.dockerFirst = time.Since(start)
	start = time.Now()
	r.paddock("exec", "dockmem", "--", "docker", "info")
	x.dockerNext = time.Since(start)
	time.Sleep(5 * time.Second)
	x.dockerUp = boxMemory([]string{d.Instance + "-dockmem"})
	r.paddock("rm", "--force", "dockmem")
	return rows, x
}

// scaleExtra is what -scale measures on one box after the sizes.
type scaleExtra struct {
	desk                    int64         // an idle box with a desktop
	dockerIdle, dockerUp    int64         // a box before its engine's first use, and after
	dockerFirst, dockerNext time.Duration // docker info through the CLI: the first (starts the engine), the next
}

// settleBoxes waits until every box's own engine waits for its first use
// or has answered (paddock-init writes /run/paddock-docker then, or when
// it gave up), then 5 s more for what a box does just after its start; it
// returns how long that took.
func settleBoxes(r *runner, names []string) time.Duration {
	start := time.Now()
	for _, name := range names {
		for {
			out, _ := exec.Command("docker", "exec", name, "cat", "/run/paddock-docker").Output()
			if s := strings.TrimSpace(string(out)); s == "ready" || s == "up" || strings.HasPrefix(s, "failed") {
				break
			}
			if time.Since(start) > 5*time.Minute {
				fmt.Fprintln(os.Stderr, "bench: the engine of", name, "did not come up in 5 minutes")
				os.Exit(1)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	time.Sleep(5 * time.Second)
	return time.Since(start)
}

// busyShare is the share of the machine's CPU time (all cores) that was not
// idle or waiting for I/O over d, from /proc/stat.
func busyShare(d time.Duration) float64 {
	read := func() (busy, total int64) {
		b, _ := os.ReadFile("/proc/stat")
		line, _, _ := strings.Cut(string(b), "\n")
		for i, f := range strings.Fields(line)[1:] {
			v, _ := strconv.ParseInt(f, 10, 64)
			total += v
			if i != 3 && i != 4 { // idle, iowait
				busy += v
			}
		}
		return
	}
	b0, t0 := read()
	time.Sleep(d)
	b1, t1 := read()
	if t1 == t0 {
		return 0
	}
	return float64(b1-b0) / float64(t1-t0)
}

// boxMemory sums the working set of the containers' memory cgroups (usage
// less the inactive page cache, as the engine and kubelet count it), read
// from the cgroup files: cgroup v1 or v2.
func boxMemory(names []string) int64 {
	var total int64
	for _, name := range names {
		out, err := exec.Command("docker", "inspect", "-f", "{{.State.Pid}}", name).Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: inspect:", name, err)
			os.Exit(1)
		}
		total += cgroupMemory(strings.TrimSpace(string(out)))
	}
	return total
}

func cgroupMemory(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		return 0
	}
	read := func(path string) int64 {
		b, _ := os.ReadFile(path)
		v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return v
	}
	stat := func(path, key string) int64 {
		b, _ := os.ReadFile(path)
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok && k == key {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[1] == "memory" { // v1
			dir := filepath.Join("/sys/fs/cgroup/memory", f[2])
			return read(filepath.Join(dir, "memory.usage_in_bytes")) - stat(filepath.Join(dir, "memory.stat"), "total_inactive_file")
		}
		if f[0] == "0" && f[1] == "" { // v2
			dir := filepath.Join("/sys/fs/cgroup", f[2])
			if _, err := os.Stat(filepath.Join(dir, "memory.current")); err == nil {
				return read(filepath.Join(dir, "memory.current")) - stat(filepath.Join(dir, "memory.stat"), "inactive_file")
			}
		}
	}
	return 0
}

func printScale(rows []scaleRow, x scaleExtra) {
	mib := func(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	fmt.Printf("\nScale: idle boxes without desktops (each with its Docker engine ready for first use), one Boxfile project\n\n")
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "boxes\tapply, per box added\tidle CPU busy\tplan (no change)\tnew + first exec\texec true\tthrough the API\tdocker exec\texec, 1 s apart\tpolicy set\tpaddockd RSS\tbox memory, mean\t")
	for _, r := range rows {
		apply := "(removed)"
		if r.applyEach > 0 {
			apply = ms(r.applyEach)
		}
		fmt.Fprintf(tw, "%d\t%s\t%.1f%%\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.boxes, apply, r.idleBusy*100, ms(r.plan.P50), ms(r.create.P50),
			ms(r.exec.P50), ms(r.apiExec.P50), ms(r.rawExec.P50), ms(r.execPaced.P50), ms(r.policy.P50), mib(r.daemonRSS), mib(r.boxMemMean))
	}
	tw.Flush()
	// The largest size against the smallest: measured before the growth
	// and again after the shrink, so that the machine's own drift over
	// the minutes between shows (the engine's docker exec moves with it).
	var peak scaleRow
	var small []scaleRow
	for _, r := range rows {
		if r.boxes > peak.boxes {
			peak = r
		}
		if r.boxes == rows[0].boxes {
			small = append(small, r)
		}
	}
	if peak.boxes > rows[0].boxes {
		fmt.Println()
		for i, s := range small {
			when := "before"
			if i > 0 {
				when = "after"
			}
			ratio := func(f func(scaleRow) sample) float64 { return float64(f(peak).P50) / float64(f(s).P50) }
			fmt.Printf("exec round trip at %d boxes / at %d %s: %.2f (goal ≤ 1.2); through the API: %.2f; 1 s apart: %.2f; docker exec on the same machine: %.2f\n", peak.boxes, s.boxes, when,
				ratio(func(r scaleRow) sample { return r.exec }), ratio(func(r scaleRow) sample { return r.apiExec }),
				ratio(func(r scaleRow) sample { return r.execPaced }), ratio(func(r scaleRow) sample { return r.rawExec }))
		}
		fit := int64(24<<30) / max(peak.boxMemMean, 1)
		fmt.Printf("idle boxes without a desktop that 24 GiB holds at %s each: %d (goal: 50 comfortably)\n", mib(peak.boxMemMean), fit)
	}
	fmt.Printf("one idle box with a desktop: %s\n", mib(x.desk))
	fmt.Printf("one idle box before its Docker engine's first use: %s; after (engine up): %s\n", mib(x.dockerIdle), mib(x.dockerUp))
	fmt.Printf("docker info through the CLI: first use (starts the engine) %s, the next %s\n", ms(x.dockerFirst), ms(x.dockerNext))
}
