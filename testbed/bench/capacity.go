package main

import (
	"fmt"
	"time"

	"github.com/paddock-dev/paddock/testbed/harness"
)

// The capacity of three servers against one, at the same per-box memory.
//
// The servers of this machine share its memory, so each is given a
// budget of its own: its engine puts containers under a cgroup that holds
// capServerMiB (harness.StartBoundedServers), as a server with that much
// memory for boxes would. Boxes of one type are placed by Paddock on the
// servers with a label (one server has "one", all three "all"), and each
// holds capHoldMiB of memory (a python3 allocation, touched page by page,
// that then sleeps). More boxes are made than fit; a server out of memory
// kills holders (its cgroup's OOM killer), and the capacity is how many
// still hold theirs once every box has settled. The figure shows that
// placement fills every server, not one, and that what each server can
// hold is its own: on real servers it is each server's memory instead of
// a cgroup's.
const (
	capServerMiB = 768
	capHoldMiB   = 96
)

// capHolder holds capHoldMiB and says so in /tmp/held (its pid).
var capHolder = fmt.Sprintf(`import os, time
b = bytearray(%d << 20)
for i in range(0, len(b), 4096):
    b[i] = 1
open("/tmp/held", "w").write(str(os.getpid()))
time.sleep(1e9)`, capHoldMiB)

func benchCapacity(bins harness.Bins, work string) (one, three, madeOne, madeThree int) {
	c := startCluster(bins, work, "capacity", []string{"c1", "c2", "c3"}, capServerMiB<<20)
	defer c.stop()
	servers, r := c.servers, c.r
	for i, sv := range servers.List {
		joinServer(r, bins, servers, sv)
		if i == 0 {
			r.paddock("node", "label", sv.Name, "one=yes", "all=yes")
		} else {
			r.paddock("node", "label", sv.Name, "all=yes")
		}
	}
	// fill makes n boxes on the servers with label, a holder in each,
	// waits for each holder to hold its memory or end, then counts those
	// that still hold it, and removes the boxes.
	fill := func(label string, n int) int {
		var names []string
		for i := range n {
			name := fmt.Sprintf("%s%d", label, i)
			names = append(names, name)
			r.paddock("new", "--name", name, "--node-label", label+"=yes")
			r.paddock("exec", "--detach", name, "--", "python3", "-c", capHolder)
			// Until it holds its memory, or was killed getting it.
			for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				if out := r.paddock("exec", name, "--", "sh", "-c", "test -e /tmp/held && echo held; busybox pgrep -f 'b = bytearray' >/dev/null || echo gone"); out != "" {
					break
				}
			}
		}
		// The OOM killer may take an earlier holder for a later one:
		// count at the end.
		time.Sleep(2 * time.Second)
		alive := 0
		for _, name := range names {
			if r.paddock("exec", name, "--", "sh", "-c", `kill -0 "$(cat /tmp/held 2>/dev/null)" 2>/dev/null && echo alive || true`) == "alive" {
				alive++
			}
		}
		for _, name := range names {
			r.paddock("rm", "--force", name)
		}
		return alive
	}
	perServer := capServerMiB / capHoldMiB
	madeOne, madeThree = perServer+4, 3*perServer+6
	one = fill("one", madeOne)
	three = fill("all", madeThree)
	return one, three, madeOne, madeThree
}

// printCapacity prints the capacity figures.
func printCapacity(one, three, madeOne, madeThree int) {
	fmt.Printf("capacity: boxes of one type each holding %d MiB, on servers of %d MiB for boxes each (a cgroup per server's engine)\n", capHoldMiB, capServerMiB)
	fmt.Printf("  one server:    %d boxes held their memory (of %d made)\n", one, madeOne)
	fmt.Printf("  three servers: %d boxes held their memory (of %d made)\n", three, madeThree)
	if one > 0 {
		fmt.Printf("  ratio three / one: %.2f\n", float64(three)/float64(one))
	}
}
