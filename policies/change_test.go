package policies

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
)

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
	for step := range 80 {
		boxes := randomBoxes(r)
		if err := m.Sync(boxes); err != nil {
			t.Fatalf("step %d: %v", step, err)
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

	boxes := testBoxes()
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
