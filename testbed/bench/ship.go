package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/testbed/harness"
)

// benchShip times the shipping of snapshots to an S3 server (versitygw
// over a folder of this machine's disk) beside rclone copying the same
// bytes to the same server (64 MiB parts, 8 at once), each n times:
//
//   - a box's snapshot holding 1 GB of new random bytes (a fresh box each
//     run: the box image's layers are in the store already, shipped once
//     before the timed runs) against rclone copy of that 1 GB file;
//   - the same box's next snapshot after 20 MB more, against rclone copy
//     of the 20 MB: its time, and the bytes it sent (the log's).
//
// The shipping's time is paddockd's own (its log: from the snapshot's
// layers read to its description stored).
func benchShip(bins harness.Bins, image, work string, n int) []row {
	// check, not fatal: a run that fails leaves no server or box behind.
	s3, err := harness.NewS3(work)
	check(err)
	defer s3.Close()
	onError(s3.Close)
	d, err := harness.NewDaemon(bins, image, work)
	check(err)
	d.Config = harness.TestConfig + "\n" + s3.Config()
	d.Env = []string{"PADDOCK_SHIP_INTERVAL=1h"} // shipped when taken only
	check(d.Start())
	defer d.Cleanup()
	onError(d.Cleanup)
	r := &runner{env: append(d.CLIEnv(), "PADDOCK_CONFIG_DIR="+filepath.Join(work, "cli-ship"),
		"RCLONE_CONFIG_BENCH_TYPE=s3", "AWS_CA_BUNDLE=", // the store is plain HTTP; a bundle set for other tools makes rclone 1.60 fail
		"RCLONE_CONFIG_BENCH_PROVIDER=Other", "RCLONE_CONFIG_BENCH_ENDPOINT="+s3.Endpoint,
		"RCLONE_CONFIG_BENCH_ACCESS_KEY_ID="+s3.AccessKey, "RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY="+s3.SecretKey), bins: bins}
	shipped := func(id string) (took time.Duration, sent int64) {
		deadline := time.Now().Add(10 * time.Minute)
		for time.Now().Before(deadline) {
			b, _ := os.ReadFile(d.LogPath())
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, `msg="snapshot shipped"`) && strings.Contains(l, "snapshot="+id+" ") {
					m := regexp.MustCompile(` sent=(\d+) .* took=(\S+)`).FindStringSubmatch(l)
					if m == nil {
						check(fmt.Errorf("cannot read %q", l))
					}
					sent, _ = strconv.ParseInt(m[1], 10, 64)
					took, err = time.ParseDuration(m[2])
					check(err)
					return took, sent
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		check(fmt.Errorf("snapshot %s did not ship in 10 minutes", id))
		return 0, 0
	}
	snapshot := func(box string) string { return strings.TrimSpace(r.paddock("snapshot", box)) }
	// Untimed: the box image's layers into the store.
	r.paddock("new", "--name", "ship-warm")
	shipped(snapshot("ship-warm"))

	local := filepath.Join(work, "ship-bytes")
	check(os.MkdirAll(local, 0o755))
	var big, bigRaw, small, smallRaw []time.Duration
	var smallSent []int64
	home := strings.TrimSpace(r.paddock("exec", "ship-warm", "--", "sh", "-c", "echo $HOME"))
	for i := range n {
		box := fmt.Sprintf("ship-%d", i)
		r.paddock("new", "--name", box)
		r.paddock("exec", box, "--", "sh", "-c", "head -c 1G /dev/urandom > ~/big")
		took, _ := shipped(snapshot(box))
		big = append(big, took)
		r.paddock("pull", box, home+"/big", "--to", local)
		start := time.Now()
		r.run("rclone", "copy", rcloneParts, rcloneConcurrency, filepath.Join(local, "big"), fmt.Sprintf("bench:%s/raw-%d/", s3.Bucket, i))
		bigRaw = append(bigRaw, time.Since(start))

		r.paddock("exec", box, "--", "sh", "-c", "head -c 20M /dev/urandom > ~/small")
		took, sent := shipped(snapshot(box))
		small, smallSent = append(small, took), append(smallSent, sent)
		r.paddock("pull", box, home+"/small", "--to", local)
		start = time.Now()
		r.run("rclone", "copy", rcloneParts, rcloneConcurrency, filepath.Join(local, "small"), fmt.Sprintf("bench:%s/raw-small-%d/", s3.Bucket, i))
		smallRaw = append(smallRaw, time.Since(start))
		r.paddock("rm", "--force", box)
		os.RemoveAll(local)
		check(os.MkdirAll(local, 0o755))
	}
	fmt.Printf("the next snapshot after 20 MB more sent: %s MB\n", mbs(smallSent))
	return []row{
		{"ship: a snapshot of 1 GB new (vs rclone copy of the 1 GB)", summarize(big), summarize(bigRaw)},
		{"ship: the next after 20 MB more (vs rclone copy of the 20 MB)", summarize(small), summarize(smallRaw)},
	}
}

// rclone's parts and how many go at once: its defaults (5 MiB parts, 4 at
// once) took 57.7 s for the 1 GB file against this server, 64 MiB parts 8
// at once 9.0 s, one part 8.7 s.
const rcloneParts, rcloneConcurrency = "--s3-chunk-size=64M", "--s3-upload-concurrency=8"

func mbs(ns []int64) string {
	var out []string
	for _, n := range ns {
		out = append(out, fmt.Sprintf("%.1f", float64(n)/1e6))
	}
	return strings.Join(out, ", ")
}
