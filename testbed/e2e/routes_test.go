package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// A route of this machine that takes part of the box network elsewhere
// (a VPN's, a private network's) stops paddockd at its start, naming it
// and the way out, rather than leaving the boxes there unreachable. The
// way out it names, another subnet, works while there are no boxes (the
// box network is made again), and is refused, naming them, once there
// are. The routes point at a device of the test's own; no packet is
// sent to them.
func TestSubnetRouteConflict(t *testing.T) {
	harness.NeedRoot(t, "routes of this machine are added for the test")
	d := newDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	dev := fmt.Sprintf("pdkrt%d", time.Now().UnixNano()%1e6)
	ip("link", "add", dev, "type", "veth", "peer", "name", dev+"p")
	t.Cleanup(func() { exec.Command("ip", "link", "del", dev).Run() })
	ip("link", "set", dev, "up")
	upper := func(subnet string) string {
		p := netip.MustParsePrefix(subnet)
		a := p.Addr().As4()
		a[3] = 128
		return netip.PrefixFrom(netip.AddrFrom4(a), 25).String()
	}
	refused := func(why string, want ...string) {
		t.Helper()
		err := d.Start()
		if err == nil {
			t.Fatalf("%s: paddockd started", why)
		}
		// The log is the whole run's: only what this start wrote counts.
		msg := err.Error()
		if i := strings.LastIndex(msg, "engine connected"); i >= 0 {
			msg = msg[i:]
		}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Fatalf("%s: paddockd's refusal does not say %q:\n%s", why, w, msg)
			}
		}
	}

	first := d.Subnet
	ip("route", "add", upper(first), "dev", dev)
	refused("a route in the main table over part of the box network",
		"the box network "+first+" overlaps routes of this machine",
		upper(first)+" dev "+dev, "PADDOCK_SUBNET")
	ip("route", "del", upper(first), "dev", dev)

	// Another subnet: the box network the refused start made is made
	// again with it, and a box there is reached from the host.
	d.Subnet = harness.FreeSubnet()
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := d.Client()
	box, err := c.CreateBox(ctx, api.BoxPost{Name: "rt"})
	if err != nil {
		t.Fatal(err)
	}
	if a, err := netip.ParseAddr(box.IP); err != nil || !netip.MustParsePrefix(d.Subnet).Contains(a) {
		t.Fatalf("box address %q, not in the new subnet %s", box.IP, d.Subnet)
	}
	// reach has a box's program listen on port (one port a call: the
	// last one's closed connection keeps it a while) and the host connect
	// to it at the box's address.
	reach := func(port int) {
		t.Helper()
		listen := fmt.Sprintf(`import socket; s = socket.socket(); s.bind(("", %d)); s.listen(); c, _ = s.accept(); c.send(b"box")`, port)
		if _, err := c.StartJob(ctx, "rt", api.ExecPost{Cmd: []string{"python3", "-c", listen}}); err != nil {
			t.Fatalf("listen in the box: %v", err)
		}
		for deadline := time.Now().Add(time.Minute); ; {
			conn, err := net.DialTimeout("tcp", net.JoinHostPort(box.IP, fmt.Sprint(port)), 2*time.Second)
			if err == nil {
				b := make([]byte, 3)
				conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, _ := conn.Read(b)
				conn.Close()
				if string(b[:n]) == "box" {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the host does not reach the box at %s: %v", box.IP, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	reach(7071)
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}

	// A table that a rule consults before the main one.
	second := d.Subnet
	ip("route", "add", upper(second), "dev", dev, "table", "4217")
	ip("rule", "add", "to", second, "lookup", "4217", "pref", "4217")
	t.Cleanup(func() { exec.Command("ip", "rule", "del", "pref", "4217").Run() })
	refused("a route in a table a rule consults first",
		"the box network "+second+" overlaps routes of this machine",
		upper(second)+" dev "+dev+" table 4217")
	ip("rule", "del", "pref", "4217")
	ip("route", "del", upper(second), "dev", dev, "table", "4217")

	// With a box, the subnet cannot change: the box keeps its own.
	d.Subnet = first
	refused("a subnet changed while a box exists",
		"the box network has the subnet "+second+", not "+first+" as configured", "there are 1: rt)")
	d.Subnet = second
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	c = d.Client()
	reach(7072)

	// A route that comes after the start (a VPN connecting): the server
	// says which box addresses it takes, in 'paddock nodes' (as the
	// dashboard's server page does) and in its log; once it is gone, it
	// says nothing.
	nodes := func(want string) {
		t.Helper()
		var out []byte
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			cmd := exec.Command(bins.Paddock, "nodes")
			cmd.Env = append(os.Environ(), d.CLIEnv()...)
			var err error
			if out, err = cmd.CombinedOutput(); err != nil {
				t.Fatalf("paddock nodes: %v\n%s", err, out)
			}
			if want == "" && !strings.Contains(string(out), "routed elsewhere") || want != "" && strings.Contains(string(out), want) {
				return
			}
		}
		t.Fatalf("paddock nodes, waiting for %q:\n%s", want, out)
	}
	ip("route", "add", upper(second), "dev", dev)
	late := fmt.Sprintf("box addresses routed elsewhere, unreachable: %s goes by \"%s dev %s\"", netip.MustParsePrefix(upper(second)).Addr(), upper(second), dev)
	nodes(late)
	if b, _ := os.ReadFile(d.LogPath()); !strings.Contains(string(b), "routes of the server take box addresses away from its bridge") {
		t.Errorf("paddockd's log does not say so")
	}
	ip("route", "del", upper(second), "dev", dev)
	nodes("")
}
