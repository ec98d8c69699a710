package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver/docker"
	"github.com/paddock-dev/paddock/appliance/node"
	"github.com/paddock-dev/paddock/policies"
	"github.com/paddock-dev/paddock/testbed/harness"
	"github.com/paddock-dev/paddock/units"
)

// One Paddock over three servers: this machine's paddockd on an engine of
// the test's own (the control plane, node one; never the machine's engine)
// and two servers that join it, each a network namespace with its own
// Docker engine (harness.Servers). The servers join
// the real way: 'paddock node add' prints a command, and that command,
// run on the server, makes it a node. Then boxes spread over the nodes,
// and each verb works on whichever node holds the box, behind that node's
// egress rules.
func TestCluster(t *testing.T) {
	mini, desk := imageTag(t, "mini"), imageTag(t, "desk")
	dir, err := os.MkdirTemp("", "pdk-cl-")
	if err != nil {
		t.Fatal(err)
	}
	servers, err := harness.StartServers(dir, []string{"n2", "n3", "n4"}, mini, desk)
	if err != nil {
		t.Fatal(err)
	}
	// The control plane's engine, the swarm's manager.
	dockerOut := servers.Engine.Docker
	// Registered first, so it runs last: after the daemon's cleanup.
	t.Cleanup(servers.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			for _, sv := range servers.List {
				b, _ := os.ReadFile(sv.AgentLog())
				t.Logf("agent of %s:\n%s", sv.Name, b)
			}
		}
	})
	l, err := net.Listen("tcp", net.JoinHostPort(servers.Host.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	clusterAddr := l.Addr().String()
	l.Close()
	// A host name, so that previews are served (paddockd routes preview
	// hosts on its own listener too; the front's ports are loopback ones).
	httpsAddr, err := harness.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	httpAddr, err := harness.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	// Snapshots are shipped to an object store (a real S3 server of the
	// test's own), so that a server declared lost takes no shipped
	// snapshot with it (NodeLost, at the end).
	s3 := harness.StartS3(t)
	d, cli, must := daemonReconcilingEvery(t, "3s", func(d *harness.Daemon) {
		d.Config += "\n" + s3.Config()
		d.Env = append(d.Env, "PADDOCK_SHIP_INTERVAL=2s")
		d.Image, d.Images, d.Engine = mini, []string{desk}, servers.Engine.Host
		d.Env = append(d.Env, "PADDOCK_CLUSTER_LISTEN="+clusterAddr, "PADDOCK_HOSTNAME=paddock.test", "PADDOCK_TLS=internal",
			"PADDOCK_HTTPS_LISTEN="+httpsAddr, "PADDOCK_HTTP_LISTEN="+httpAddr)
	})
	// Its boxes' bridge forwards through the machine's firewall, as the
	// machine's engine's own do.
	if n, err := policies.NetworkFor(d.Instance, d.Subnet); err != nil {
		t.Fatal(err)
	} else if err := servers.Engine.Forward(n.Bridge); err != nil {
		t.Fatal(err)
	}

	// A listener on this machine's hub address: what a box on a node may
	// or may not reach past its node.
	probe, err := net.Listen("tcp", net.JoinHostPort(servers.Host.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(probe, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "reached") }))
	t.Cleanup(func() { probe.Close() })

	// Joining: the printed command, run as it is on the server.
	join := func() api.NodeJoin {
		t.Helper()
		var j api.NodeJoin
		if err := json.Unmarshal([]byte(must("node", "add", "--json")), &j); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(j.Command, "--join "+clusterAddr) {
			t.Fatalf("the join command does not name the cluster listener %s: %s", clusterAddr, j.Command)
		}
		return j
	}
	agentArgs := func(j api.NodeJoin, sv *harness.Server) []string {
		f := strings.Fields(j.Command)
		for len(f) > 0 && f[0] != "node" {
			f = f[1:] // sudo paddockd
		}
		return append(f[1:], "--name", sv.Name)
	}
	// The boxes' resolver on a node forwards to nothing that answers:
	// nothing leaves the machine.
	agentEnv := []string{"PADDOCK_DNS_UPSTREAM=" + net.JoinHostPort(servers.Host.String(), "53")}
	n2, n3, n4 := servers.List[0], servers.List[1], servers.List[2]
	joined := []*harness.Server{n2, n3} // n4 joins at the end

	// A join with a made-up token (the authority's fingerprint is public
	// to the network: any server that reaches the listener has it) is
	// refused before anything is done: the control plane's engine is not
	// made a swarm manager, which would open its swarm ports.
	t.Run("AttackJoinWithAMadeUpToken", func(t *testing.T) {
		caPEM, err := os.ReadFile(filepath.Join(d.StateDir, "cluster", "ca.pem"))
		if err != nil {
			t.Fatal(err)
		}
		ca, err := node.Trusting(caPEM)
		if err != nil {
			t.Fatal(err)
		}
		if err := n4.StartAgent(bins.Paddockd, agentEnv, "--join", clusterAddr, "--token", "pdkjoin_madeup", "--ca-sha256", ca.Fingerprint(), "--name", "n4"); err != nil {
			t.Fatal(err)
		}
		if code, ok := n4.AgentExit(60 * time.Second); !ok || code == 0 {
			t.Fatalf("a join with a made-up token: ended %v, status %d", ok, code)
		}
		if b, _ := os.ReadFile(n4.AgentLog()); !strings.Contains(string(b), "not valid") {
			t.Fatalf("a join with a made-up token:\n%s", b)
		}
		if out, _ := dockerOut("info", "--format", "{{.Swarm.LocalNodeState}}"); strings.TrimSpace(out) != "inactive" {
			t.Fatalf("the control plane's engine after a join with a made-up token: %q", out)
		}
	})

	// Swarm mode refuses an engine with live-restore: the first 'node
	// add' says so, and makes no token.
	if err := servers.Engine.RestartWith("--live-restore"); err != nil {
		t.Fatal(err)
	}
	if out, err := cli("node", "add"); err == nil || !strings.Contains(out, "the engine runs with live-restore, which Swarm mode refuses") {
		t.Fatalf("node add on a control plane whose engine runs with live-restore: %v\n%s", err, out)
	}
	if err := servers.Engine.RestartWith(); err != nil {
		t.Fatal(err)
	}
	j := join()
	if err := n2.StartAgent(bins.Paddockd, agentEnv, agentArgs(j, n2)...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "n2 to join", func() bool {
		b, _ := os.ReadFile(n2.AgentLog())
		return strings.Contains(string(b), "joined as node n2")
	})
	// The same token a second time: refused, and the server does not join.
	if err := n3.StartAgent(bins.Paddockd, agentEnv, agentArgs(j, n3)...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "a second join with a spent token to fail", func() bool {
		b, _ := os.ReadFile(n3.AgentLog())
		return strings.Contains(string(b), "not valid")
	})
	n3.StopAgent()
	// n3 joins the way the installer does it: 'paddockd install --join'
	// (install.sh --join hands over to it) joins and writes the agent's
	// unit, and the agent then serves with no flags.
	j3 := join()
	out, err := n3.Install(bins.Paddockd, agentEnv, "--runtime", "runc", "--join", clusterAddr, "--token", j3.Token, "--ca-sha256", j3.CASHA256, "--name", "n3")
	if err != nil || !strings.Contains(out, "node: joined as n3") {
		t.Fatalf("paddockd install --join on n3: %v\n%s", err, out)
	}
	if unit, err := os.ReadFile(filepath.Join(n3.Root(), "etc/systemd/system/paddock-node.service")); err != nil || !strings.Contains(string(unit), "ExecStart=/usr/local/bin/paddockd node\n") {
		t.Fatalf("the agent's unit on n3: %v\n%s", err, unit)
	}
	if _, err := os.Stat(filepath.Join(n3.Root(), "etc/systemd/system/paddockd.service")); err == nil {
		t.Fatal("a node's install wrote the control plane's unit")
	}
	if out, err := n3.Install(bins.Paddockd, agentEnv, "--runtime", "runc", "--join", clusterAddr, "--token", j3.Token, "--ca-sha256", j3.CASHA256, "--name", "n3"); err != nil || !strings.Contains(out, "joined already, as n3") {
		t.Fatalf("paddockd install --join run again on n3: %v\n%s", err, out)
	}
	if err := n3.StartAgent(bins.Paddockd, agentEnv); err != nil {
		t.Fatal(err)
	}

	nodes := func() map[string]api.Node {
		out, err := cli("nodes", "--json")
		if err != nil {
			return nil
		}
		var ns []api.Node
		if json.Unmarshal([]byte(out), &ns) != nil {
			return nil
		}
		m := map[string]api.Node{}
		for _, n := range ns {
			m[n.Name] = n
		}
		return m
	}
	var local string
	waitFor(t, 60*time.Second, "both servers to be up as nodes", func() bool {
		m := nodes()
		for name, n := range m {
			if n.ControlPlane {
				local = name
			}
		}
		return len(m) == 3 && m["n2"].State == "up" && m["n3"].State == "up" && local != ""
	})
	t.Logf("nodes:\n%s", must("nodes"))

	// The servers joined the swarm this machine's engine now manages,
	// each at its own address, and Swarm's word on them is in 'paddock
	// nodes'.
	swarmSays := func() map[string]string {
		ids, err := dockerOut("node", "ls", "-q")
		if err != nil {
			t.Fatalf("docker node ls on the control plane's engine: %v\n%s", err, ids)
		}
		out, err := dockerOut(append([]string{"node", "inspect", "--format", "{{.Status.Addr}} {{.Status.State}}"}, strings.Fields(ids)...)...)
		if err != nil {
			t.Fatalf("docker node inspect: %v\n%s", err, out)
		}
		m := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(l); len(f) == 2 && m[f[0]] != "ready" {
				m[f[0]] = f[1]
			}
		}
		return m
	}
	if m := swarmSays(); m[n2.Addr.String()] != "ready" || m[n3.Addr.String()] != "ready" {
		t.Fatalf("the swarm's nodes: %v (n2 at %s, n3 at %s)", m, n2.Addr, n3.Addr)
	}
	if m := nodes(); m["n2"].SwarmState != "ready" || m["n3"].SwarmID == "" {
		t.Fatalf("paddock nodes says of the swarm: %+v", m)
	}
	// What placement weighs of each server is what the swarm says its
	// engine has (never more than its agent says), and 'paddock nodes'
	// shows it: CPUs, memory free of all, disk free of all.
	table := must("nodes")
	for name, n := range nodes() {
		want := strings.Fields(func() string {
			if n.ControlPlane {
				return "" // its own engine's word: not a swarm node's report it weighs
			}
			out, err := dockerOut("node", "inspect", "--format", "{{.Description.Resources.NanoCPUs}} {{.Description.Resources.MemoryBytes}}", n.SwarmID)
			if err != nil {
				t.Fatalf("docker node inspect %s: %v %s", name, err, out)
			}
			return out
		}())
		if len(want) == 2 && (fmt.Sprint(n.CPUs*1e9) != want[0] || fmt.Sprint(n.MemoryBytes) != want[1]) {
			t.Fatalf("%s: %d CPUs and %d bytes of memory in paddock nodes; the swarm says %v", name, n.CPUs, n.MemoryBytes, want)
		}
		if n.CPUs <= 0 || n.MemoryBytes <= 0 || n.DiskBytes <= 0 || n.DiskFree <= 0 {
			t.Fatalf("%s without what it has: %+v", name, n)
		}
		row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `( \*)? .* ` + fmt.Sprint(n.CPUs) + ` +[0-9.]+ GiB of ` + fmt.Sprintf("%.1f", float64(n.MemoryBytes)/(1<<30)) + ` GiB +[0-9.]+ GiB of ` + fmt.Sprintf("%.1f", float64(n.DiskBytes)/(1<<30)) + ` GiB`)
		if !row.MatchString(table) {
			t.Fatalf("paddock nodes' row of %s (%d CPUs, %d bytes, %d bytes of disk):\n%s", name, n.CPUs, n.MemoryBytes, n.DiskBytes, table)
		}
	}

	// Thirty boxes on three nodes of the same size: ten on each.
	boxNode := map[string]string{}
	spread := time.Now()
	for i := 1; i <= 30; i++ {
		must("new", "--name", fmt.Sprintf("b%d", i))
	}
	t.Logf("30 boxes made in %s", time.Since(spread).Round(100*time.Millisecond))
	var boxes []api.Box
	if err := json.Unmarshal([]byte(must("ls", "--json")), &boxes); err != nil {
		t.Fatal(err)
	}
	per := map[string][]string{}
	for _, b := range boxes {
		boxNode[b.Name] = b.Node
		per[b.Node] = append(per[b.Node], b.Name)
	}
	if len(per[local]) != 10 || len(per["n2"]) != 10 || len(per["n3"]) != 10 {
		t.Fatalf("thirty boxes over three equal nodes: %v", per)
	}
	// Each runs, once, on its own node's engine.
	for _, sv := range joined {
		out, err := sv.Docker("ps", "--format", "{{.Names}}")
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range per[sv.Name] {
			if strings.Count(out, d.Instance+"-"+b+"\n") != 1 {
				t.Fatalf("box %s is not running on %s: %q", b, sv.Name, out)
			}
		}
	}
	on := func(node string) string { return per[node][0] }

	// Each node's box runs on that node's engine, and only there.
	for _, sv := range joined {
		box := on(sv.Name)
		out, err := sv.Docker("ps", "--format", "{{.Names}}")
		if err != nil || !strings.Contains(out, "-"+box+"\n") {
			t.Fatalf("box %s is not among %s's containers: %q %v", box, sv.Name, out, err)
		}
		for _, other := range per[local] {
			if strings.Contains(out, "-"+other+"\n") {
				t.Fatalf("box %s of the control plane's node runs on %s too", other, sv.Name)
			}
		}
		if got := must("exec", box, "--", "sh", "-c", "echo kept-on-"+sv.Name+" > /config/kept; cat /config/kept"); got != "kept-on-"+sv.Name+"\n" {
			t.Fatalf("exec in %s on %s: %q", box, sv.Name, got)
		}
		if !strings.Contains(must("show", box), "node:") {
			t.Fatalf("paddock show %s does not say its node", box)
		}
	}

	// Files in and out of a box on another node.
	b2 := on("n2")
	src := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(src, []byte(strings.Repeat("paddock ", 10000)), 0o644); err != nil {
		t.Fatal(err)
	}
	must("push", b2, src, "--to", "/config/in")
	back := filepath.Join(t.TempDir(), "back")
	must("pull", b2, "/config/in/in.txt", "--to", back)
	if got, _ := os.ReadFile(back); string(got) != strings.Repeat("paddock ", 10000) {
		t.Fatalf("pulled back %d bytes", len(got))
	}

	// Its use is read on n2 (the agent's /usage, from the box's cgroup
	// there) and sampled by the control plane.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		var ms []api.Sample
		json.Unmarshal([]byte(must("top", "--json")), &ms)
		i := slices.IndexFunc(ms, func(m api.Sample) bool { return m.Box == b2 })
		if i >= 0 && ms[i].Processes > 0 && ms[i].Memory > 0 && ms[i].MemoryLimit > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sample of %s on n2 within 30s: %+v", b2, ms)
		}
	}

	// Job control on n2: a signal goes to its agent with the job's
	// command (a frame of the node's exec stream), and input too.
	id := strings.TrimSpace(must("exec", "--detach", b2, "--", "sh", "-c", "exec 2>/dev/null; trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.1; done"))
	waitFor(t, 60*time.Second, "the job on n2 to start", func() bool { return strings.Contains(must("logs", b2, id), "ready") })
	must("jobs", "kill", b2, id)
	if got := strings.TrimSpace(must("wait", b2, id)); got != "3" || must("logs", b2, id) != "ready\ngot-term\n" {
		t.Fatalf("a job on n2 sent TERM: exit %s, log %q", got, must("logs", b2, id))
	}
	id = strings.TrimSpace(must("exec", "--detach", "--stdin", b2, "--", "sh", "-c", "read l; echo got:$l"))
	must("jobs", "send", b2, id, "--text", "hi", "--eof")
	if got := strings.TrimSpace(must("wait", b2, id)); got != "0" || must("logs", b2, id) != "got:hi\n" {
		t.Fatalf("a job on n2 sent input: exit %s, log %q", got, must("logs", b2, id))
	}

	// Stop (a snapshot on its node) and start keep its files; a fork of
	// it is made where its snapshot is, with them.
	must("stop", b2)
	must("start", b2)
	if got := must("exec", b2, "--", "cat", "/config/kept"); got != "kept-on-n2\n" {
		t.Fatalf("after stop and start on n2: %q", got)
	}
	must("fork", b2, "--name", "f2")
	if got := must("exec", "f2", "--", "cat", "/config/kept"); got != "kept-on-n2\n" {
		t.Fatalf("the fork of a box on n2: %q", got)
	}
	var f2 api.Box
	json.Unmarshal([]byte(must("show", "f2", "--json")), &f2)
	if f2.Node != "n2" {
		t.Fatalf("the fork of a box on n2 is on %q", f2.Node)
	}

	// A drive, and the boxes that mount it, are on one node.
	must("drive", "new", "data")
	must("new", "--name", "d1", "--drive", "data:/mnt/data")
	must("new", "--name", "d2", "--drive", "data:/mnt/data")
	var d1, d2 api.Box
	json.Unmarshal([]byte(must("show", "d1", "--json")), &d1)
	json.Unmarshal([]byte(must("show", "d2", "--json")), &d2)
	if d1.Node == "" || d1.Node != d2.Node {
		t.Fatalf("two boxes that mount one drive: on %q and %q", d1.Node, d2.Node)
	}
	must("exec", "d1", "--", "sh", "-c", "echo shared > /mnt/data/f")
	if got := must("exec", "d2", "--", "cat", "/mnt/data/f"); got != "shared\n" {
		t.Fatalf("the drive seen from its second box: %q", got)
	}

	// A box moves to another server with its files and its own Docker's
	// data, and runs there, once; its old container and data are gone from
	// the server it left. A box that mounts a drive does not move (yet),
	// nor does one to where it is.
	mv := per["n2"][2]
	must("exec", mv, "--", "sh", "-c", "echo early > /config/moved")
	early := api.Snapshot{ID: strings.TrimSpace(must("snapshot", mv))}
	must("exec", mv, "--", "sh", "-c", "echo moved-file > /config/moved")
	if out, err := n2.Docker("exec", "-u", "0", d.Instance+"-"+mv, "sh", "-c", "echo docker-data > /var/lib/docker/marker"); err != nil {
		t.Fatalf("writing %s's /var/lib/docker: %v\n%s", mv, err, out)
	}
	moving := time.Now()
	must("move", mv, "--to", "n3")
	t.Logf("box %s moved from n2 to n3 in %s", mv, time.Since(moving).Round(100*time.Millisecond))
	var moved api.Box
	json.Unmarshal([]byte(must("show", mv, "--json")), &moved)
	if moved.Node != "n3" || moved.Status != "running" || !strings.HasPrefix(moved.IP, "10.214.1.") {
		t.Fatalf("the moved box: node %q, status %q, address %s", moved.Node, moved.Status, moved.IP)
	}
	if got := must("exec", mv, "--", "cat", "/config/moved"); got != "moved-file\n" {
		t.Fatalf("the moved box's file: %q", got)
	}
	if out, _ := n3.Docker("exec", "-u", "0", d.Instance+"-"+mv, "cat", "/var/lib/docker/marker"); out != "docker-data\n" {
		t.Fatalf("the moved box's /var/lib/docker on n3: %q", out)
	}
	if out, _ := n2.Docker("ps", "-a", "--format", "{{.Names}}"); strings.Contains(out, "-"+mv+"\n") {
		t.Fatalf("the moved box's container is still on n2: %q", out)
	}
	if out, _ := n2.Docker("volume", "ls", "-q"); strings.Contains(out, mv) {
		t.Fatalf("the moved box's data is still on n2: %q", out)
	}
	// Its earlier snapshots went with it: one taken before the move
	// restores on n3.
	must("restore", mv, early.ID)
	if got := must("exec", mv, "--", "cat", "/config/moved"); got != "early\n" {
		t.Fatalf("the moved box restored to a snapshot from before its move: %q", got)
	}
	// A fork onto another server: made where its snapshot is, then moved.
	must("fork", mv, "--name", "fk", "--node", "n2")
	var fk api.Box
	json.Unmarshal([]byte(must("show", "fk", "--json")), &fk)
	if fk.Node != "n2" || fk.Status != "running" {
		t.Fatalf("the fork of a box on n3 onto n2: on %q, %s", fk.Node, fk.Status)
	}
	if got := must("exec", "fk", "--", "cat", "/config/moved"); got != "early\n" {
		t.Fatalf("the fork onto n2: %q", got)
	}
	if out, err := cli("fork", "d1", "--node", map[bool]string{true: "n3", false: "n2"}[d1.Node != "n3"]); err == nil || !strings.Contains(out, "mounts drives") {
		t.Fatalf("a fork of a box with drives onto another server: %v\n%s", err, out)
	}
	if out, err := cli("move", mv, "--to", "n3"); err == nil || !strings.Contains(out, "on n3 already") {
		t.Fatalf("moving a box to where it is: %v\n%s", err, out)
	}
	testDriveMoves(t, d, cli, must, d1.Node, map[string]func(...string) (string, error){"n2": n2.Docker, "n3": n3.Docker, "": dockerOut})

	// The dashboard says which server each box and drive is on, and
	// filters boxes by server.
	json.Unmarshal([]byte(must("show", "d1", "--json")), &d1)
	// This paddockd has a host name (its pages answer no other) and its
	// own certificate authority: the browser finds the name on this
	// machine and is not asked to trust the authority.
	link, err := url.Parse(strings.SplitN(must("dashboard", "--no-open"), "\n", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	base := link.Scheme + "://" + link.Host
	br := newBrowser(t, base, 2*time.Minute, chromedp.Flag("host-resolver-rules", "MAP paddock.test 127.0.0.1"), chromedp.Flag("ignore-certificate-errors", true))
	br.do(chromedp.Navigate(link.String()), chromedp.Click(chromedp.CSS("#signin")))
	poll[bool](br, "the server column", `!!document.querySelector('#boxes th.node-col:not([hidden])') && !!document.querySelector('#boxes tr[data-box="d1"] td[data-node="`+d1.Node+`"]')`, 20*time.Second)
	if got := eval[string](br, `[...new Set([...document.querySelectorAll('#boxes td[data-node]')].map(td => td.dataset.node))].sort().join(",")`); !strings.Contains(got, "n2") || !strings.Contains(got, "n3") {
		t.Fatalf("the servers in the box list: %q", got)
	}
	eval[bool](br, `(() => { const f = document.getElementById("f-node"); f.value = "n3"; return f.dispatchEvent(new Event("change")); })()`)
	if got := eval[string](br, `[...new Set([...document.querySelectorAll('#boxes td[data-node]')].map(td => td.dataset.node))].join(",")`); got != "n3" {
		t.Fatalf("the box list filtered to n3 shows boxes of %q", got)
	}
	shotDir, err := os.MkdirTemp("", "paddock-cluster-shots-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("page screenshots: %s", shotDir)
	br.shots(shotDir, "boxes-n3")
	br.do(chromedp.Navigate(base + "/drives"))
	poll[bool](br, "the drive's server", `!!document.querySelector('#drives tr[data-drive="data"] td[data-node="`+d1.Node+`"]')`, 20*time.Second)
	br.shots(shotDir, "drives")
	br.do(chromedp.Navigate(base + "/boxes/d1"))
	poll[bool](br, "the box's server", `[...document.querySelectorAll('#facts dt')].some(dt => dt.textContent === "Server" && dt.nextElementSibling.textContent === "`+d1.Node+`")`, 20*time.Second)
	br.shots(shotDir, "box-d1")

	// Egress on a node that is not the control plane's: its rules hold
	// there. The box reaches past its node when its policy allows, not
	// when it does not, and never reaches its node's own services (the
	// agent's port) nor another server's (the control plane's address in
	// the cluster, where the probe listens; another node's agent).
	hubURL := "http://" + probe.Addr().String() + "/"
	netURL := "http://198.18.2.2/"
	reach := func(box, url string, want bool) {
		t.Helper()
		out, err := cli("exec", box, "--", "busybox", "wget", "-q", "-T", "3", "-O", "-", url)
		if (err == nil) != want {
			t.Errorf("box %s (on %s) reaching %s: err %v, want reached=%v\n%s", box, boxNode[box], url, err, want, out)
		}
	}
	// connect says whether a box opens a TCP connection to addr.
	connect := func(box, addr string, want bool) {
		t.Helper()
		out, err := cli("exec", box, "--", "busybox", "nc", "-w", "3", addr[:strings.LastIndex(addr, ":")], addr[strings.LastIndex(addr, ":")+1:])
		if (err == nil) != want {
			t.Errorf("box %s (on %s) connecting to %s: err %v, want connected=%v\n%s", box, boxNode[box], addr, err, want, out)
		}
	}
	b3 := on("n3")
	reach(b3, netURL, true)
	reach(b3, "http://169.254.169.254/", false)
	connect(b3, "198.18.2.2:80", true)
	connect(b3, net.JoinHostPort(n3.Addr.String(), "7443"), false)
	// The probe and n2's agent answer this machine; a box on n3 reaches
	// neither, nor does a box of the control plane reach n2's agent.
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(n2.Addr.String(), "7443"), 3*time.Second); err != nil {
		t.Fatalf("n2's agent from this machine: %v", err)
	} else {
		c.Close()
	}
	reach(b3, hubURL, false)
	connect(b3, probe.Addr().String(), false)
	connect(b3, net.JoinHostPort(n2.Addr.String(), "7443"), false)
	connect(on(local), net.JoinHostPort(n2.Addr.String(), "7443"), false)
	must("policy", "set", b3, "deny-all")
	reach(b3, netURL, false)
	must("policy", "set", b3, "allow-all")
	reach(b3, netURL, true)
	testNodeAttacks(t, must, n3, n2, d.Instance)

	// A preview of a box on another server: this server has no route to
	// n3's box network, so the preview goes through an exec in the box;
	// a box of this server's is reached at its address, as before.
	preview := func(box, want string) {
		t.Helper()
		if out, err := cli("exec", "--detach", box, "--", "sh", "-c",
			"mkdir -p /config/www && echo "+want+" >/config/www/index.html && exec busybox httpd -f -p 8080 -h /config/www"); err != nil {
			t.Fatalf("a web server in %s: %v\n%s", box, err, out)
		}
		var body string
		waitFor(t, 30*time.Second, "the preview of "+box, func() bool {
			req, _ := http.NewRequest("GET", "http://"+d.Listen+"/index.html", nil)
			req.Host = "8080-" + box + ".paddock.test"
			req.Header.Set("Authorization", "Bearer "+d.Token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(raw)
			return resp.StatusCode == 200 && strings.TrimSpace(body) == want
		})
	}
	preview(b3, "preview-on-n3")
	preview(on(local), "preview-on-the-control-plane")

	// A desktop on another server: paddock show says it is up (its X
	// server answered), a screenshot is taken there (ImageMagick's import,
	// run in the box through n3's agent) at the desktop's size, and the
	// browser's bridge reaches its VNC server (nc in the box): the first
	// bytes through the ticket's websocket are the RFB greeting.
	must("new", "--name", "desk3", "--node", "n3", "--image", desk, "--desktop")
	var deskBox api.Box
	waitFor(t, time.Minute, "desk3's desktop up", func() bool {
		deskBox = api.Box{}
		json.Unmarshal([]byte(must("show", "desk3", "--json")), &deskBox)
		return deskBox.Desktop && deskBox.DesktopState == "up"
	})
	if deskBox.Node != "n3" {
		t.Fatalf("desk3 is on %q", deskBox.Node)
	}
	shot := filepath.Join(t.TempDir(), "desk3.png")
	must("screenshot", "desk3", "-o", shot)
	if f, err := os.Open(shot); err != nil {
		t.Fatal(err)
	} else {
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width != 1280 || cfg.Height != 800 {
			t.Fatalf("desk3's screenshot: a PNG of %dx%d, %v", cfg.Width, cfg.Height, err)
		}
	}
	tk, err := d.Client().DesktopTicket(context.Background(), "desk3")
	if err != nil {
		t.Fatal(err)
	}
	wsCtx, wsCancel := context.WithTimeout(context.Background(), 30*time.Second)
	ws, _, err := websocket.Dial(wsCtx, "ws://"+d.Listen+"/desktop/desk3/ws?ticket="+tk.Ticket, &websocket.DialOptions{Subprotocols: []string{"binary"}})
	if err != nil {
		t.Fatalf("the desktop's websocket of desk3: %v", err)
	}
	_, greeting, err := ws.Read(wsCtx)
	ws.CloseNow()
	wsCancel()
	if err != nil || !strings.HasPrefix(string(greeting), "RFB 003.") {
		t.Fatalf("through desk3's desktop bridge: %q, %v", greeting, err)
	}
	must("rm", "--force", "desk3")

	// SSH into a box on another server (the gateway carries it by exec),
	// a command with its exit status and a terminal.
	key := filepath.Join(t.TempDir(), "id")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "cluster", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	must("key", "add", key+".pub")
	sshArgs := []string{"ssh", b3, "-F", "none", "-i", key, "-o", "BatchMode=yes", "-o", "LogLevel=ERROR"}
	out, err = cli(append(sshArgs, "--", "echo ssh-on-$(hostname); exit 3")...)
	if err == nil || !strings.Contains(out, "ssh-on-"+b3) {
		t.Fatalf("ssh into %s on n3 (exit 3 wanted): %v\n%s", b3, err, out)
	}
	if out := must(append(sshArgs[:len(sshArgs):len(sshArgs)], "-tt", "--", "tty")...); !strings.Contains(out, "/dev/pts/") {
		t.Fatalf("a terminal over ssh in %s on n3: %q", b3, out)
	}

	// An agent that restarts (a crash, an upgrade) serves its boxes again
	// without joining again.
	n2.StopAgent()
	if err := n2.StartAgent(bins.Paddockd, agentEnv); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "n2's agent to serve its box again", func() bool {
		out, err := cli("exec", b2, "--", "cat", "/config/kept")
		return err == nil && out == "kept-on-n2\n"
	})
	// Killed hard (SIGKILL: none of its own ending runs), the same.
	n2.KillAgent()
	if err := n2.StartAgent(bins.Paddockd, agentEnv); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "n2's agent, killed hard, to serve its box again", func() bool {
		out, err := cli("exec", b2, "--", "cat", "/config/kept")
		return err == nil && out == "kept-on-n2\n"
	})
	if out, _ := n2.Docker("ps", "-a", "--format", "{{.Names}}"); strings.Count(out, "-"+b2+"\n") != 1 {
		t.Fatalf("box %s's containers on n2 after its agent was killed: %q", b2, out)
	}

	// A node whose agent is gone: its boxes say "node down" and are left
	// as they are (they run on, and are made nowhere else), the other
	// nodes go on, and new boxes go elsewhere. When it is back, its boxes
	// are as they were.
	status := func(box string) string {
		var b api.Box
		out, err := cli("show", box, "--json")
		if err != nil || json.Unmarshal([]byte(out), &b) != nil {
			return ""
		}
		return b.Status
	}
	containers := func(box string) int {
		n := 0
		for _, eng := range []func(...string) (string, error){
			func(a ...string) (string, error) { return dockerOut(a...) }, n2.Docker, n3.Docker,
		} {
			out, _ := eng("ps", "-a", "--format", "{{.Names}}")
			n += strings.Count(out, "-"+box+"\n")
		}
		return n
	}
	n3.StopAgent()
	agentGone := time.Now()
	waitFor(t, 60*time.Second, "box "+b3+" to say node down", func() bool { return status(b3) == "node down" })
	t.Logf("box %s said node down %s after n3's agent stopped", b3, time.Since(agentGone).Round(100*time.Millisecond))
	waitFor(t, 30*time.Second, "n3 to be down in paddock nodes", func() bool { return nodes()["n3"].State == "down" })
	// Its box says the server is down and since when, not to start it.
	if out, err := cli("exec", b3, "--", "true"); err == nil || !strings.Contains(out, "is on server n3, which is down since") || strings.Contains(out, "paddock start") {
		t.Fatalf("exec in a box on a server that is down: %v\n%s", err, out)
	}
	if got := must("exec", on(local), "--", "echo", "alive"); got != "alive\n" {
		t.Fatalf("a box of the control plane's node while n3 is down: %q", got)
	}
	must("new", "--name", "during")
	if n := func() string {
		var b api.Box
		json.Unmarshal([]byte(must("show", "during", "--json")), &b)
		return b.Node
	}(); n == "n3" {
		t.Fatal("a box was placed on n3 while it was down")
	}
	if out, _ := n3.Docker("inspect", "-f", "{{.State.Running}}", d.Instance+"-"+b3); strings.TrimSpace(out) != "true" {
		t.Fatalf("box %s's container on n3 while its agent is gone: %q", b3, out)
	}
	if n := containers(b3); n != 1 {
		t.Fatalf("box %s has %d containers over the three engines while n3 is down", b3, n)
	}
	if err := n3.StartAgent(bins.Paddockd, agentEnv); err != nil {
		t.Fatal(err)
	}
	agentBack := time.Now()
	waitFor(t, 60*time.Second, "box "+b3+" to run again once n3 is back", func() bool { return status(b3) == "running" })
	t.Logf("box %s said running %s after n3's agent started again", b3, time.Since(agentBack).Round(100*time.Millisecond))
	if got := must("exec", b3, "--", "cat", "/config/kept"); got != "kept-on-n3\n" {
		t.Fatalf("box %s once n3 is back: %q", b3, got)
	}
	if n := containers(b3); n != 1 {
		t.Fatalf("box %s has %d containers once n3 is back", b3, n)
	}

	// A node's engine killed (a crash) and started again: its boxes are
	// down meanwhile, then run again with their files, once each.
	b2b := per["n2"][1]
	must("exec", b2b, "--", "sh", "-c", "echo kept-on-n2 > /config/kept")
	if err := n2.KillEngine(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	engineBack := time.Now()
	waitFor(t, 90*time.Second, "box "+b2b+" to run again after n2's engine crashed", func() bool {
		out, err := cli("exec", b2b, "--", "cat", "/config/kept")
		return status(b2b) == "running" && err == nil && out == "kept-on-n2\n"
	})
	t.Logf("n2's engine answered again; its box ran again with its file %s later", time.Since(engineBack).Round(100*time.Millisecond))
	if n := containers(b2b); n != 1 {
		t.Fatalf("box %s has %d containers after n2's engine crashed", b2b, n)
	}

	// Swarm's word decides: n3 leaves the swarm while its agent still
	// answers. It is down, its boxes say "node down" and run on where they
	// are, once; back in the swarm, it is up, and its boxes with it.
	if out, err := n3.Docker("swarm", "leave", "--force"); err != nil {
		t.Fatalf("n3 leaving the swarm: %v\n%s", err, out)
	}
	left := time.Now()
	waitFor(t, 60*time.Second, "n3 to be down once it left the swarm", func() bool {
		n := nodes()["n3"]
		return n.State == "down" && strings.Contains(n.Error, "swarm")
	})
	waitFor(t, 60*time.Second, "box "+b3+" to say node down once n3 left the swarm", func() bool { return status(b3) == "node down" })
	t.Logf("n3 left the swarm: down in paddock nodes and box %s node down %s later (%s)", b3, time.Since(left).Round(100*time.Millisecond), nodes()["n3"].Error)
	if out, _ := n3.Docker("inspect", "-f", "{{.State.Running}}", d.Instance+"-"+b3); strings.TrimSpace(out) != "true" {
		t.Fatalf("box %s's container on n3 while n3 is out of the swarm: %q", b3, out)
	}
	// Labelled while it is out: the label is the server's, and goes with
	// it into the swarm again.
	must("node", "label", "n3", "zone=b")
	// The swarm's worker token a server was sent lets no one in after the
	// next 'node add'.
	old, err := dockerOut("swarm", "join-token", "-q", "worker")
	if err != nil {
		t.Fatal(err, old)
	}
	must("node", "add")
	if out, err := n3.Docker("swarm", "join", "--token", strings.TrimSpace(old), "--advertise-addr", n3.Addr.String(),
		"--listen-addr", n3.Addr.String()+":2377", servers.Host.String()+":2377"); err == nil {
		t.Fatalf("n3 joined the swarm with the worker token of before the last node add:\n%s", out)
	}
	tok, err := dockerOut("swarm", "join-token", "-q", "worker")
	if err != nil {
		t.Fatal(err, tok)
	}
	if out, err := n3.Docker("swarm", "join", "--token", strings.TrimSpace(tok), "--advertise-addr", n3.Addr.String(),
		"--listen-addr", n3.Addr.String()+":2377", servers.Host.String()+":2377"); err != nil {
		t.Fatalf("n3 joining the swarm again: %v\n%s", err, out)
	}
	back3 := time.Now()
	waitFor(t, 60*time.Second, "box "+b3+" to run again once n3 is back in the swarm", func() bool { return status(b3) == "running" })
	t.Logf("n3 back in the swarm: box %s running %s later", b3, time.Since(back3).Round(100*time.Millisecond))
	if n := containers(b3); n != 1 {
		t.Fatalf("box %s has %d containers once n3 is back in the swarm", b3, n)
	}
	waitFor(t, 30*time.Second, "n3's label in the swarm once it joined again", func() bool {
		out, _ := dockerOut("node", "inspect", "--format", `{{index .Spec.Labels "paddock.zone"}}`, nodes()["n3"].SwarmID)
		return strings.TrimSpace(out) == "b"
	})

	// A server cut off (its link down), then healed: its boxes say node
	// down and run on, once; nothing waits on it meanwhile (the other
	// servers' boxes answer, a new box is made elsewhere); healed, its
	// boxes run again.
	if err := n3.Cut(); err != nil {
		t.Fatal(err)
	}
	cutAt := time.Now()
	waitFor(t, 90*time.Second, "box "+b3+" to say node down once n3 is cut off", func() bool { return status(b3) == "node down" })
	t.Logf("n3 cut off: box %s node down %s later (%s)", b3, time.Since(cutAt).Round(100*time.Millisecond), nodes()["n3"].Error)
	if got := must("exec", on(local), "--", "echo", "alive"); got != "alive\n" {
		t.Fatalf("a box of the control plane's node while n3 is cut off: %q", got)
	}
	must("new", "--name", "whilecut")
	var wc api.Box
	json.Unmarshal([]byte(must("show", "whilecut", "--json")), &wc)
	if wc.Node == "n3" {
		t.Fatal("a box was placed on n3 while it was cut off")
	}
	// The swarm's heartbeats lapse later than the agent's calls time out.
	// Healed before it has said so, it says so after: n3 is then down
	// again for a few seconds, on the swarm's word (CI: 'server n3 is
	// down' for the pinned box below). The cut lasts until it has.
	waitFor(t, 90*time.Second, "the swarm to say n3 is down once it is cut off", func() bool { return nodes()["n3"].SwarmState == "down" })
	if err := n3.Heal(); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	waitFor(t, 90*time.Second, "box "+b3+" to run again once n3 is healed", func() bool {
		out, err := cli("exec", b3, "--", "cat", "/config/kept")
		return status(b3) == "running" && err == nil && out == "kept-on-n3\n"
	})
	t.Logf("n3 healed: box %s running with its file %s later", b3, time.Since(healed).Round(100*time.Millisecond))
	waitFor(t, 60*time.Second, "n3 to be up once healed", func() bool { return nodes()["n3"].State == "up" })
	if n := containers(b3); n != 1 {
		t.Fatalf("box %s has %d containers once n3 is healed", b3, n)
	}

	// Cut off from the control plane alone (it still reaches n2): the
	// same as cut off from all, and back when the partition is lifted.
	if err := n3.Partition(servers.Host); err != nil {
		t.Fatal(err)
	}
	parted := time.Now()
	waitFor(t, 90*time.Second, "box "+b3+" to say node down once n3 is cut off from the control plane", func() bool { return status(b3) == "node down" })
	t.Logf("n3 cut off from the control plane alone: box %s node down %s later (%s)", b3, time.Since(parted).Round(100*time.Millisecond), nodes()["n3"].Error)
	if out, err := n3.In("timeout", "5", "bash", "-c", "</dev/tcp/"+n2.Addr.String()+"/7443").CombinedOutput(); err != nil {
		t.Fatalf("n3, cut off from the control plane alone, does not reach n2: %v %s", err, out)
	}
	if got := must("exec", on("n2"), "--", "echo", "alive"); got != "alive\n" {
		t.Fatalf("a box of n2 while n3 is cut off from the control plane: %q", got)
	}
	waitFor(t, 90*time.Second, "the swarm to say n3 is down once it is cut off from the control plane", func() bool { return nodes()["n3"].SwarmState == "down" })
	if err := n3.Unpartition(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "box "+b3+" to run again once n3's partition is lifted", func() bool {
		out, err := cli("exec", b3, "--", "cat", "/config/kept")
		return status(b3) == "running" && err == nil && out == "kept-on-n3\n"
	})
	if n := containers(b3); n != 1 {
		t.Fatalf("box %s has %d containers once n3's partition is lifted", b3, n)
	}

	// A box asked for on a server; labels (kept in the swarm); a server
	// that holds boxes is not forgotten.
	must("new", "--name", "pinned", "--node", "n3")
	if n := func() string {
		var b api.Box
		json.Unmarshal([]byte(must("show", "pinned", "--json")), &b)
		return b.Node
	}(); n != "n3" {
		t.Fatalf("a box asked for on n3 is on %q", n)
	}
	// A server's own warm pool: kept on it, beside warm_pool's; a box
	// asked for there is claimed from it (its container is the pool
	// box's, made before the request); 0 keeps none there.
	if out := must("node", "pool", "n3", "small=1"); !strings.Contains(out, "its own pool small=1") {
		t.Fatalf("node pool n3 small=1: %s", out)
	}
	if own := nodes()["n3"].OwnPool; own["small"] != 1 {
		t.Fatalf("n3's own pool in the list: %v", own)
	}
	db, err := d.StateDB()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ownKey string
	waitFor(t, 2*time.Minute, "a ready pool box on n3", func() bool {
		return db.QueryRow(`SELECT key FROM pool WHERE node='n3' AND ready=1`).Scan(&ownKey) == nil
	})
	if out, _ := n3.Docker("ps", "--format", "{{.Names}}"); !strings.Contains(out, ownKey+"\n") {
		t.Fatalf("n3's pool box %s is not on n3's engine:\n%s", ownKey, out)
	}
	must("new", "--name", "fromown", "--node", "n3")
	var engine, onNode string
	if err := db.QueryRow(`SELECT engine, node FROM boxes WHERE name='fromown'`).Scan(&engine, &onNode); err != nil || engine != ownKey || onNode != "n3" {
		t.Fatalf("a box asked for on n3: engine %q on %q (%v), not n3's pool box %s", engine, onNode, err, ownKey)
	}
	// (This paddockd has no warm_pool: every pool box is a server's own.)
	must("node", "pool", "n3", "small=0")
	waitFor(t, time.Minute, "n3's own pool to go", func() bool {
		n := -1
		db.QueryRow(`SELECT count(*) FROM pool`).Scan(&n)
		return n == 0
	})
	must("rm", "--force", "fromown")

	must("node", "label", "n2", "ssd=yes")
	if l := nodes()["n2"].Labels["ssd"]; l != "yes" {
		t.Fatalf("n2's labels after node label: %v", nodes()["n2"].Labels)
	}
	if out, _ := dockerOut("node", "inspect", "--format", `{{index .Spec.Labels "paddock.ssd"}}`, nodes()["n2"].SwarmID); strings.TrimSpace(out) != "yes" {
		t.Fatalf("n2's label in the swarm: %q", out)
	}
	// Placement by labels: a box that asks for ssd=yes goes to n2; one
	// that asks for labels no server has is refused, naming them.
	must("new", "--name", "fast", "--node-label", "ssd=yes")
	var fast api.Box
	json.Unmarshal([]byte(must("show", "fast", "--json")), &fast)
	if fast.Node != "n2" || fast.NodeLabels["ssd"] != "yes" {
		t.Fatalf("a box asking for ssd=yes: on %q, asked %v", fast.Node, fast.NodeLabels)
	}
	if out, err := cli("new", "--name", "nowhere", "--node-label", "gpu=yes"); err == nil || !strings.Contains(out, "no server has the labels gpu=yes") {
		t.Fatalf("a box asking for labels no server has: %v\n%s", err, out)
	}
	// A Boxfile's placement {} does the same.
	bf := filepath.Join(t.TempDir(), "placed")
	os.MkdirAll(bf, 0o755)
	os.WriteFile(filepath.Join(bf, "Boxfile.hcl"), []byte("box \"fastbf\" {\n  placement {\n    labels = { ssd = \"yes\" }\n  }\n}\n"), 0o644)
	must("apply", "--auto-approve", "-f", bf)
	var fastbf api.Box
	json.Unmarshal([]byte(must("show", "fastbf", "--json")), &fastbf)
	if fastbf.Node != "n2" {
		t.Fatalf("a Boxfile's box with placement { labels = { ssd = \"yes\" } } is on %q", fastbf.Node)
	}
	must("rm", "--force", "fastbf")
	if out, err := cli("node", "rm", "n3"); err == nil || !strings.Contains(out, "still holds") {
		t.Fatalf("node rm of a server with boxes: %v\n%s", err, out)
	}

	// Removing a box removes its container from its node.
	must("rm", "--force", b2)
	waitFor(t, 30*time.Second, "the removed box's container to go from n2", func() bool {
		out, err := n2.Docker("ps", "-a", "--format", "{{.Names}}")
		return err == nil && !strings.Contains(out, "-"+b2+"\n")
	})

	// The control plane killed while a box is being made on n2: after the
	// next start the box runs there, once.
	made := make(chan string, 1)
	go func() { out, _ := cli("new", "--name", "midnew", "--node", "n2"); made <- out }()
	waitFor(t, 60*time.Second, "midnew's container on n2", func() bool {
		out, _ := n2.Docker("ps", "-a", "--format", "{{.Names}}")
		return strings.Contains(out, "-midnew\n")
	})
	if err := d.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("paddock new when paddockd was killed: %s", strings.TrimSpace(<-made))
	restarted := time.Now()
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "midnew running after paddockd started again", func() bool { return status("midnew") == "running" })
	t.Logf("midnew ran %s after paddockd started again", time.Since(restarted).Round(100*time.Millisecond))
	if n := containers("midnew"); n != 1 {
		t.Fatalf("midnew has %d containers after paddockd was killed making it", n)
	}
	if got := must("exec", "midnew", "--", "echo", "made"); got != "made\n" {
		t.Fatalf("midnew after the kill: %q", got)
	}

	// Draining a server: nothing new goes there, and its boxes move to
	// the others and run there with their files, once, boxes that share a
	// drive together with it; a box that asks for labels only this server
	// has (ssd=yes) stays, and is named. Undrained, it takes boxes again.
	var all []api.Box
	if err := json.Unmarshal([]byte(must("ls", "--json")), &all); err != nil {
		t.Fatal(err)
	}
	var onN2, stay []string
	for _, b := range all {
		if b.Node != "n2" {
			continue
		}
		var full api.Box
		json.Unmarshal([]byte(must("show", b.Name, "--json")), &full)
		if full.NodeLabels["ssd"] == "yes" {
			stay = append(stay, b.Name)
		} else {
			onN2 = append(onN2, b.Name)
			must("exec", b.Name, "--", "sh", "-c", "echo drained-"+b.Name+" > /config/drained")
		}
	}
	draining := time.Now()
	out, err = cli("node", "drain", "n2")
	t.Logf("drained n2 (%d boxes to move, %d to stay) in %s", len(onN2), len(stay), time.Since(draining).Round(100*time.Millisecond))
	if (err == nil) != (len(stay) == 0) {
		t.Fatalf("node drain n2 with boxes %v that cannot move: %v\n%s", stay, err, out)
	}
	for _, name := range stay {
		if !strings.Contains(out, name+" (") {
			t.Fatalf("the drain does not name %s, which stays:\n%s", name, out)
		}
	}
	for _, name := range onN2 {
		var b api.Box
		json.Unmarshal([]byte(must("show", name, "--json")), &b)
		if b.Node == "n2" || b.Status != "running" {
			t.Fatalf("box %s after n2's drain: on %q, %s\n%s", name, b.Node, b.Status, out)
		}
		if got := must("exec", name, "--", "cat", "/config/drained"); got != "drained-"+name+"\n" {
			t.Fatalf("box %s's file after the drain: %q", name, got)
		}
		if n := containers(name); n != 1 {
			t.Fatalf("box %s has %d containers after the drain", name, n)
		}
		if name == "d1" {
			if got := must("exec", "d1", "--", "cat", "/mnt/data/f"); got != "shared\n" {
				t.Fatalf("d1's drive after the drain: %q", got)
			}
		}
	}
	if !nodes()["n2"].Drained {
		t.Fatal("paddock nodes does not say n2 is drained")
	}
	if out, err := cli("new", "--name", "ondrained", "--node", "n2"); err == nil || !strings.Contains(out, "drained") {
		t.Fatalf("a box asked for on a drained server: %v\n%s", err, out)
	}
	must("node", "undrain", "n2")
	must("new", "--name", "undrained", "--node", "n2")

	// Removing a server once it holds nothing: its agent leaves the
	// swarm, forgets its join and ends with the status its unit does not
	// restart; the swarm and Paddock forget it; and it joins again with a
	// new token, as a new server would.
	// A drive moves by itself too, with the boxes that mount it named.
	var ds []api.Drive
	json.Unmarshal([]byte(must("drive", "ls", "--json")), &ds)
	for _, x := range ds {
		if x.Node == "n3" {
			if out, err := cli("drive", "move", x.Name, "--to", "n2"); err == nil || !strings.Contains(out, "which is not moving") {
				t.Fatalf("drive move of %s without the boxes that mount it: %v\n%s", x.Name, err, out)
			}
			moving := time.Now()
			must("drive", "move", x.Name, "--to", "n2", "--with", strings.Join(x.UsedBy, ","))
			t.Logf("drive %s moved from n3 to n2 with %v in %s", x.Name, x.UsedBy, time.Since(moving).Round(100*time.Millisecond))
			if got := must("exec", "d1", "--", "cat", "/mnt/data/f"); got != "shared\n" {
				t.Fatalf("d1's drive after it moved to n2: %q", got)
			}
		}
	}
	if err := json.Unmarshal([]byte(must("ls", "--json")), &all); err != nil {
		t.Fatal(err)
	}
	for _, b := range all {
		if b.Node == "n3" {
			must("rm", "--force", b.Name)
		}
	}
	must("node", "rm", "n3")
	code, ended := n3.AgentExit(30 * time.Second)
	if !ended || code != units.ExitRemoved {
		b, _ := os.ReadFile(n3.AgentLog())
		t.Fatalf("n3's agent after node rm: ended %v, status %d (want %d)\n%s", ended, code, units.ExitRemoved, b)
	}
	if out, _ := n3.Docker("info", "--format", "{{.Swarm.LocalNodeState}}"); strings.TrimSpace(out) != "inactive" {
		t.Fatalf("n3's engine after node rm is in a swarm: %q", out)
	}
	if _, ok := swarmSays()[n3.Addr.String()]; ok {
		t.Fatalf("the swarm still lists n3 after node rm: %v", swarmSays())
	}
	if _, ok := nodes()["n3"]; ok {
		t.Fatal("paddock nodes lists n3 after node rm")
	}
	if _, err := os.Stat(filepath.Join(n3.StateDir(), "node")); !os.IsNotExist(err) {
		t.Fatalf("n3 kept its join after node rm: %v", err)
	}
	if err := n3.StartAgent(bins.Paddockd, agentEnv, agentArgs(join(), n3)...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "n3 to join again", func() bool { return nodes()["n3"].State == "up" })
	must("new", "--name", "back", "--node", "n3")
	if got := must("exec", "back", "--", "echo", "back"); got != "back\n" {
		t.Fatalf("a box on n3 after it joined again: %q", got)
	}

	// A server whose engine is in another swarm is refused before its
	// token is spent: out of that swarm, the same token lets it in.
	if out, err := n4.Docker("swarm", "init", "--advertise-addr", n4.Addr.String(), "--listen-addr", n4.Addr.String()+":2377"); err != nil {
		t.Fatalf("a swarm of n4's own: %v\n%s", err, out)
	}
	j4 := join()
	if err := n4.StartAgent(bins.Paddockd, agentEnv, agentArgs(j4, n4)...); err != nil {
		t.Fatal(err)
	}
	if code, ok := n4.AgentExit(60 * time.Second); !ok || code == 0 {
		t.Fatalf("n4's join from an engine in another swarm: ended %v, status %d", ok, code)
	}
	if b, _ := os.ReadFile(n4.AgentLog()); !strings.Contains(string(b), "in a swarm already") {
		t.Fatalf("n4's join from an engine in another swarm:\n%s", b)
	}
	if out, err := n4.Docker("swarm", "leave", "--force"); err != nil {
		t.Fatalf("n4 leaving its own swarm: %v\n%s", err, out)
	}
	if err := n4.StartAgent(bins.Paddockd, agentEnv, agentArgs(j4, n4)...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "n4 to join with the same token", func() bool { return nodes()["n4"].State == "up" })
	must("node", "rm", "n4")
	if code, ended := n4.AgentExit(30 * time.Second); !ended || code != units.ExitRemoved {
		t.Fatalf("n4's agent after node rm: ended %v, status %d", ended, code)
	}

	t.Run("StartElsewhere", func(t *testing.T) { testStartElsewhere(t, d, cli, nodes, n2, agentEnv) })
	t.Run("NodeLost", func(t *testing.T) { testNodeLost(t, d, cli, nodes, n3) })
}

// testStartElsewhere stops server sv's agent (the server is down, its
// box runs on) and starts its box "elsewhere" on the control plane's
// server ('paddock start --node') from its last shipped snapshot: the
// files from before are there, the one from after is not, its note says
// so. Once sv's agent is back, the box's old container there is removed:
// it does not run twice.
func testStartElsewhere(t *testing.T, d *harness.Daemon, cli func(...string) (string, error), nodes func() map[string]api.Node, sv *harness.Server, agentEnv []string) {
	ctx := context.Background()
	c := d.Client()
	must := mustOf(t, cli)
	local := ""
	for name, n := range nodes() {
		if n.ControlPlane {
			local = name
		}
	}
	must("new", "--name", "elsewhere", "--node", sv.Name)
	must("exec", "elsewhere", "--", "sh", "-c", "echo before > ~/before.txt")
	sn, err := c.Snapshot(ctx, "elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "elsewhere's snapshot to ship", func() bool {
		sns, err := c.Snapshots(ctx, "elsewhere")
		return err == nil && slices.ContainsFunc(sns, func(x api.Snapshot) bool { return x.ID == sn.ID && x.Shipped == "shipped" })
	})
	must("exec", "elsewhere", "--", "sh", "-c", "echo after > ~/after.txt")
	// Its server answers: 'paddock move' is the way, with every file.
	if out, err := cli("start", "elsewhere", "--node", local); err == nil || !strings.Contains(out, "answers") {
		t.Fatalf("start --node while its server answers: %v\n%s", err, out)
	}
	oldContainer := func() string {
		out, err := sv.Docker("ps", "-aq", "--filter", "label="+docker.LabelBox+"=elsewhere")
		if err != nil {
			t.Fatalf("docker ps on %s: %v\n%s", sv.Name, err, out)
		}
		return strings.TrimSpace(out)
	}
	if oldContainer() == "" {
		t.Fatalf("no container of elsewhere on %s", sv.Name)
	}
	sv.KillAgent()
	waitFor(t, 60*time.Second, sv.Name+" to be down", func() bool { return nodes()[sv.Name].State == "down" })
	out := must("start", "elsewhere", "--node", local)
	t.Logf("start elsewhere --node %s:\n%s", local, out)
	var b api.Box
	waitFor(t, 5*time.Minute, "elsewhere to run on "+local, func() bool {
		out, err := cli("show", "elsewhere", "--json")
		return err == nil && json.Unmarshal([]byte(out), &b) == nil && b.Status == "running" && b.Node == local
	})
	if !strings.Contains(b.Note, "was down") || !strings.Contains(b.Note, sn.ID) {
		t.Fatalf("elsewhere's note: %q", b.Note)
	}
	if got := must("exec", "elsewhere", "--", "sh", "-c", "cat ~/before.txt; test -e ~/after.txt && echo after is there; true"); got != "before\n" {
		t.Fatalf("elsewhere on %s: %q (want its snapshot's files only)", local, got)
	}
	if err := sv.StartAgent(bins.Paddockd, agentEnv); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, sv.Name+" up again", func() bool { return nodes()[sv.Name].State == "up" })
	waitFor(t, 60*time.Second, "elsewhere's old container on "+sv.Name+" to be removed", func() bool { return oldContainer() == "" })
	if b, err := c.Box(ctx, "elsewhere"); err != nil || b.Status != "running" || b.Node != local {
		t.Fatalf("elsewhere after %s came back: %+v %v", sv.Name, b, err)
	}
}

// testNodeLost loses server sv for good (engine and agent killed, its
// disk removed) holding box "far", with files written before and after
// its last shipped snapshot, and drive "fardata". The owner says so
// ('paddock node lost'), and far is made again on another server from
// that snapshot, fetched from the object store: the files from before
// are there (a blob checked by its sha256), the file from after is not,
// and its note, like the command's answer, names the snapshot, its time
// and the drive as lost. The server is forgotten.
func testNodeLost(t *testing.T, d *harness.Daemon, cli func(...string) (string, error), nodes func() map[string]api.Node, sv *harness.Server) {
	ctx := context.Background()
	c := d.Client()
	must := mustOf(t, cli)
	dr, err := c.CreateDrive(ctx, "fardata")
	if err != nil {
		t.Fatal(err)
	}
	if dr.Node != sv.Name {
		must("drive", "move", "fardata", "--to", sv.Name)
	}
	must("new", "--name", "far", "--drive", "fardata:/mnt/far")
	var fb api.Box
	if err := json.Unmarshal([]byte(must("show", "far", "--json")), &fb); err != nil || fb.Node != sv.Name {
		t.Fatalf("far is on %q (%v), not on %s with its drive", fb.Node, err, sv.Name)
	}
	must("exec", "far", "--", "sh", "-c", "echo before > ~/before.txt && head -c 3000000 /dev/urandom > ~/blob && sha256sum ~/blob > ~/blob.sum && echo on-drive > /mnt/far/f")
	sn, err := c.Snapshot(ctx, "far")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "far's snapshot to ship", func() bool {
		sns, err := c.Snapshots(ctx, "far")
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range sns {
			if x.ID == sn.ID {
				return x.Shipped == "shipped"
			}
		}
		t.Fatalf("snapshot %s is gone", sn.ID)
		return false
	})
	must("exec", "far", "--", "sh", "-c", "echo after > ~/after.txt")

	// A server that answers is not lost.
	if out, err := cli("node", "lost", sv.Name); err == nil || !strings.Contains(out, "answers") {
		t.Fatalf("node lost on a server that answers: %v\n%s", err, out)
	}
	if err := sv.Destroy(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, sv.Name+" to be down", func() bool { return nodes()[sv.Name].State == "down" })
	out := must("node", "lost", sv.Name)
	t.Logf("node lost %s:\n%s", sv.Name, out)
	for _, want := range []string{"far: made again on ", "from snapshot " + sn.ID, "what it wrote after snapshot " + sn.ID, "drive fardata: declared again on", "drive(s) fardata"} {
		if !strings.Contains(out, want) {
			t.Fatalf("node lost does not say %q:\n%s", want, out)
		}
	}
	if _, ok := nodes()[sv.Name]; ok {
		t.Fatalf("paddock nodes lists %s after node lost", sv.Name)
	}
	var b api.Box
	waitFor(t, 5*time.Minute, "far to run on another server", func() bool {
		out, err := cli("show", "far", "--json")
		if err != nil || json.Unmarshal([]byte(out), &b) != nil {
			return false
		}
		return b.Status == "running"
	})
	if b.Node == sv.Name {
		t.Fatalf("far runs on the lost server %s", sv.Name)
	}
	if !strings.Contains(b.Note, "declared lost") || !strings.Contains(b.Note, sn.ID) || !strings.Contains(b.Note, "fardata") {
		t.Fatalf("far's note does not say what is lost: %q", b.Note)
	}
	got := must("exec", "far", "--", "sh", "-c", "cat ~/before.txt; sha256sum -c ~/blob.sum >/dev/null && echo blob ok; test -e ~/after.txt && echo after is there; ls -A /mnt/far")
	if got != "before\nblob ok\n" {
		t.Fatalf("far on %s after its server was lost: %q (want the files of its snapshot, not after.txt, and an empty drive)", b.Node, got)
	}
}

// testDriveMoves moves boxes d1 and d2, which share drive "data", from
// server from to another: alone, d1 is refused and nothing moves; the
// control plane killed in the middle of the move leaves each box and the
// drive whole on one server, once, with its data (the move finished or
// undone at the next start); then the move goes through. engines are
// the nodes' engines by name ("": the control plane's, which any other
// name is).
func testDriveMoves(t *testing.T, d *harness.Daemon, cli func(...string) (string, error), must func(...string) string, from string, engines map[string]func(...string) (string, error)) {
	t.Helper()
	engine := func(node string) func(...string) (string, error) {
		if e, ok := engines[node]; ok {
			return e
		}
		return engines[""]
	}
	to := "n3"
	if from == "n3" {
		to = "n2"
	}
	where := func() (d1, d2, drive string) {
		var b1, b2 api.Box
		json.Unmarshal([]byte(must("show", "d1", "--json")), &b1)
		json.Unmarshal([]byte(must("show", "d2", "--json")), &b2)
		var ds []api.Drive
		json.Unmarshal([]byte(must("drive", "ls", "--json")), &ds)
		for _, x := range ds {
			if x.Name == "data" {
				drive = x.Node
			}
		}
		return b1.Node, b2.Node, drive
	}
	volume := d.Instance + "-drive-data"
	// whole checks that the boxes and the drive are on one server, once
	// each, running, with the drive's data, and nothing of them on the
	// other.
	whole := func(when string) string {
		t.Helper()
		n1, n2, nd := where()
		if n1 != n2 || n1 != nd {
			t.Fatalf("%s: d1 on %q, d2 on %q, the drive on %q", when, n1, n2, nd)
		}
		other := from
		if nd == from {
			other = to
		}
		for _, box := range []string{"d1", "d2"} {
			waitFor(t, 90*time.Second, box+" running "+when, func() bool {
				var b api.Box
				out, err := cli("show", box, "--json")
				return err == nil && json.Unmarshal([]byte(out), &b) == nil && b.Status == "running"
			})
			if out, _ := engine(other)("ps", "-a", "--format", "{{.Names}}"); strings.Contains(out, "-"+box+"\n") {
				t.Fatalf("%s: %s has a container on %s too: %q", when, box, other, out)
			}
			if out, _ := engine(nd)("ps", "--format", "{{.Names}}"); strings.Count(out, "-"+box+"\n") != 1 {
				t.Fatalf("%s: %s does not run once on %s: %q", when, box, nd, out)
			}
		}
		if out, _ := engine(other)("volume", "ls", "-q"); strings.Contains(out, volume+"\n") || strings.Contains(out, "-d1\n") || strings.Contains(out, "-d2\n") {
			t.Fatalf("%s: %s keeps volumes of what is on %s: %q", when, other, nd, out)
		}
		if got := must("exec", "d2", "--", "sh", "-c", "cat /mnt/data/f; wc -c < /mnt/data/big"); got != "shared\n400000000\n" {
			t.Fatalf("%s: the drive seen from d2: %q", when, got)
		}
		return nd
	}
	if out, err := cli("move", "d1", "--to", to); err == nil || !strings.Contains(out, `mounted by box "d2" too`) || !strings.Contains(out, "paddock move d1 d2 --to "+to) {
		t.Fatalf("moving d1 alone, while d2 mounts its drive: %v\n%s", err, out)
	}
	must("exec", "d1", "--", "sh", "-c", "head -c 400000000 /dev/zero > /mnt/data/big")
	whole("after a move refused")

	// The control plane killed while the drive is on its way.
	moved := make(chan string, 1)
	go func() { out, _ := cli("move", "d1", "d2", "--to", to); moved <- out }()
	waitFor(t, 120*time.Second, "the drive's volume made on "+to, func() bool {
		out, _ := engine(to)("volume", "ls", "-q")
		return strings.Contains(out, volume+"\n")
	})
	if err := d.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("the move when paddockd was killed: %s", strings.TrimSpace(<-moved))
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	after := whole("after paddockd was killed mid-move and started again")
	t.Logf("the move cut off by the kill was %s", map[bool]string{true: "undone", false: "finished"}[after == from])

	// The move, whole.
	if after == from {
		moving := time.Now()
		must("move", "d1", "d2", "--to", to)
		t.Logf("d1 and d2 with their 400 MB drive moved to %s in %s", to, time.Since(moving).Round(100*time.Millisecond))
	}
	if got := whole("after the move"); got != to {
		t.Fatalf("after the move, d1 and d2 are on %s, not %s", got, to)
	}

	// The control plane killed once a move has switched (the state has
	// the boxes on the other server, the move's record is not gone yet):
	// the next start finishes it (the copies left on the old server go,
	// the boxes start). The kill waits for the switch in the state: the
	// window is the old copies' removal and the boxes' start, seconds;
	// a move that ended before the test saw it is tried again.
	db, err := d.StateDB()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stored := from // as the state names the server: the control plane's is ""
	if _, ok := engines[from]; !ok || from == "" {
		stored = ""
	}
	logBefore, _ := os.ReadFile(d.LogPath())
	for attempt := 1; ; attempt++ {
		moved := make(chan string, 1)
		go func() { out, _ := cli("move", "d1", "d2", "--to", from); moved <- out }()
		switched := false
		waitFor(t, 5*time.Minute, "the move back to "+from+" to switch", func() bool {
			var node string
			var moves int
			if db.QueryRow(`SELECT node, (SELECT count(*) FROM moves) FROM boxes WHERE name='d1'`).Scan(&node, &moves) != nil || node != stored {
				return false
			}
			switched = moves > 0
			return true
		})
		if switched {
			if err := d.Kill(); err != nil {
				t.Fatal(err)
			}
			t.Logf("the move when paddockd was killed after its switch: %s", strings.TrimSpace(<-moved))
			if err := d.Start(); err != nil {
				t.Fatal(err)
			}
			break
		}
		t.Logf("the move back ended before the test saw its switch: %s", strings.TrimSpace(<-moved))
		if attempt == 3 {
			t.Fatal("three moves ended before the test saw one switched")
		}
		must("move", "d1", "d2", "--to", to)
	}
	if got := whole("after paddockd was killed after a move's switch"); got != from {
		t.Fatalf("a move killed after its switch is on %s, not %s: it was not finished", got, from)
	}
	waitFor(t, 60*time.Second, "the log to say the switched move was finished", func() bool {
		b, _ := os.ReadFile(d.LogPath())
		return strings.Contains(strings.TrimPrefix(string(b), string(logBefore)), "finished=true")
	})
}

// testNodeAttacks runs the attack suite's spoof and inbound attacks
// against boxes on sv, a server that is not the control plane's (the
// metadata one is TestCluster's reach check): a deny-all box's root
// forges an allow-all box's address (raw IP, and whole frames with its
// MAC) to get out under the other's policy; and this machine, given a
// route to sv's box network, opens a connection to a box's service, and so
// does another node's host (other). The forging tool is spoof.txtar's own. Positive controls: the allow-all
// box's own forged packets arrive; sv itself reaches the service.
func testNodeAttacks(t *testing.T, must func(...string) string, sv, other *harness.Server, instance string) {
	t.Helper()
	ar, err := txtar.ParseFile("testdata/attacks/spoof.txtar")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	forge := filepath.Join(dir, "forge.py")
	for _, f := range ar.Files {
		if f.Name == "forge.py" {
			os.WriteFile(forge, f.Data, 0o644)
		}
	}
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	must("new", "--name", "open3", "--node", sv.Name)
	must("new", "--name", "shut3", "--node", sv.Name, "--policy", "deny-all")
	type boxNet struct{ pid, ip, mac string }
	netOf := func(box string) boxNet {
		out, err := sv.Docker("inspect", "-f", "{{.State.Pid}} {{range .NetworkSettings.Networks}}{{.IPAddress}} {{.MacAddress}}{{end}}", instance+"-"+box)
		f := strings.Fields(out)
		if err != nil || len(f) != 3 {
			t.Fatalf("box %s on %s: %v %q", box, sv.Name, err, out)
		}
		return boxNet{f[0], f[1], f[2]}
	}
	open, shut := netOf("open3"), netOf("shut3")
	// The box network's bridge on sv: the link that holds the gateway.
	gw := open.ip[:strings.LastIndex(open.ip, ".")] + ".1"
	var bridgeMAC string
	for _, line := range strings.Split(run("ip", "-n", sv.NS, "-o", "-4", "addr", "show"), "\n") {
		if f := strings.Fields(line); len(f) > 3 && strings.HasPrefix(f[3], gw+"/") {
			link := strings.Fields(run("ip", "-n", sv.NS, "-o", "link", "show", f[1]))
			for i, w := range link {
				if w == "link/ether" && i+1 < len(link) {
					bridgeMAC = link[i+1]
				}
			}
		}
	}
	if bridgeMAC == "" {
		t.Fatalf("no bridge with %s on %s", gw, sv.Name)
	}
	spy := `table inet spynode
delete table inet spynode
table inet spynode {
	chain in {
		type filter hook prerouting priority -300; policy accept;
		udp dport 9881 counter
		tcp dport 9882 counter
		udp dport 9891 counter
		tcp dport 9892 counter
		udp dport 9893 counter
		udp dport 9899 counter
	}
}
`
	os.WriteFile(filepath.Join(dir, "spy.nft"), []byte(spy), 0o644)
	run("ip", "netns", "exec", "pdk-inet", "nft", "-f", filepath.Join(dir, "spy.nft"))
	defer exec.Command("ip", "netns", "exec", "pdk-inet", "nft", "delete", "table", "inet", "spynode").Run()
	in := func(b boxNet, args ...string) {
		run("nsenter", append([]string{"-t", b.pid, "-n", "python3", forge}, args...)...)
	}
	in(open, "udp", open.ip, "198.18.0.10", "9881")
	in(open, "tcp", open.ip, "198.18.0.10", "9882")
	in(shut, "udp", open.ip, "198.18.0.10", "9891")
	in(shut, "tcp", open.ip, "198.18.0.10", "9892")
	in(shut, "frame", open.mac, bridgeMAC, open.ip, "198.18.0.10", "9893")
	// A last control, sent after the forged packets along their path:
	// once it has arrived, they have had their chance.
	in(open, "udp", open.ip, "198.18.0.10", "9899")
	var counts string
	arrived := regexp.MustCompile(`udp dport 9881 counter packets [1-9][\s\S]*tcp dport 9882 counter packets [1-9][\s\S]*udp dport 9899 counter packets [1-9]`)
	waitFor(t, 30*time.Second, "the allow-all box's own packets in the test internet", func() bool {
		counts = run("ip", "netns", "exec", "pdk-inet", "nft", "list", "table", "inet", "spynode")
		return arrived.MatchString(counts)
	})
	for _, want := range []string{`udp dport 9891 counter packets 0 `, `tcp dport 9892 counter packets 0 `, `udp dport 9893 counter packets 0 `} {
		if !regexp.MustCompile(want).MatchString(counts) {
			t.Fatalf("spoofing on %s: no %q in what the test internet counted:\n%s", sv.Name, want, counts)
		}
	}
	spoofs := regexp.MustCompile(`counter packets ([0-9]+) bytes [0-9]+ drop comment "box=shut3 kind=spoof"`).FindStringSubmatch(run("ip", "netns", "exec", sv.NS, "nft", "list", "ruleset"))
	if spoofs == nil || spoofs[1] == "0" {
		t.Fatalf("no spoof drops counted for shut3 on %s", sv.Name)
	}
	t.Logf("spoofing from a deny-all box on %s: %s frames dropped at its port, none arrived; the allow-all box's own did", sv.Name, spoofs[1])

	// Inbound: only the box's own server reaches its service.
	if out, err := exec.Command("ip", "netns", "exec", sv.NS, "true").CombinedOutput(); err != nil {
		t.Fatalf("%s's namespace: %v %s", sv.Name, err, out)
	}
	must("exec", "--detach", "open3", "--", "busybox", "httpd", "-f", "-p", "8081", "-h", "/etc")
	url := "http://" + open.ip + ":8081/hostname"
	waitFor(t, 30*time.Second, "open3's service from "+sv.Name, func() bool {
		return exec.Command("ip", "netns", "exec", sv.NS, "curl", "-sS", "-m", "2", "-o", "/dev/null", url).Run() == nil
	})
	subnet := open.ip[:strings.LastIndex(open.ip, ".")] + ".0/24"
	run("ip", "route", "add", subnet, "via", sv.Addr.String())
	defer exec.Command("ip", "route", "del", subnet, "via", sv.Addr.String()).Run()
	if out, err := exec.Command("curl", "-sS", "-m", "3", url).CombinedOutput(); err == nil {
		t.Fatalf("this machine, another server, reached a service of a box on %s: %s", sv.Name, out)
	}
	inbound := regexp.MustCompile(`counter packets ([0-9]+) bytes [0-9]+ drop comment "box=\* kind=inbound"`).FindStringSubmatch(run("ip", "netns", "exec", sv.NS, "nft", "list", "ruleset"))
	if inbound == nil || inbound[1] == "0" {
		t.Fatalf("the connection from another server to a box on %s was not dropped as inbound:\n%v", sv.Name, inbound)
	}
	t.Logf("inbound to a box on %s from another server: refused, %s packets dropped as inbound", sv.Name, inbound[1])

	// Another node's host (not its boxes), given a route to sv's box
	// network through sv, reaches no box there either: a node taken over
	// reaches no further than its own boxes.
	t.Run("AttackAnotherNodesHostRoutesIn", func(t *testing.T) {
		in := func(args ...string) (string, error) {
			out, err := exec.Command("ip", append([]string{"netns", "exec", other.NS}, args...)...).CombinedOutput()
			return string(out), err
		}
		if out, err := in("ip", "route", "add", subnet, "via", sv.Addr.String()); err != nil {
			t.Fatalf("a route on %s: %v %s", other.Name, err, out)
		}
		defer in("ip", "route", "del", subnet, "via", sv.Addr.String())
		before := inboundDrops(t, sv)
		if out, err := in("curl", "-sS", "-m", "3", url); err == nil {
			t.Fatalf("%s's host reached a service of a box on %s: %s", other.Name, sv.Name, out)
		}
		if after := inboundDrops(t, sv); after <= before {
			t.Fatalf("the connection from %s's host to a box on %s was not dropped as inbound (%d, was %d)", other.Name, sv.Name, after, before)
		}
	})
	must("rm", "--force", "open3", "shut3")
}

// inboundDrops is what sv's rules counted as inbound to its boxes.
func inboundDrops(t *testing.T, sv *harness.Server) int {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", sv.NS, "nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft on %s: %v %s", sv.Name, err, out)
	}
	m := regexp.MustCompile(`counter packets ([0-9]+) bytes [0-9]+ drop comment "box=\* kind=inbound"`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no inbound counter on %s", sv.Name)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
