package cluster_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/paddock-dev/paddock/appliance/driver/cluster"
	"github.com/paddock-dev/paddock/policies"
)

// rulesSeen is a node's firewall that keeps what it was given.
type rulesSeen struct {
	fence []netip.Prefix
	boxes []policies.Box
}

func (r *rulesSeen) SetFence(f []netip.Prefix)       { r.fence = f }
func (r *rulesSeen) Sync(boxes []policies.Box) error { r.boxes = boxes; return nil }
func (r *rulesSeen) Report(string) (policies.Report, error) {
	return policies.Report{}, nil
}

// Each node gets its own boxes' rules, and a fence of every server's
// address and every other node's box network: no box reaches another
// server, whatever its policy. A single server has no fence.
func TestFence(t *testing.T) {
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	f := &cluster.Firewall{}
	cp, n2, n3 := &rulesSeen{}, &rulesSeen{}, &rulesSeen{}
	f.SetNode("", p("10.214.0.0/24"), a("127.0.1.1"), cp)
	boxes := []policies.Box{
		{Name: "a", IP: a("10.214.0.2"), Policy: policies.Policy{Mode: policies.AllowAll}},
		{Name: "b", IP: a("10.214.2.2"), Policy: policies.Policy{Mode: policies.AllowAll}},
	}
	if err := f.Sync(boxes); err != nil {
		t.Fatal(err)
	}
	if len(cp.fence) != 0 || len(cp.boxes) != 1 {
		t.Fatalf("a single server: fence %v, boxes %v", cp.fence, cp.boxes)
	}

	f.SetNode("n2", p("10.214.2.0/24"), a("127.0.1.2"), n2)
	f.SetNode("n3", p("10.214.3.0/24"), a("127.0.1.3"), n3)
	if err := f.Sync(boxes); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		fw   *rulesSeen
		want string
		box  string
	}{
		{cp, "[10.214.2.0/24 10.214.3.0/24 127.0.1.1/32 127.0.1.2/32 127.0.1.3/32]", "a"},
		{n2, "[10.214.0.0/24 10.214.3.0/24 127.0.1.1/32 127.0.1.2/32 127.0.1.3/32]", "b"},
		{n3, "[10.214.0.0/24 10.214.2.0/24 127.0.1.1/32 127.0.1.2/32 127.0.1.3/32]", ""},
	} {
		if got := fmt.Sprint(c.fw.fence); got != c.want {
			t.Errorf("fence %s, want %s", got, c.want)
		}
		if (c.box == "") != (len(c.fw.boxes) == 0) || (c.box != "" && c.fw.boxes[0].Name != c.box) {
			t.Errorf("boxes %v, want %q", c.fw.boxes, c.box)
		}
	}

	// A node that goes leaves every fence.
	f.RemoveNode("n3")
	if err := f.Sync(boxes); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(n2.fence); got != "[10.214.0.0/24 127.0.1.1/32 127.0.1.2/32]" {
		t.Errorf("n2's fence after n3 went: %s", got)
	}
}
