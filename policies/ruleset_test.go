package policies

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"

	"github.com/paddock-dev/paddock/testbed/golden"
)

var testNet = Network{
	Table:   "paddock-test",
	Bridge:  "pdktest0",
	Subnet:  netip.MustParsePrefix("10.213.7.0/24"),
	Gateway: netip.MustParseAddr("10.213.7.1"),
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
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root")
		}
		t.Skip("SKIP: needs root to make a network namespace")
	}
	name := fmt.Sprintf("pdk-nft-%d", time.Now().UnixNano()%1e9)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	f, err := os.Open("/run/netns/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	conn, err := Dial(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		out, err := exec.Command("ip", append([]string{"netns", "exec", name}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	return conn, run
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
