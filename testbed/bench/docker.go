package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/paddock-dev/paddock/testbed/harness"
)

// benchDocker times Docker inside a box, each n times on a new box:
//
//   - the first docker command (docker info through paddock exec): the
//     box's engine starts on it (paddock-init's socket activation, its
//     containerd started beside dockerd); beside it, the same image in a
//     container with the same rights, where dockerd is started by hand as
//     Docker starts itself (its own containerd under it) and docker info
//     waits for it;
//   - the next one, the engine up, beside docker exec of docker info.
//
// Each box (and raw container) has settled before its first docker
// command: its engine waits for first use, and 5 s have passed. The
// first command is timed again with docker_start = "with-box", the engine
// started with the box (and up once it settled).
func benchDocker(bins harness.Bins, image, work string, n int) []row {
	// Boxes have their own Docker engine, as Sysbox lets them in
	// production (runc boxes here). A second daemon starts each box's
	// engine with the box (docker_start = "with-box").
	first, next := firstDocker(bins, image, filepath.Join(work, "first-use"), n)
	withBox, _ := firstDocker(bins, image, filepath.Join(work, "with-box"), n, "PADDOCK_DOCKER_START=with-box")
	raw := "pdkbench-docker-" + fmt.Sprint(time.Now().UnixNano()%1e6)
	onError(func() { harness.Sweep(raw) })
	defer harness.Sweep(raw)
	label := "paddock.instance=" + raw
	r := &runner{}

	// The raw side: the rights a box with Docker has here (see the docker
	// driver's UnsafeDockerInRunc) and a small box's limits (1 CPU, 2 GiB),
	// its /var/lib/docker a new volume.
	ctr := func(i int) string { return fmt.Sprintf("%s-c%d", raw, i) }
	var rawNext sample
	rawFirst := timeIt(n, func(i int) {
		r.docker("run", "-d", "--init", "--label", label, "--name", ctr(i),
			"--cap-drop", "SYS_RESOURCE", "--cap-add", "ALL",
			"--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
			"--mount", "type=bind,source=/sys/fs/cgroup,target=/sys/fs/cgroup",
			"--mount", fmt.Sprintf("type=volume,source=%s-v%d,target=/var/lib/docker,volume-label=%s", raw, i, label),
			"--cpus", "1", "--memory", "2g", image, "sleep", "infinity")
		settleRaw(ctr(i))
	}, func(i int) {
		r.docker("exec", ctr(i), "sh", "-c",
			"dockerd >/var/log/dockerd.log 2>&1 & until [ -S /var/run/docker.sock ]; do sleep 0.01; done; docker info >/dev/null")
	}, func(i int) {
		if i == n-1 {
			rawNext = timeIt(n*2, nil, func(int) { r.docker("exec", ctr(i), "docker", "info") }, nil)
		}
		r.docker("rm", "-f", "-v", ctr(i))
		r.docker("volume", "rm", fmt.Sprintf("%s-v%d", raw, i))
	})
	return []row{
		{"first docker command in a box (docker info)", first, rawFirst},
		{"first docker command, docker_start = with-box", withBox, rawFirst},
		{"docker info, the box's engine up", next, rawNext},
	}
}

// firstDocker times n boxes' first docker command on a daemon of its own
// (with env), and the next command in the last box.
func firstDocker(bins harness.Bins, image, work string, n int, env ...string) (first, next sample) {
	d, err := harness.NewDaemon(bins, image, work)
	fatal(err)
	d.Env = append([]string{"PADDOCK_UNSAFE_DOCKER_IN_RUNC_BOXES=true"}, env...)
	onError(func() { keepLog(d, "failed-"); d.Cleanup() })
	fatal(d.Start())
	defer d.Cleanup()
	r := &runner{env: append(d.CLIEnv(), "PADDOCK_CONFIG_DIR="+filepath.Join(work, "cli-docker")), bins: bins}
	box := func(i int) string { return fmt.Sprintf("dk%d", i) }
	first = timeIt(n, func(i int) {
		r.paddock("new", "--name", box(i))
		settleBoxes(r, []string{d.Instance + "-" + box(i)})
	}, func(i int) {
		r.paddock("exec", box(i), "--", "docker", "info")
	}, func(i int) {
		if i == n-1 {
			next = timeIt(n*2, nil, func(int) { r.paddock("exec", box(i), "--", "docker", "info") }, nil)
		}
		r.paddock("rm", "--force", box(i))
	})
	return first, next
}

// settleRaw gives a raw container what settleBoxes gives a box: 5 s after
// it answers.
func settleRaw(name string) {
	(&runner{}).docker("exec", name, "true")
	time.Sleep(5 * time.Second)
}
