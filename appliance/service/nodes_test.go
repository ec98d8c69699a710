package service

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/cluster"
	"github.com/paddock-dev/paddock/appliance/driver/docker"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
	"github.com/paddock-dev/paddock/appliance/node"
	"github.com/paddock-dev/paddock/appliance/nodes"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/policies"
)

// fakeNode is a node whose engine is the fake driver, and which says it
// has 8 GiB, or does not answer (down).
type fakeNode struct {
	*fake.Driver
	down bool
	// claims, when set, is what it says it has instead.
	claims *node.Info
}

func (f *fakeNode) Info(context.Context) (node.Info, error) {
	if f.down {
		return node.Info{}, errors.New("no answer")
	}
	if f.claims != nil {
		return *f.claims, nil
	}
	return node.Info{CPUs: 4, MemoryBytes: 8 << 30}, nil
}

// clustered is a service over three nodes of the same size: its own
// ("") and n2, n3, joined through the store.
func clustered(t *testing.T) (*Service, map[string]*fakeNode) {
	t.Helper()
	s, _ := newService(t)
	nodes := map[string]*fakeNode{}
	cd := &cluster.Driver{Where: func(kind, name string) (string, error) {
		n, err := s.Store.Where(kind, name)
		if errors.Is(err, store.ErrNotFound) {
			return "", driver.ErrNotFound
		}
		return n, err
	}}
	var err error
	if s.Net, err = policies.NetworkFor("t", "10.213.0.0/24"); err != nil {
		t.Fatal(err)
	}
	for i, n := range []string{"", "n2", "n3"} {
		nodes[n] = &fakeNode{Driver: fake.New("img", "img2")}
		cd.SetNode(n, nodes[n])
		if n == "" {
			continue
		}
		if err := s.Store.AddJoinToken(n, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.Store.JoinNode(n, store.Node{Name: n, Addr: "127.0.1." + string(rune('0'+i)) + ":7443", Subnet: "10.214." + string(rune('0'+i)) + ".0/24", Joined: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	s.Driver, s.Rec.Driver = cd, cd
	s.Cluster = &node.Cluster{Driver: cd, Firewall: &cluster.Firewall{}, Name: "cp",
		Local: func(ctx context.Context) (node.Info, error) { return nodes[""].Info(ctx) }}
	s.LookAtNodes(context.Background())
	return s, nodes
}

// servers is the servers' verbs (package nodes) over s, which also
// moves s's forks onto other servers.
func servers(s *Service) *nodes.Nodes {
	n := nodes.New(s, s.Store, s.Rec, s.Cluster, s.Net.Subnet, &s.Cfg, s.Log)
	s.Moves = n
	return n
}

func nodeOf(t *testing.T, s *Service, box string) string {
	t.Helper()
	b, err := s.Store.GetBox(box)
	if err != nil {
		t.Fatal(err)
	}
	return b.Node
}

// Boxes spread over nodes of the same size; each is made on its node's
// engine, with an address of its node's network. A fork is made where its
// snapshot is, and boxes that mount a drive where the drive is. A node
// that does not answer gets no new box.
func TestPlacement(t *testing.T) {
	s, nodes := clustered(t)
	ctx := context.Background()
	per := map[string]int{}
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		b, err := s.CreateBox(ctx, api.BoxPost{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		n := nodeOf(t, s, name)
		per[n]++
		wantNet := s.Net.Subnet.String()
		if n != "" {
			nd, _ := s.Store.GetNode(n)
			wantNet = nd.Subnet
		}
		if !strings.HasPrefix(b.IP, strings.TrimSuffix(wantNet, "0/24")) {
			t.Errorf("box %s on node %q has address %s, not of %s", name, n, b.IP, wantNet)
		}
		bs, _ := nodes[n].Boxes(ctx)
		found := false
		for _, x := range bs {
			found = found || x.Name == name
		}
		if !found {
			t.Errorf("box %s is not on its node %q's engine", name, n)
		}
	}
	if per[""] != 2 || per["n2"] != 2 || per["n3"] != 2 {
		t.Fatalf("six boxes on three equal nodes: %v", per)
	}

	// A fork goes where its source's snapshot is.
	var src string
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		if nodeOf(t, s, name) == "n3" {
			src = name
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Fork(ctx, src, api.ForkPost{Name: "fk"})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a fork in a cluster did not end in 30 s")
	}
	if n := nodeOf(t, s, "fk"); n != "n3" {
		t.Fatalf("the fork of a box on n3 is on %q", n)
	}

	// Drives: boxes that mount one go where it is.
	if _, err := drivesOf(s).Create(ctx, api.DrivePost{Name: "d1"}); err != nil {
		t.Fatal(err)
	}
	d1, _ := s.Store.ListDrives()
	for i, name := range []string{"m1", "m2"} {
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name, Mounts: []api.Mount{{Drive: "d1", Path: "/mnt/d"}}}); err != nil {
			t.Fatal(err)
		}
		if n := nodeOf(t, s, name); n != d1[0].Node {
			t.Fatalf("box %d that mounts d1 (on %q) is on %q", i, d1[0].Node, n)
		}
	}
	// Two drives on two nodes: no box may mount both.
	if err := s.Store.Declare(func(tx *store.Tx) error {
		other := "n2"
		if d1[0].Node == "n2" {
			other = "n3"
		}
		return tx.CreateDrive(store.Drive{Name: "d2", State: "ready", Created: time.Now(), Node: other})
	}); err != nil {
		t.Fatal(err)
	}
	_, err := s.CreateBox(ctx, api.BoxPost{Name: "both", Mounts: []api.Mount{{Drive: "d1", Path: "/mnt/1"}, {Drive: "d2", Path: "/mnt/2"}}})
	if err == nil || !strings.Contains(err.Error(), "two servers") {
		t.Fatalf("a box mounting drives on two nodes: %v", err)
	}

	// A node that does not answer gets nothing new.
	nodes["n2"].down = true
	s.LookAtNodes(ctx)
	for i := range 4 {
		name := "late" + string(rune('0'+i))
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name}); err != nil {
			t.Fatal(err)
		}
		if n := nodeOf(t, s, name); n == "n2" {
			t.Fatalf("box %s was placed on n2, which is down", name)
		}
	}
}

// A box asked for on a server goes there, if the server is up and holds
// its data; a server that holds nothing may be forgotten, one that holds
// anything may not.
func TestNodeChosenAndRemoved(t *testing.T) {
	s, _ := clustered(t)
	ctx := context.Background()
	for _, c := range []struct{ want, node string }{{"n3", "n3"}, {"cp", ""}, {"n2", "n2"}} {
		name := "on-" + c.want
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name, Node: c.want}); err != nil {
			t.Fatal(err)
		}
		if n := nodeOf(t, s, name); n != c.node {
			t.Fatalf("a box asked for on %s is on %q", c.want, n)
		}
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "x", Node: "nope"}); err == nil || !strings.Contains(err.Error(), "cp, n2, n3") {
		t.Fatalf("a server that is not there: %v", err)
	}
	if err := s.Store.Declare(func(tx *store.Tx) error {
		return tx.CreateDrive(store.Drive{Name: "d", State: "ready", Created: time.Now(), Node: "n2"})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "y", Node: "n3", Mounts: []api.Mount{{Drive: "d", Path: "/mnt/d"}}}); err == nil || !strings.Contains(err.Error(), "on n2") {
		t.Fatalf("a box on n3 with a drive of n2: %v", err)
	}
	// Buckets are mounted by the control plane's server only: a box that
	// mounts one goes there, and is refused elsewhere.
	bk := []api.BucketMount{{URL: "s3://team-data", To: "/data", Secret: "K"}}
	for i := range 3 {
		name := "bk" + string(rune('0'+i))
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name, Buckets: bk}); err != nil {
			t.Fatal(err)
		}
		if n := nodeOf(t, s, name); n != "" {
			t.Fatalf("a box mounting a bucket is on %q", n)
		}
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "bkn", Node: "n2", Buckets: bk}); err == nil || !strings.Contains(err.Error(), "buckets") {
		t.Fatalf("a box mounting a bucket asked for on n2: %v", err)
	}

	if err := servers(s).Remove(ctx, "n3"); err == nil || !strings.Contains(err.Error(), "1 box") {
		t.Fatalf("removing a server that holds a box: %v", err)
	}
	if err := s.RemoveBox(ctx, "on-n3"); err != nil {
		t.Fatal(err)
	}
	waitTomb(t, s)
	if err := servers(s).Remove(ctx, "n3"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "z", Node: "n3"}); err == nil {
		t.Fatal("a box was made on a removed server")
	}
	for i := range 3 {
		name := "after" + string(rune('0'+i))
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name}); err != nil {
			t.Fatal(err)
		}
		if n := nodeOf(t, s, name); n == "n3" {
			t.Fatalf("box %s placed on a removed server", name)
		}
	}
}

// waitTomb runs the reconciler until no removed box holds its name.
func waitTomb(t *testing.T, s *Service) {
	t.Helper()
	for range 20 {
		if _, err := s.Rec.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if ts, _ := s.Store.ListTombstones(); len(ts) == 0 {
			return
		}
	}
	t.Fatal("the removed box's tombstone stayed")
}

// fakeSwarm is the swarm as a manager's engine tells it.
type fakeSwarm struct {
	managed  int
	nodes    []docker.SwarmNode
	token    string
	rotated  int
	labelled map[string]map[string]string
	removed  []string
}

func (f *fakeSwarm) SwarmManage(ctx context.Context, ip string) (string, string, error) {
	f.managed++
	return "swarm1", ip + ":2377", nil
}
func (f *fakeSwarm) SwarmWorkerToken(ctx context.Context, rotate bool) (string, error) {
	if rotate {
		f.rotated++
	}
	return fmt.Sprintf("%s-%d", f.token, f.rotated), nil
}
func (f *fakeSwarm) SwarmNodes(ctx context.Context) ([]docker.SwarmNode, error) {
	return slices.Clone(f.nodes), nil
}
func (f *fakeSwarm) SwarmLabel(ctx context.Context, id string, labels map[string]string) error {
	f.labelled[id] = labels
	return nil
}
func (f *fakeSwarm) SwarmRemove(ctx context.Context, id string) error {
	f.removed = append(f.removed, id)
	return nil
}

// A new box goes to the server with the most memory not yet promised to
// its boxes, and among equals to the one with the most CPUs so promised.
func TestPlacementByMemoryThenCPUs(t *testing.T) {
	s, nodes := clustered(t)
	ctx := context.Background()
	nodes["n2"].claims = &node.Info{CPUs: 8, MemoryBytes: 8 << 30}
	nodes["n3"].claims = &node.Info{CPUs: 2, MemoryBytes: 8 << 30}
	s.LookAtNodes(ctx)
	var got []string
	for _, name := range []string{"first", "second", "third"} {
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name}); err != nil {
			t.Fatal(err)
		}
		got = append(got, nodeOf(t, s, name))
	}
	// Equal memory: n2's 8 CPUs. Then n2 has 2 GiB promised: of the
	// two with 8 GiB, the control plane's 4 CPUs over n3's 2. Then n3,
	// the one left with all its memory.
	if want := []string{"n2", "", "n3"}; !slices.Equal(got, want) {
		t.Fatalf("three boxes went to %q, want %q", got, want)
	}
}

// A node that says it has far more than it has (1 EiB of memory, 10,000
// CPUs) is weighed at what the swarm says its engine has: new boxes
// spread as over nodes of that size, 'paddock nodes' shows the swarm's
// figures, and the log says so once, naming the node.
func TestAttackNodeOverclaimsItsMemory(t *testing.T) {
	s, nodes := clustered(t)
	var logs strings.Builder
	s.Log = slog.New(slog.NewTextHandler(&logs, nil))
	s.Cluster.Log = s.Log
	ctx := context.Background()
	nodes["n2"].claims = &node.Info{CPUs: 10000, MemoryBytes: 1 << 60, MemoryFree: 1 << 60}
	sw := &fakeSwarm{token: "SWMTKN", labelled: map[string]map[string]string{}, nodes: []docker.SwarmNode{
		{ID: "m", Addr: "127.0.1.254", State: "ready", Manager: true, CPUs: 4, MemoryBytes: 8 << 30},
		{ID: "s2", Addr: "127.0.1.1", State: "ready", CPUs: 4, MemoryBytes: 8 << 30},
		{ID: "s3", Addr: "127.0.1.2", State: "ready", CPUs: 4, MemoryBytes: 8 << 30},
	}}
	s.Cluster.Swarm, s.Cluster.URL = sw, "127.0.1.254:7000"
	s.Cluster.Driver.Down = s.Cluster.Down
	s.LookAtNodes(ctx)
	per := map[string]int{}
	for i := range 9 {
		name := fmt.Sprintf("b%d", i)
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name}); err != nil {
			t.Fatal(err)
		}
		per[nodeOf(t, s, name)]++
	}
	if per[""] != 3 || per["n2"] != 3 || per["n3"] != 3 {
		t.Fatalf("nine boxes, one node claiming 1 EiB: %v", per)
	}
	ns, err := servers(s).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		if n.Name == "n2" && (n.MemoryBytes != 8<<30 || n.CPUs != 4 || n.MemoryFree > 8<<30) {
			t.Fatalf("paddock nodes shows n2 as %+v", n)
		}
	}
	s.LookAtNodes(ctx)
	if n := strings.Count(logs.String(), "says it has more than the swarm says"); n != 1 || !strings.Contains(logs.String(), "node=n2") {
		t.Fatalf("the log says it %d times:\n%s", n, logs.String())
	}
}

// A join with a token that is not a good one (made up, spent or expired)
// is refused before anything is done: the engine is not made a swarm's
// manager (which opens its ports), no subnet or certificate is given.
func TestAttackJoinWithoutAGoodToken(t *testing.T) {
	s, _ := clustered(t)
	ctx := context.Background()
	sw := &fakeSwarm{token: "SWMTKN", labelled: map[string]map[string]string{}}
	s.Cluster.Swarm, s.Cluster.URL, s.Cluster.Dir = sw, "127.0.1.254:7000", t.TempDir()
	s.Audit = &Auditor{Key: make([]byte, 32)}
	join := func(tok, name string) error {
		_, err := servers(s).Join(ctx, api.NodeJoinRequest{Token: tok, Name: name, Addr: "127.0.1.9:7443", PublicKey: testPublicKey(t)})
		return err
	}
	if err := join("pdkjoin_made-up", "n9"); err != nodes.ErrJoin || sw.managed != 0 {
		t.Fatalf("a made-up token: %v, the swarm managed %d times", err, sw.managed)
	}
	if err := s.Store.AddJoinToken(auth.Hash("pdkjoin_old"), time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := join("pdkjoin_old", "n9"); err != nodes.ErrJoin || sw.managed != 0 {
		t.Fatalf("an expired token: %v, the swarm managed %d times", err, sw.managed)
	}
	j, err := servers(s).JoinToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	managed := sw.managed
	if err := join(j.Token, "n9"); err != nil {
		t.Fatal(err)
	}
	// Spent, tried again with a fresh name (and so a fresh subnet): the
	// refusal is the token's, not a name's or subnet's conflict.
	if err := join(j.Token, "n10"); err != nodes.ErrJoin || sw.managed != managed+1 {
		t.Fatalf("a spent token: %v, the swarm managed %d times (%d before)", err, sw.managed, managed)
	}
	// Each join, and each refusal, is in the audit log.
	es, err := s.Store.Audit(store.AuditFilter{Action: "node.join"})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range es {
		seen = append(seen, e.Object+": "+e.Result)
	}
	if want := []string{"nodes/n9: " + nodes.ErrJoin.Error(), "nodes/n9: " + nodes.ErrJoin.Error(), "nodes/n9: ok", "nodes/n10: " + nodes.ErrJoin.Error()}; !slices.Equal(seen, want) && !slices.Equal(seen, reversed(want)) {
		t.Fatalf("the audit log's joins: %q", seen)
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// Swarm is the cluster layer: a join token comes with a new swarm worker
// token, a server is up only while the swarm says it is ready (even if
// its agent answers), nothing is made on one it says is down and its
// boxes say "node down", and labels and removal go to the swarm.
func TestTheSwarmSaysWhoIsUp(t *testing.T) {
	s, nodes := clustered(t)
	ctx := context.Background()
	sw := &fakeSwarm{token: "SWMTKN", labelled: map[string]map[string]string{}, nodes: []docker.SwarmNode{
		{ID: "m", Addr: "127.0.1.254", State: "ready", Manager: true},
		{ID: "s2", Addr: "127.0.1.1", State: "ready"},
		{ID: "s3", Addr: "127.0.1.2", State: "ready"},
	}}
	s.Cluster.Swarm, s.Cluster.URL, s.Cluster.Dir = sw, "127.0.1.254:7000", t.TempDir()
	// As AttachAll does, with the fake nodes kept.
	s.Cluster.Driver.Down = s.Cluster.Down
	s.LookAtNodes(ctx)
	up := func() map[string]api.Node {
		t.Helper()
		ns, err := servers(s).List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]api.Node{}
		for _, n := range ns {
			m[n.Name] = n
		}
		return m
	}
	if m := up(); m["n2"].State != "up" || m["n2"].SwarmID != "s2" || m["cp"].SwarmID != "m" {
		t.Fatalf("nodes with the swarm saying ready: %+v", m)
	}

	// Each token comes with a new worker token; the join hands it out.
	j, err := servers(s).JoinToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sw.rotated != 1 {
		t.Fatalf("the worker token was rotated %d times for one join token", sw.rotated)
	}
	joined, err := servers(s).Join(ctx, api.NodeJoinRequest{Token: j.Token, Name: "n4", Addr: "127.0.1.4:7443", PublicKey: testPublicKey(t)})
	if err != nil {
		t.Fatal(err)
	}
	if joined.Swarm.Token != "SWMTKN-1" || !slices.Equal(joined.Swarm.Managers, []string{"127.0.1.254:2377"}) || joined.Swarm.ClusterID != "swarm1" {
		t.Fatalf("what a joining server is told of the swarm: %+v", joined.Swarm)
	}
	// Not in the swarm yet: down, whatever its agent says.
	nodes["n4"] = &fakeNode{Driver: fake.New("img", "img2")}
	s.Cluster.Driver.SetNode("n4", nodes["n4"])
	s.LookAtNodes(ctx)
	if m := up(); m["n4"].State != "down" || !strings.Contains(m["n4"].Error, "not in the swarm") {
		t.Fatalf("a server the swarm does not have: %+v", m["n4"])
	}
	sw.nodes = append(sw.nodes, docker.SwarmNode{ID: "s4", Addr: "127.0.1.4", State: "ready"})
	s.LookAtNodes(ctx)
	if m := up(); m["n4"].State != "up" {
		t.Fatalf("a server once the swarm has it: %+v", m["n4"])
	}

	// n3's agent answers, but the swarm has lost it.
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "on3", Node: "n3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rec.Run(ctx); err != nil {
		t.Fatal(err)
	}
	sw.nodes[2].State, sw.nodes[2].Message = "down", "heartbeat failure"
	s.LookAtNodes(ctx)
	if m := up(); m["n3"].State != "down" || !strings.Contains(m["n3"].Error, "heartbeat failure") || m["n3"].SwarmState != "down" {
		t.Fatalf("a server the swarm says is down: %+v", m["n3"])
	}
	if _, err := s.Rec.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.Store.GetBox("on3"); b.Observed != "node down" {
		t.Fatalf("a box on a server the swarm says is down: observed %q", b.Observed)
	}
	// Using it says the server is down, since when, and that starting
	// it cannot help.
	s.LookAtNodes(ctx)
	if _, err := s.RunningBox("on3"); err == nil || !strings.Contains(err.Error(), `box "on3" is on server n3, which is down since `) ||
		!strings.Contains(err.Error(), "starting cannot help") || strings.Contains(err.Error(), "paddock start") {
		t.Fatalf("a command in a box on a server that is down: %v", err)
	}
	if bs, _ := nodes["n3"].Boxes(ctx); len(bs) != 1 || !bs[0].Running {
		t.Fatalf("the box's container on the server the swarm lost: %+v", bs)
	}
	for i := range 4 {
		name := fmt.Sprintf("while%d", i)
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name}); err != nil {
			t.Fatal(err)
		}
		if nodeOf(t, s, name) == "n3" {
			t.Fatalf("box %s was placed on n3, which the swarm says is down", name)
		}
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "x", Node: "n3"}); err == nil || !strings.Contains(err.Error(), "down") {
		t.Fatalf("a box asked for on a server the swarm says is down: %v", err)
	}
	sw.nodes[2].State = "ready"
	s.LookAtNodes(ctx)
	if _, err := s.Rec.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.Store.GetBox("on3"); b.Observed != "running" {
		t.Fatalf("the box once the swarm has its server again: observed %q", b.Observed)
	}

	// Labels are kept in the swarm; a server removed leaves it.
	if _, err := servers(s).Label(ctx, "n2", map[string]string{"ssd": "yes"}); err != nil {
		t.Fatal(err)
	}
	if sw.labelled["s2"]["ssd"] != "yes" {
		t.Fatalf("the swarm's labels of n2: %v", sw.labelled)
	}
	bs, _ := s.Store.ListBoxes()
	for _, b := range bs {
		if b.Node == "n4" {
			if err := s.RemoveBox(ctx, b.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitTomb(t, s)
	if err := servers(s).Remove(ctx, "n4"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sw.removed, []string{"s4"}) {
		t.Fatalf("the swarm nodes removed with n4: %v", sw.removed)
	}
}

func testPublicKey(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// A box that asks for labels goes to a server that has them, from
// 'new' and from a Boxfile; one no server has, one whose servers are all
// down, one asked for on a server without them, and any on a single
// server are errors that name the labels, and nothing is made.
func TestPlacementByLabels(t *testing.T) {
	s, nodes := clustered(t)
	ctx := context.Background()
	if err := s.Store.SetNodeLabels("n3", map[string]string{"ssd": "yes", "zone": "b"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Store.SetNodeLabels("n2", map[string]string{"ssd": "no"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		name := fmt.Sprintf("fast%d", i)
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name, NodeLabels: map[string]string{"ssd": "yes"}}); err != nil {
			t.Fatal(err)
		}
		if n := nodeOf(t, s, name); n != "n3" {
			t.Fatalf("box %s asking for ssd=yes is on %q", name, n)
		}
	}
	b, _ := s.GetBox("fast0")
	if b.NodeLabels["ssd"] != "yes" {
		t.Fatalf("the box does not say what it asked for: %+v", b.NodeLabels)
	}
	planApply(t, s, api.PlanRequest{Spec: api.ProjectSpec{Project: "p", Boxes: []api.BoxSpec{
		{Name: "pz", NodeLabels: map[string]string{"zone": "b"}},
	}}})
	if n := nodeOf(t, s, "pz"); n != "n3" {
		t.Fatalf("a Boxfile box placed by zone=b is on %q", n)
	}
	before, _ := s.Store.ListBoxes()
	for _, c := range []struct {
		post api.BoxPost
		want string
	}{
		{api.BoxPost{Name: "g", NodeLabels: map[string]string{"gpu": "yes"}}, "no server has the labels gpu=yes"},
		{api.BoxPost{Name: "g", NodeLabels: map[string]string{"ssd": "yes", "zone": "a"}}, "no server has the labels ssd=yes,zone=a"},
		{api.BoxPost{Name: "g", Node: "n2", NodeLabels: map[string]string{"ssd": "yes"}}, "does not have the labels"},
		{api.BoxPost{Name: "g", NodeLabels: map[string]string{"Bad Key": "x"}}, "label Bad Key=x"},
	} {
		if _, err := s.CreateBox(ctx, c.post); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.post, err, c.want)
		}
	}
	nodes["n3"].down = true
	s.LookAtNodes(ctx)
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "g", NodeLabels: map[string]string{"ssd": "yes"}}); err == nil || !strings.Contains(err.Error(), "(n3) are down") {
		t.Errorf("labels whose only server is down: %v", err)
	}
	if after, _ := s.Store.ListBoxes(); len(after) != len(before) {
		t.Fatalf("refused boxes were declared: %d boxes, were %d", len(after), len(before))
	}

	single, _ := newService(t)
	if _, err := single.CreateBox(ctx, api.BoxPost{Name: "g", NodeLabels: map[string]string{"ssd": "yes"}}); err == nil || !strings.Contains(err.Error(), "one server") {
		t.Errorf("labels on a single server: %v", err)
	}
}

// A drained server takes no new box, asked for or not; undrained, it
// does again.
func TestDrainedTakesNothing(t *testing.T) {
	s, _ := clustered(t)
	ctx := context.Background()
	if err := s.Store.SetNodeDrained("n3", true); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		name := fmt.Sprintf("d%d", i)
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name}); err != nil {
			t.Fatal(err)
		}
		if nodeOf(t, s, name) == "n3" {
			t.Fatalf("box %s was placed on drained n3", name)
		}
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "x", Node: "n3"}); err == nil || !strings.Contains(err.Error(), "drained") {
		t.Fatalf("a box asked for on a drained server: %v", err)
	}
	if err := servers(s).Undrain(ctx, "n3"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "x", Node: "n3"}); err != nil {
		t.Fatal(err)
	}
}
