package policies

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"

	"github.com/paddock-dev/paddock/testbed/golden"
	"github.com/paddock-dev/paddock/testbed/harness"
)

var testNet = Network{
	Table:   "paddock-test",
	Bridge:  "pdktest0",
	Subnet:  netip.MustParsePrefix("10.213.7.0/24"),
	Gateway: netip.MustParseAddr("10.213.7.1"),
	Fence:   []netip.Prefix{netip.MustParsePrefix("198.19.7.3/32"), netip.MustParsePrefix("10.213.8.0/24")},
	// The credential broker's port on the gateway.
	BrokerPort: 4480,
}

func testBoxes() []Box {
	return []Box{
		{Name: "open", IP: netip.MustParseAddr("10.213.7.2"), Policy: Policy{Mode: AllowAll},
			Port: "vethopen", MAC: net.HardwareAddr{0x02, 0x42, 0x0a, 0xd5, 0x07, 0x02}},
		{Name: "shut", IP: netip.MustParseAddr("10.213.7.3"), Policy: Policy{Mode: DenyAll},
			Port: "vethshut", MAC: net.HardwareAddr{0x02, 0x42, 0x0a, 0xd5, 0x07, 0x03}},
		{Name: "listed", IP: netip.MustParseAddr("10.213.7.4"), Policy: Policy{Mode: List,
			Domains: []string{"allowed.test"}, CIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.3.0/24")}}},
	}
}

func TestCompileGolden(t *testing.T) {
	golden.Check(t, "testdata/ruleset.golden", []byte(Compile(testNet, testBoxes()).String()))
	golden.Check(t, "testdata/ruleset-empty.golden", []byte(Compile(testNet, nil).String()))
}

// The netlink messages of a ruleset, captured with a test dial, are stable
// and compared byte for byte.
func TestNetlinkGolden(t *testing.T) {
	var dump strings.Builder
	conn, err := nftables.New(nftables.WithTestDial(func(req []netlink.Message) ([]netlink.Message, error) {
		for _, m := range req {
			fmt.Fprintf(&dump, "type=%#04x flags=%#04x %s\n", uint16(m.Header.Type), uint16(m.Header.Flags), hex.EncodeToString(m.Data))
		}
		return req, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	elems := map[string][]Element{DNSSet("listed"): {{Addr: netip.MustParseAddr("198.18.1.1"), TTL: 30 * time.Second}}}
	if err := Apply(conn, Compile(testNet, testBoxes()), elems); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/ruleset.netlink.golden", []byte(dump.String()))
}

// newNetns makes a throwaway network namespace and returns an nftables
// connection into it and a runner of commands inside it.
func newNetns(t *testing.T) (*nftables.Conn, func(args ...string) string) {
	t.Helper()
	name, run := newNetnsNamed(t)
	f, err := os.Open("/run/netns/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	conn, err := Dial(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	return conn, run
}

// newNetnsNamed makes a throwaway network namespace and returns its name
// and a runner of commands inside it.
func newNetnsNamed(t *testing.T) (string, func(args ...string) string) {
	t.Helper()
	harness.NeedRoot(t, "a network namespace is made for the test")
	name := fmt.Sprintf("pdk-nft-%d", time.Now().UnixNano()%1e9)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("ip", append([]string{"netns", "exec", name}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	return name, run
}

// The kernel accepts the ruleset, nft reads it back as the same rules, a
// second apply replaces rather than adds, and Remove leaves nothing.
func TestApplyInKernel(t *testing.T) {
	conn, run := newNetns(t)
	elems := map[string][]Element{DNSSet("listed"): {{Addr: netip.MustParseAddr("198.18.1.1"), TTL: time.Minute}}}
	rs := Compile(testNet, testBoxes())
	if err := Apply(conn, rs, elems); err != nil {
		t.Fatal(err)
	}
	if err := Apply(conn, rs, elems); err != nil {
		t.Fatal(err)
	}
	out := run("nft", "list", "table", "inet", testNet.Table)
	for _, want := range []string{
		"chain forward {",
		"type filter hook forward priority filter - 10; policy accept;",
		"type filter hook input priority filter - 10; policy accept;",
		`iifname != "pdktest0" accept`,
		"ct state established,related accept",
		"meta nfproto ipv6 counter packets 0 bytes 0 drop",
		"ip saddr 10.213.7.2 jump box-open",
		"ip daddr 10.213.7.1 udp dport 53 accept",
		"ip daddr 10.213.7.1 tcp dport 4480 accept",
		"fib daddr type local counter packets 0 bytes 0 drop",
		"ip daddr 169.254.0.0/16 counter packets 0 bytes 0 drop",
		"ip daddr 10.213.7.0/24 counter packets 0 bytes 0 drop",
		"ct status dnat counter packets 0 bytes 0 drop",
		"ip daddr @dns-listed accept",
		"ip daddr 198.18.3.0/24 accept",
		"198.18.1.1 timeout 1m",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("nft list lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "chain forward {"); n != 1 {
		t.Fatalf("%d forward chains after two applies", n)
	}
	if err := AddElements(conn, testNet.Table, DNSSet("listed"), []Element{{Addr: netip.MustParseAddr("198.18.9.9"), TTL: 5 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	if out := run("nft", "list", "set", "inet", testNet.Table, DNSSet("listed")); !strings.Contains(out, "198.18.9.9") {
		t.Fatalf("added element missing:\n%s", out)
	}
	counters, err := Counters(conn, rs)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := counters["box=listed kind=policy"]; !ok {
		t.Fatalf("counters %v", counters)
	}
	if err := Remove(conn, testNet.Table); err != nil {
		t.Fatal(err)
	}
	if ok, err := Exists(conn, testNet.Table); err != nil || ok {
		t.Fatalf("table still there after Remove: %v %v", ok, err)
	}
	if err := Remove(conn, testNet.Table); err != nil {
		t.Fatalf("Remove of an absent table: %v", err)
	}
}

// A table removed behind Paddock's back comes back on the next Sync, with
// the addresses the resolver had allowed.
func TestManagerRestoresTable(t *testing.T) {
	conn, run := newNetns(t)
	m := NewManager(testNet, func() (*nftables.Conn, error) { return conn, nil })
	if err := m.Sync(testBoxes()); err != nil {
		t.Fatal(err)
	}
	if err := m.Allow("listed", []netip.Addr{netip.MustParseAddr("198.18.1.1")}, time.Minute); err != nil {
		t.Fatal(err)
	}
	run("nft", "delete", "table", "inet", testNet.Table)
	if err := m.Sync(testBoxes()); err != nil {
		t.Fatal(err)
	}
	out := run("nft", "list", "set", "inet", testNet.Table, DNSSet("listed"))
	if !strings.Contains(out, "198.18.1.1") {
		t.Fatalf("learned address lost:\n%s", out)
	}
	// A policy change forgets what the old policy let through.
	boxes := testBoxes()
	boxes[2].Policy.Domains = []string{"other.test"}
	if err := m.Sync(boxes); err != nil {
		t.Fatal(err)
	}
	if out := run("nft", "list", "set", "inet", testNet.Table, DNSSet("listed")); strings.Contains(out, "198.18.1.1") {
		t.Fatalf("address of the old policy kept:\n%s", out)
	}
}

// Hundreds of boxes make a batch of thousands of messages; their
// acknowledgements must not overflow the socket (ENOBUFS).
func TestApplyManyBoxes(t *testing.T) {
	conn, run := newNetns(t)
	n, _ := NetworkFor("paddock-many", "10.213.0.0/16")
	var boxes []Box
	ip := n.Gateway
	for i := 0; i < 300; i++ {
		ip = ip.Next()
		boxes = append(boxes, Box{Name: fmt.Sprintf("b%03d", i), IP: ip, Policy: Policy{Mode: []string{AllowAll, DenyAll, List}[i%3]}})
	}
	if err := Apply(conn, Compile(n, boxes), nil); err != nil {
		t.Fatal(err)
	}
	if out := run("nft", "list", "chain", "inet", n.Table, "forward"); strings.Count(out, "jump box-") != 300 {
		t.Fatalf("%d jumps in the forward chain", strings.Count(out, "jump box-"))
	}
}

// The tests below make sets in the kernel. The nftables library numbers
// sets process-wide, so they come after TestNetlinkGolden, whose messages
// carry those numbers (tests run in file order, then in source order).

// listing is a table as nft lists it, in a form two tables built in
// different orders compare in: its chains and sets sorted by name, the
// counters' numbers and the sets' elements left out.
func listing(t *testing.T, run func(...string) string, family string) string {
	t.Helper()
	out := run("nft", "list", "table", family, testNet.Table)
	counter := regexp.MustCompile(`counter packets \d+ bytes \d+`)
	var blocks []string
	var cur []string
	inSet := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "\tchain ") || strings.HasPrefix(line, "\tset "):
			cur, inSet = []string{line}, strings.HasPrefix(line, "\tset ")
		case line == "\t}":
			blocks = append(blocks, strings.Join(append(cur, line), "\n"))
			cur = nil
		case cur != nil && inSet:
			if f := strings.TrimSpace(line); strings.HasPrefix(f, "type ") || strings.HasPrefix(f, "flags ") {
				cur = append(cur, line)
			}
		case cur != nil:
			cur = append(cur, counter.ReplaceAllString(line, "counter"))
		}
	}
	sort.Strings(blocks)
	return strings.Join(blocks, "\n")
}

// randomBoxes is a box list of a random walk: of eight names, each there
// or not, with a random policy, address and port.
func randomBoxes(r *rand.Rand) []Box {
	var boxes []Box
	ips := r.Perm(20)
	for i := range 8 {
		if r.IntN(10) < 4 {
			continue
		}
		b := Box{Name: fmt.Sprintf("b%d", i), IP: netip.AddrFrom4([4]byte{10, 213, 7, byte(2 + ips[i])})}
		switch r.IntN(3) {
		case 0:
			b.Policy.Mode = AllowAll
		case 1:
			b.Policy.Mode = DenyAll
		default:
			b.Policy = Policy{Mode: List, Domains: []string{"allowed.test"}}
			if r.IntN(2) == 0 {
				b.Policy.CIDRs = []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("198.18.%d.0/24", r.IntN(3)))}
			}
		}
		if r.IntN(2) == 0 {
			b.Port, b.MAC = "veth"+b.Name, net.HardwareAddr{0x02, 0x42, 0x0a, 0xd5, 0x07, byte(2 + ips[i])}
		}
		boxes = append(boxes, b)
	}
	return boxes
}

// Changing the table in place ends where replacing it would: over a
// random walk of box lists (boxes come and go, change policy, address and
// port), after each Sync the table lists the same chains, rules and sets
// as one applied whole from the same boxes in another namespace. And it
// is in place: an address in an unchanged box's set survives a change to
// other boxes (a replaced table would hold only what the resolver let
// through), while a box whose policy changed has its set emptied.
func TestChangeInPlaceEqualsReplace(t *testing.T) {
	conn, run := newNetns(t)
	fresh, runFresh := newNetns(t)
	m := NewManager(testNet, func() (*nftables.Conn, error) { return conn, nil })
	r := rand.New(rand.NewPCG(7, 11))
	old := TidyAfter
	TidyAfter = time.Hour // tidied below, by hand
	t.Cleanup(func() { TidyAfter = old })
	var boxes []Box
	overlays := 0
	for step := range 80 {
		if step%3 == 2 && len(boxes) > 0 {
			boxes = claim(boxes, r.IntN(len(boxes)), fmt.Sprintf("c%d", step), r)
		} else if step%3 == 1 {
			boxes = withNew(boxes, fmt.Sprintf("n%d", step), r)
		} else {
			boxes = randomBoxes(r)
		}
		if err := m.Sync(boxes); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if m.last != Compile(testNet, boxes).String() {
			// An overlay: each source goes to its own chain first.
			overlays++
			checkFirstJumps(t, step, run, boxes)
			m.tidy(m.syncs, boxes)
		}
		if err := Apply(fresh, Compile(testNet, boxes), nil); err != nil {
			t.Fatalf("step %d: whole: %v", step, err)
		}
		for _, family := range []string{"inet", "bridge"} {
			got, want := listing(t, run, family), listing(t, runFresh, family)
			if got != want {
				t.Fatalf("step %d, %s table changed in place:\n%s\n\nreplaced whole:\n%s", step, family, got, want)
			}
		}
	}

	if overlays == 0 {
		t.Fatal("no step was an overlay")
	}

	boxes = testBoxes()
	if err := m.Sync(boxes); err != nil {
		t.Fatal(err)
	}
	kept := netip.MustParseAddr("198.18.5.5")
	if err := AddElements(conn, testNet.Table, DNSSet("listed"), []Element{{Addr: kept, TTL: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	boxes[0].Policy.Mode = DenyAll // another box changes
	boxes = append(boxes, Box{Name: "new", IP: netip.MustParseAddr("10.213.7.30"), Policy: Policy{Mode: List}})
	if err := m.Sync(boxes); err != nil {
		t.Fatal(err)
	}
	if out := run("nft", "list", "set", "inet", testNet.Table, DNSSet("listed")); !strings.Contains(out, kept.String()) {
		t.Fatalf("the table was replaced, not changed in place: the unchanged box's set lost %s:\n%s", kept, out)
	}
	if err := m.Allow("listed", []netip.Addr{netip.MustParseAddr("198.18.6.6")}, time.Minute); err != nil {
		t.Fatal(err)
	}
	boxes[2].Policy.Domains = []string{"other.test"}
	if err := m.Sync(boxes); err != nil {
		t.Fatal(err)
	}
	if out := run("nft", "list", "set", "inet", testNet.Table, DNSSet("listed")); strings.Contains(out, "198.18.6.6") || strings.Contains(out, kept.String()) {
		t.Fatalf("a box whose policy changed kept addresses of the old one:\n%s", out)
	}
}

// claim is boxes with box i claimed, as from the warm pool: the same
// address and port under another name, with a random policy.
func claim(boxes []Box, i int, name string, r *rand.Rand) []Box {
	out := slices.Clone(boxes)
	out[i].Name = name
	out[i].Policy = []Policy{{Mode: AllowAll}, {Mode: DenyAll}, {Mode: List, Domains: []string{"allowed.test"}}}[r.IntN(3)]
	return out
}

// checkFirstJumps checks that in the kernel's table the first jump from
// each box's address (chains forward and input) and port (the bridge's
// ports chain) goes to that box's own chain.
func checkFirstJumps(t *testing.T, step int, run func(...string) string, boxes []Box) {
	t.Helper()
	first := func(family, chain, match string) map[string]string {
		got := map[string]string{}
		re := regexp.MustCompile(match + ` jump (\S+)`)
		for _, m := range re.FindAllStringSubmatch(run("nft", "list", "chain", family, testNet.Table, chain), -1) {
			if _, ok := got[m[1]]; !ok {
				got[m[1]] = m[2]
			}
		}
		return got
	}
	for _, c := range []struct{ family, chain string }{{"inet", "forward"}, {"inet", "input"}, {"bridge", "ports"}} {
		var got map[string]string
		if c.family == "bridge" {
			got = first(c.family, c.chain, `iifname "(\S+)"`)
		} else {
			got = first(c.family, c.chain, `ip saddr (\S+)`)
		}
		for _, b := range boxes {
			key, want := b.IP.String(), BoxChain(b.Name)
			if c.family == "bridge" {
				if b.Port == "" || len(b.MAC) != 6 {
					continue
				}
				key, want = b.Port, PortChain(b.Name)
			}
			if got[key] != want {
				t.Fatalf("step %d: in %s %s the first jump from %s goes to %q, want %q", step, c.family, c.chain, key, got[key], want)
			}
		}
	}
}

// A box claimed from the warm pool (the pool box's address and port, its
// own name and policy) is a change that only adds: the jumps to its
// chains go before the pool box's, which stay until the tidy removes
// them; the tidy, a moment later, leaves the table as one applied whole.
func TestClaimOnlyAdds(t *testing.T) {
	conn, run := newNetns(t)
	fresh, runFresh := newNetns(t)
	old := TidyAfter
	t.Cleanup(func() { TidyAfter = old })
	TidyAfter = time.Hour
	m := NewManager(testNet, func() (*nftables.Conn, error) { return conn, nil })
	pool := Box{Name: "pool-1", IP: netip.MustParseAddr("10.213.7.9"), Policy: Policy{Mode: DenyAll},
		Port: "vethpool1", MAC: net.HardwareAddr{0x02, 0x42, 0x0a, 0xd5, 0x07, 0x09}}
	boxes := append(testBoxes(), pool)
	if err := m.Sync(boxes); err != nil {
		t.Fatal(err)
	}
	boxes[3].Name, boxes[3].Policy = "mine", Policy{Mode: List, CIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.4.0/24")}}
	if err := m.Sync(boxes); err != nil {
		t.Fatal(err)
	}
	inet, bridge := run("nft", "list", "table", "inet", testNet.Table), run("nft", "list", "table", "bridge", testNet.Table)
	for _, want := range []string{"chain box-pool-1 {", "chain box-mine {", "set dns-mine {"} {
		if !strings.Contains(inet, want) {
			t.Fatalf("after the claim the inet table lacks %q (a change that only adds keeps the pool box's chain):\n%s", want, inet)
		}
	}
	if !strings.Contains(bridge, "chain port-pool-1 {") || !strings.Contains(bridge, "chain port-mine {") {
		t.Fatalf("after the claim the bridge table lacks a port chain:\n%s", bridge)
	}
	checkFirstJumps(t, 0, run, boxes)

	m.tidy(m.syncs, boxes)
	if err := Apply(fresh, Compile(testNet, boxes), nil); err != nil {
		t.Fatal(err)
	}
	for _, family := range []string{"inet", "bridge"} {
		if got, want := listing(t, run, family), listing(t, runFresh, family); got != want {
			t.Fatalf("%s table after the tidy:\n%s\n\napplied whole:\n%s", family, got, want)
		}
	}

	// Without a hand: the tidy comes by itself after TidyAfter.
	TidyAfter = 10 * time.Millisecond
	boxes[3].Name = "again"
	if err := m.Sync(boxes); err != nil {
		t.Fatal(err)
	}
	if err := Apply(fresh, Compile(testNet, boxes), nil); err != nil {
		t.Fatal(err)
	}
	want := listing(t, runFresh, "inet")
	for deadline := time.Now().Add(30 * time.Second); listing(t, run, "inet") != want; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("what the claim left was not removed within 30 s:\n%s", run("nft", "list", "table", "inet", testNet.Table))
		}
	}
}

// withNew is boxes and one more, on a free address, with a port or not.
func withNew(boxes []Box, name string, r *rand.Rand) []Box {
	used := map[netip.Addr]bool{}
	for _, b := range boxes {
		used[b.IP] = true
	}
	var ip netip.Addr
	for {
		ip = netip.AddrFrom4([4]byte{10, 213, 7, byte(2 + r.IntN(40))})
		if !used[ip] {
			break
		}
	}
	b := Box{Name: name, IP: ip, Policy: Policy{Mode: AllowAll}}
	if r.IntN(2) == 0 {
		a := ip.As4()
		b.Port, b.MAC = "veth"+name, net.HardwareAddr{0x02, 0x42, 0x0a, 0xd5, 0x07, a[3]}
	}
	return append(slices.Clone(boxes), b)
}

// handles is the handles of a chain's rules in the kernel.
func handles(t *testing.T, run func(...string) string, family, chain string) []string {
	t.Helper()
	var hs []string
	for _, m := range regexp.MustCompile(`# handle (\d+)`).FindAllStringSubmatch(run("nft", "-a", "list", "chain", family, testNet.Table, chain), -1) {
		hs = append(hs, m[1])
	}
	return hs
}

// A box made (its address among the others', then its port once it runs)
// is a change that only adds: the rules already there stay as they are
// (the same handles), the new ones go where they belong, and the table is
// the one applied whole.
func TestNewBoxOnlyAdds(t *testing.T) {
	conn, run := newNetns(t)
	fresh, runFresh := newNetns(t)
	m := NewManager(testNet, func() (*nftables.Conn, error) { return conn, nil })
	all := testBoxes()                    // .2 open, .3 shut, .4 listed
	boxes := []Box{all[0], all[2]}        // shut is made between them
	boxes[0].Port, boxes[0].MAC = "", nil // and open starts later
	if err := m.Sync(boxes); err != nil {
		t.Fatal(err)
	}
	for i, next := range [][]Box{
		{boxes[0], all[1], boxes[1]}, // shut made: its address
		{all[0], all[1], boxes[1]},   // open runs: its port
	} {
		before := map[string][]string{}
		for _, c := range []string{"inet forward", "inet input", "bridge ports"} {
			f := strings.Fields(c)
			before[c] = handles(t, run, f[0], f[1])
		}
		if err := m.Sync(next); err != nil {
			t.Fatal(err)
		}
		for c, hs := range before {
			f := strings.Fields(c)
			after := strings.Join(handles(t, run, f[0], f[1]), " ")
			for _, h := range hs {
				if !strings.Contains(" "+after+" ", " "+h+" ") {
					t.Fatalf("step %d: rule %s of %s was removed (handles before %v, after %s): the change did not only add", i, h, c, hs, after)
				}
			}
		}
		if err := Apply(fresh, Compile(testNet, next), nil); err != nil {
			t.Fatal(err)
		}
		for _, family := range []string{"inet", "bridge"} {
			if got, want := listing(t, run, family), listing(t, runFresh, family); got != want {
				t.Fatalf("step %d: %s table:\n%s\n\napplied whole:\n%s", i, family, got, want)
			}
		}
	}
}
