package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/policies"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// benchCluster measures a box on another server: a paddockd whose server
// joined a second one (a network namespace with its own engine, as
// TestCluster's), and the box placed there; beside each operation the
// same through that server's own engine (docker -H), in the same run. The
// box image is the small test image (loading the full one into a second
// engine takes minutes, and both sides use the same one). The daemon
// keeps a warm pool of clusterPool small boxes over both servers: the
// pool row claims one of n2's (new --node n2, waited for untimed); the
// create row makes medium boxes, which the pool has none of (cold); the
// box the other rows use is a small one (the test configuration bounds
// medium boxes' disks to 50 MB, less than a push of 100 MB).
// clusterPool is the warm pool of the cluster section's daemon.
const clusterPool = 4

func benchCluster(bins harness.Bins, work string, n, bigN int) []row {
	cl := startCluster(bins, work, "cluster", []string{"n2"}, 0, fmt.Sprintf("PADDOCK_WARM_POOL__SMALL=%d", clusterPool))
	defer cl.stop()
	servers, d, r, mini := cl.servers, cl.d, cl.r, cl.mini
	n2 := servers.List[0]
	joinServer(r, bins, servers, n2)
	raw := "pdkbench-" + d.Instance
	engine := func(a ...string) string { return r.docker(append([]string{"-H", n2.Engine}, a...)...) }
	defer func() {
		if ids, err := n2.Docker("ps", "-aq", "--filter", "label=paddock.instance="+raw); err == nil && strings.TrimSpace(ids) != "" {
			n2.Docker(append([]string{"rm", "-f", "-v"}, strings.Fields(ids)...)...)
		}
	}()
	label := "paddock.instance=" + raw

	var rows []row
	p := timeIt(n, nil, func(i int) {
		r.paddock("new", "--name", fmt.Sprintf("rc%d", i), "--node", "n2", "--type", "medium")
		r.paddock("exec", fmt.Sprintf("rc%d", i), "--", "true")
	}, func(i int) { r.paddock("rm", "--force", fmt.Sprintf("rc%d", i)) })
	dk := timeIt(n, nil, func(i int) {
		engine("run", "-d", "--init", "--label", label, "--name", fmt.Sprintf("%s-c%d", raw, i), mini)
		engine("exec", fmt.Sprintf("%s-c%d", raw, i), "true")
	}, func(i int) { engine("rm", "-f", "-v", fmt.Sprintf("%s-c%d", raw, i)) })
	rows = append(rows, row{"create + first exec, on another server", p, dk})

	// new + first exec through the API, claimed from n2's pool boxes.
	db, err := d.StateDB()
	check(err)
	defer db.Close()
	c := d.Client()
	onN2 := func(int) {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var ready int
			check(db.QueryRow(`SELECT count(*) FROM pool WHERE ready=1 AND node='n2'`).Scan(&ready))
			if ready > 0 {
				return
			}
			if time.Now().After(deadline) {
				check(fmt.Errorf("no pool box of n2 was ready within 2 minutes"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	claims := 0
	p = timeIt(n*2, onN2, func(i int) {
		_, err := c.CreateBox(context.Background(), api.BoxPost{Name: fmt.Sprintf("rp%d", i), Node: "n2"})
		check(err)
		apiExecTrue(c, fmt.Sprintf("rp%d", i))
	}, func(i int) {
		var engine, node string
		check(db.QueryRow(`SELECT engine, node FROM boxes WHERE name=?`, fmt.Sprintf("rp%d", i)).Scan(&engine, &node))
		if engine != "" && node == "n2" {
			claims++
		}
		check(c.RemoveBox(context.Background(), fmt.Sprintf("rp%d", i)))
	})
	if claims != n*2 {
		check(fmt.Errorf("%d of %d runs were claimed from n2's pool", claims, n*2))
	}
	dk = timeIt(n*2, nil, func(i int) {
		engine("run", "-d", "--init", "--label", label, "--name", fmt.Sprintf("%s-p%d", raw, i), mini)
		engine("exec", fmt.Sprintf("%s-p%d", raw, i), "true")
	}, func(i int) { engine("rm", "-f", "-v", fmt.Sprintf("%s-p%d", raw, i)) })
	rows = append(rows, row{"new + first exec from the pool, API, on another server", p, dk})

	r.paddock("new", "--name", "rb", "--node", "n2")
	rawBox := raw + "-box"
	engine("run", "-d", "--init", "--label", label, "--name", rawBox, mini)
	p = timeIt(n*2, nil, func(int) { r.paddock("exec", "rb", "--", "true") }, nil)
	dk = timeIt(n*2, nil, func(int) { engine("exec", rawBox, "true") }, nil)
	rows = append(rows, row{"exec true, on another server", p, dk})

	big := filepath.Join(work, "cluster-big")
	f, err := os.Create(big)
	check(err)
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for range 100 {
		f.Write(buf)
	}
	check(f.Close())
	p = timeIt(bigN, nil, func(i int) {
		r.paddock("push", "rb", big, "--to", fmt.Sprintf("/tmp/push%d", i))
	}, func(i int) { r.paddock("exec", "rb", "--", "rm", "-rf", fmt.Sprintf("/tmp/push%d", i)) })
	dk = timeIt(bigN, nil, func(i int) {
		engine("cp", big, fmt.Sprintf("%s:/tmp/cp%d", rawBox, i))
	}, func(i int) { engine("exec", rawBox, "rm", "-rf", fmt.Sprintf("/tmp/cp%d", i)) })
	rows = append(rows, row{"push 100 MB, one file, to another server", p, dk})

	r.paddock("push", "rb", big, "--to", "/tmp/src")
	engine("cp", big, rawBox+":/tmp/src")
	p = timeIt(bigN, nil, func(i int) {
		r.paddock("pull", "rb", "/tmp/src", "--to", filepath.Join(work, fmt.Sprintf("cpull%d", i)))
	}, func(i int) { os.RemoveAll(filepath.Join(work, fmt.Sprintf("cpull%d", i))) })
	dk = timeIt(bigN, nil, func(i int) {
		engine("cp", rawBox+":/tmp/src", filepath.Join(work, fmt.Sprintf("ccp%d", i)))
	}, func(i int) { os.RemoveAll(filepath.Join(work, fmt.Sprintf("ccp%d", i))) })
	rows = append(rows, row{"pull 100 MB, one file, from another server", p, dk})
	return rows
}

// joinServer joins sv to the control plane r talks to, as a user does
// (the command 'paddock node add' prints, its agent named sv.Name), and
// waits until 'paddock nodes' says it is up.
func joinServer(r *runner, bins harness.Bins, servers *harness.Servers, sv *harness.Server) {
	var j api.NodeJoin
	check(json.Unmarshal([]byte(r.paddock("node", "add", "--json")), &j))
	args := strings.Fields(j.Command)
	for len(args) > 0 && args[0] != "node" {
		args = args[1:]
	}
	check(sv.StartAgent(bins.Paddockd, []string{"PADDOCK_DNS_UPSTREAM=" + net.JoinHostPort(servers.Host.String(), "53")}, append(args[1:], "--name", sv.Name)...))
	deadline := time.Now().Add(time.Minute)
	for {
		var ns []api.Node
		json.Unmarshal([]byte(r.paddock("nodes", "--json")), &ns)
		for _, x := range ns {
			if x.Name == sv.Name && x.State == "up" {
				return
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(sv.AgentLog())
			check(fmt.Errorf("%s did not come up as a node within a minute:\n%s", sv.Name, b))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cluster is a control plane and servers to join it, for a bench.
type cluster struct {
	servers *harness.Servers
	d       *harness.Daemon
	r       *runner
	mini    string
	dir     string
}

// startCluster starts servers named names (with memory bytes each for
// boxes when not 0: harness.StartBoundedServers) and a paddockd that
// listens for them, with env added, in work/sub; none has joined yet.
func startCluster(bins harness.Bins, work, sub string, names []string, memory int64, env ...string) *cluster {
	top, err := harness.Root()
	check(err)
	c := &cluster{mini: strings.TrimSpace((&runner{}).run("bash", filepath.Join(top, "testbed", "images.sh"), "mini"))}
	c.dir, err = os.MkdirTemp("", "pdk-b-") // short: sockets live under it
	check(err)
	if memory > 0 {
		c.servers, err = harness.StartBoundedServers(c.dir, names, memory, c.mini)
	} else {
		c.servers, err = harness.StartServers(c.dir, names, c.mini)
	}
	check(err)
	onError(c.servers.Stop)
	l, err := net.Listen("tcp", net.JoinHostPort(c.servers.Host.String(), "0"))
	check(err)
	clusterAddr := l.Addr().String()
	l.Close()
	c.d, err = harness.NewDaemon(bins, c.mini, filepath.Join(work, sub))
	check(err)
	// On the servers' control plane engine (the swarm's manager), never
	// the machine's.
	c.d.Engine = c.servers.Engine.Host
	c.d.Env = append([]string{"PADDOCK_LOG_LEVEL=warn", "PADDOCK_CLUSTER_LISTEN=" + clusterAddr}, env...)
	check(c.d.Start())
	onError(c.d.Cleanup)
	n, err := policies.NetworkFor(c.d.Instance, c.d.Subnet)
	check(err)
	check(c.servers.Engine.Forward(n.Bridge))
	c.r = &runner{env: append(c.d.CLIEnv(), "PADDOCK_CONFIG_DIR="+filepath.Join(work, sub+"-cli")), bins: bins}
	return c
}

// stop ends the daemon, then the servers.
func (c *cluster) stop() {
	c.d.Cleanup()
	c.servers.Stop()
	os.RemoveAll(c.dir)
}
