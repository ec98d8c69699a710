// Package load drives a bounded mixed load against a running paddockd:
// boxes, concurrent attached execs, concurrent pushes, and followers of
// the events stream and of a job's log, for a fixed time. It reports
// errors, exec round trips under load next to idle ones, paddockd's
// memory at the start, at its peak and at the end, and the machine's CPU
// time an exec, part by part, with the least mean round trip that sets
// (cpu.go). The e2e suite runs a short form (TestLoad); the bench runs
// the full one (-section load).
// Everything it sends goes to the daemon on loopback and to boxes on the
// local engine.
package load

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// Options size a run.
type Options struct {
	Boxes     int           // boxes made first (10)
	Execs     int           // concurrent exec streams (20)
	Pushes    int           // concurrent pushes (5)
	PushBytes int64         // each push's file (20 MB)
	Followers int           // event and job-log followers (2)
	Duration  time.Duration // how long the load lasts (at most 2 min)
	Raw       bool          // also the engine's docker exec, idle and beside the load
}

// The idle round trips measured before the load: paddock's, and the
// engine's docker exec (some 70 ms each).
const idleExecs, idleRaw = 200, 50

// Full is the run the issue asks for; Short fits in CI.
var (
	Full  = Options{Boxes: 10, Execs: 20, Pushes: 5, PushBytes: 20 << 20, Followers: 2, Duration: 90 * time.Second, Raw: true}
	Short = Options{Boxes: 4, Execs: 8, Pushes: 2, PushBytes: 8 << 20, Followers: 2, Duration: 15 * time.Second}
)

// Result is what a run measured.
type Result struct {
	Opts                  Options
	Execs, Pushes, Events int64 // completed
	Errors                []string
	IdleP50, IdleP95      time.Duration
	LoadP50, LoadP95      time.Duration
	// The engine's own docker exec of true in one of the boxes, one at a
	// time, idle and beside the load: how much of the change is the
	// machine's.
	RawIdleP50, RawIdleP95    time.Duration
	RawLoadP50, RawLoadP95    time.Duration
	RSSStart, RSSPeak, RSSEnd int64
	SetupTook, LoadTook       time.Duration
	// What the load cost the machine, an exec, and the bound it sets.
	CPU CPUUse
}

func (r Result) String() string {
	mb := func(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	times := func(what string, idle50, idle95, load50, load95 time.Duration) string {
		return fmt.Sprintf("  %s: idle p50 %s p95 %s; under load p50 %s p95 %s (p95 %.1fx idle)\n",
			what, ms(idle50), ms(idle95), ms(load50), ms(load95), float64(load95)/float64(max(idle95, 1)))
	}
	out := fmt.Sprintf("load %s: %d boxes, %d exec streams, %d pushes of %s, %d followers\n"+
		"  done: %d execs, %d pushes, %d events; errors: %d\n",
		r.LoadTook.Round(time.Second), r.Opts.Boxes, r.Opts.Execs, r.Opts.Pushes, mb(r.Opts.PushBytes), r.Opts.Followers,
		r.Execs, r.Pushes, r.Events, len(r.Errors))
	out += times("exec round trip", r.IdleP50, r.IdleP95, r.LoadP50, r.LoadP95)
	if r.Opts.Raw {
		out += times("docker exec beside it", r.RawIdleP50, r.RawIdleP95, r.RawLoadP50, r.RawLoadP95)
	}
	if r.Execs > 0 {
		out += r.CPU.String(r.Opts.Execs, r.IdleP95, time.Duration(r.Opts.Execs)*r.LoadTook/time.Duration(r.Execs))
	}
	return out + fmt.Sprintf("  paddockd memory: start %s, peak %s, end %s (end/start %.2f)",
		mb(r.RSSStart), mb(r.RSSPeak), mb(r.RSSEnd), float64(r.RSSEnd)/float64(max(r.RSSStart, 1)))
}

func percentiles(ds []time.Duration) (p50, p95 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*95/100)]
}

// Run makes the boxes, measures idle execs, runs the load, and removes the
// boxes. The daemon must be running; its memory is read from /proc.
func Run(ctx context.Context, d *harness.Daemon, o Options) (Result, error) {
	if o.Duration > 2*time.Minute {
		o.Duration = 2 * time.Minute
	}
	res := Result{Opts: o}
	c := d.Client()
	t0 := time.Now()
	// Heavy requests (box creation, pushes) are paced within the server's
	// bounds, so that every one of them must succeed on a machine of any
	// speed.
	pace := HeavyPacer()
	var names []string
	for i := 0; i < o.Boxes; i++ {
		pace(ctx)
		n := fmt.Sprintf("load%d", i)
		if _, err := c.CreateBox(ctx, api.BoxPost{Name: n}); err != nil {
			return res, fmt.Errorf("making box %s: %w", n, err)
		}
		names = append(names, n)
	}
	defer func() {
		for _, n := range names {
			c.RemoveBox(context.WithoutCancel(ctx), n)
		}
	}()
	res.SetupTook = time.Since(t0)
	execOnce := func(box string) (time.Duration, error) {
		start := time.Now()
		code, err := c.Exec(ctx, box, api.ExecPost{Cmd: []string{"true"}}, client.ExecIO{Stdout: io.Discard, Stderr: io.Discard})
		if err == nil && code != 0 {
			err = fmt.Errorf("exit %d", code)
		}
		return time.Since(start), err
	}
	// Idle means settled: each box has run a command (its next one is
	// then started ahead, as in use) and the boxes' starts are over.
	for _, n := range names {
		if _, err := execOnce(n); err != nil {
			return res, err
		}
	}
	time.Sleep(3 * time.Second)
	// Enough idle round trips that their p95, which the loaded one is
	// measured against, is not one slow command's (with 20 it was the
	// 19th: 6 to 11 ms between runs of the same code).
	var idle []time.Duration
	for i := 0; i < idleExecs; i++ {
		dt, err := execOnce(names[i%len(names)])
		if err != nil {
			return res, err
		}
		idle = append(idle, dt)
	}
	res.IdleP50, res.IdleP95 = percentiles(idle)
	raw := d.Instance + "-" + names[0]
	rawOnce := func(ctx context.Context) (time.Duration, error) {
		start := time.Now()
		out, err := exec.CommandContext(ctx, "docker", "exec", raw, "true").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("docker exec: %v: %s", err, out)
		}
		return time.Since(start), err
	}
	var rawIdle []time.Duration
	for i := 0; o.Raw && i < idleRaw; i++ {
		dt, err := rawOnce(ctx)
		if err != nil {
			return res, err
		}
		rawIdle = append(rawIdle, dt)
	}
	res.RawIdleP50, res.RawIdleP95 = percentiles(rawIdle)
	res.RSSStart = d.RSS()

	var payload bytes.Buffer
	tw := tar.NewWriter(&payload)
	tw.WriteHeader(&tar.Header{Name: "blob.bin", Mode: 0o644, Size: o.PushBytes, Typeflag: tar.TypeReg})
	io.CopyN(tw, rand.Reader, o.PushBytes)
	tw.Close()

	// The boxes' first processes, whose cgroups hold their commands.
	var boxPIDs []int
	for _, n := range names {
		out, err := exec.CommandContext(ctx, "docker", "inspect", "-f", "{{.State.Pid}}", d.Instance+"-"+n).Output()
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && pid > 0 {
			boxPIDs = append(boxPIDs, pid)
		} else {
			boxPIDs = nil // not known: said so
			break
		}
	}
	cpuStart := sampleCPU(d.PID(), boxPIDs)
	lctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	var mu sync.Mutex
	var under []time.Duration
	fail := func(what string, err error) {
		if lctx.Err() != nil {
			return // the load's end cut it off
		}
		mu.Lock()
		if len(res.Errors) < 50 {
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", what, err))
		}
		mu.Unlock()
	}
	var execs, pushes, events atomic.Int64
	var wg sync.WaitGroup
	var peak atomic.Int64
	peak.Store(res.RSSStart)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for lctx.Err() == nil {
			if m := d.RSS(); m > peak.Load() {
				peak.Store(m)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	var rawUnder []time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		for o.Raw && lctx.Err() == nil {
			dt, err := rawOnce(lctx)
			if err != nil {
				fail("docker exec", err)
				continue
			}
			mu.Lock()
			rawUnder = append(rawUnder, dt)
			mu.Unlock()
		}
	}()
	// Exec streams: each a command that writes 64 KiB and reads it back
	// through stdin, then a round trip measured.
	for i := 0; i < o.Execs; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			box := names[i%len(names)]
			for lctx.Err() == nil {
				var out bytes.Buffer
				in := bytes.Repeat([]byte("x"), 64<<10)
				code, err := c.Exec(lctx, box, api.ExecPost{Cmd: []string{"wc", "-c"}}, client.ExecIO{Stdin: bytes.NewReader(in), Stdout: &out, Stderr: io.Discard})
				if err == nil && (code != 0 || strings.TrimSpace(out.String()) != "65536") {
					err = fmt.Errorf("exit %d, %q", code, out.String())
				}
				if err != nil {
					fail("exec", err)
					continue
				}
				dt, err := execOnce(box)
				if err != nil {
					fail("exec", err)
					continue
				}
				execs.Add(2)
				mu.Lock()
				under = append(under, dt)
				mu.Unlock()
			}
		}(i)
	}
	for i := 0; i < o.Pushes; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			box := names[i%len(names)]
			for n := 0; lctx.Err() == nil; n++ {
				if pace(lctx); lctx.Err() != nil {
					break
				}
				if err := c.Push(lctx, box, fmt.Sprintf("/config/load/p%d-%d", i, n%2), bytes.NewReader(payload.Bytes())); err != nil {
					fail("push", err)
					continue
				}
				pushes.Add(1)
			}
		}(i)
	}
	for i := 0; i < o.Followers; i++ {
		wg.Add(1)
		if i%2 == 0 {
			go func() {
				defer wg.Done()
				req, _ := http.NewRequestWithContext(lctx, "GET", "http://"+d.Listen+"/v1/events", nil)
				req.Header.Set("Authorization", "Bearer "+d.Token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					fail("events", err)
					return
				}
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "event: ") {
						events.Add(1)
					}
				}
				if err := sc.Err(); err != nil {
					fail("events", err)
				}
			}()
			continue
		}
		go func() {
			defer wg.Done()
			j, err := c.StartJob(lctx, names[0], api.ExecPost{Cmd: []string{"sh", "-c", "while :; do date; sleep 0.2; done"}, Timeout: fmt.Sprint(int(o.Duration/time.Second) + 5)})
			if err != nil {
				fail("job", err)
				return
			}
			if err := c.JobLog(lctx, names[0], j.ID, true, io.Discard); err != nil {
				fail("job log", err)
			}
		}()
	}
	start := time.Now()
	wg.Wait()
	res.LoadTook = time.Since(start)
	cpuEnd := sampleCPU(d.PID(), boxPIDs)
	res.Execs, res.Pushes, res.Events = execs.Load(), pushes.Load(), events.Load()
	res.CPU = use(cpuStart, cpuEnd, res.Execs)
	res.LoadP50, res.LoadP95 = percentiles(under)
	res.RawLoadP50, res.RawLoadP95 = percentiles(rawUnder)
	res.RSSPeak = peak.Load()
	// The end: after the load, once the Go runtime had a moment to give
	// memory back.
	time.Sleep(3 * time.Second)
	res.RSSEnd = d.RSS()
	return res, nil
}
