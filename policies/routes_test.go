package policies

import (
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// inNetns runs f on a thread in the named network namespace.
func inNetns(t *testing.T, name string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Not unlocked: the thread, in another namespace, ends with
		// the goroutine.
		runtime.LockOSThread()
		ns, err := os.Open("/run/netns/" + name)
		if err != nil {
			t.Error(err)
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			t.Error(err)
			return
		}
		f()
	}()
	<-done
}

// The box network's addresses that a route of the machine takes away
// from its bridge are found, whatever the table and rule that take them,
// and a route that loses to the bridge's is not: asked of a real
// kernel's routes and rules, in a namespace of the test's own.
func TestRouteConflictsInKernel(t *testing.T) {
	ns, run := newNetnsNamed(t)
	n := testNet
	run("ip", "link", "add", n.Bridge, "type", "bridge")
	run("ip", "addr", "add", "10.213.7.1/24", "dev", n.Bridge)
	run("ip", "link", "set", n.Bridge, "up") // no port: down, as a bridge is before its first box
	run("ip", "link", "add", "pdkvpn0", "type", "veth", "peer", "name", "pdkvpn1")
	run("ip", "link", "set", "pdkvpn0", "up")
	run("ip", "link", "set", "pdkvpn1", "up")
	check := func(why string, want ...string) {
		t.Helper()
		var got []string
		var err error
		inNetns(t, ns, func() {
			var cs []RouteConflict
			cs, err = n.RouteConflicts()
			for _, c := range cs {
				got = append(got, c.Addr.String()+" by "+c.Route.String())
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", why, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: conflicts %q, want %q\n%s\n%s", why, got, want, run("ip", "route", "show", "table", "all"), run("ip", "rule"))
		}
	}
	check("the bridge alone")

	run("ip", "route", "add", "10.213.7.64/26", "dev", "pdkvpn0")
	check("a narrower route in the main table", "10.213.7.64 by 10.213.7.64/26 dev pdkvpn0")
	run("ip", "route", "del", "10.213.7.64/26")

	run("ip", "route", "add", "10.213.7.0/24", "dev", "pdkvpn0", "metric", "5")
	check("the same prefix, less preferred than the bridge's")
	run("ip", "route", "del", "10.213.7.0/24", "dev", "pdkvpn0")

	run("ip", "route", "add", "10.213.0.0/16", "dev", "pdkvpn0")
	check("a wider route in the main table: the bridge's wins")
	run("ip", "route", "del", "10.213.0.0/16")

	run("ip", "route", "add", "10.213.7.128/25", "dev", "pdkvpn0", "table", "4242")
	check("a route in a table no rule consults")
	run("ip", "rule", "add", "to", "10.213.7.0/24", "lookup", "4242", "pref", "4242")
	check("that table consulted before the main one", "10.213.7.128 by 10.213.7.128/25 dev pdkvpn0 table 4242")
	run("ip", "route", "del", "10.213.7.128/25", "table", "4242")
	run("ip", "route", "add", "10.213.0.0/16", "dev", "pdkvpn0", "table", "4242")
	check("a wider route in a table consulted first", "10.213.7.2 by 10.213.0.0/16 dev pdkvpn0 table 4242")
	run("ip", "rule", "del", "pref", "4242")
	check("the rule gone")

	run("ip", "addr", "add", "10.213.7.200/32", "dev", "pdkvpn0")
	check("a box address that is the host's own on another device", "10.213.7.200 by local 10.213.7.200/32 dev pdkvpn0 table local")
	run("ip", "addr", "del", "10.213.7.200/32", "dev", "pdkvpn0")

	run("ip", "route", "add", "blackhole", "10.213.7.32/27")
	check("a blackhole route", "10.213.7.32 by blackhole 10.213.7.32/27")
	run("ip", "route", "del", "blackhole", "10.213.7.32/27")

	// A route of the gateway's or the broadcast address only takes no
	// box address.
	run("ip", "route", "add", "10.213.7.255/32", "dev", "pdkvpn0")
	check("the broadcast address")
	run("ip", "route", "del", "10.213.7.255/32")

	var err error
	run("ip", "route", "add", "10.213.7.16/28", "dev", "pdkvpn0")
	inNetns(t, ns, func() { err = n.CheckRoutes(SubnetFix) })
	for _, want := range []string{"the box network 10.213.7.0/24 overlaps", `10.213.7.16 goes by "10.213.7.16/28 dev pdkvpn0"`, "PADDOCK_SUBNET"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckRoutes: %v; want it to say %q", err, want)
		}
	}
}

// A packet with a box network's source that comes in by another device
// than the bridge (a machine on the server's segment forging a box's
// address) is dropped and counted before anything of the host's takes it;
// the same packet from the sender's own address arrives: in the kernel,
// between two namespaces of the test's own, to a listener on the box
// network's gateway (where the boxes' resolver answers).
func TestAttackForgedBoxSourceInKernel(t *testing.T) {
	host, run := newNetnsNamed(t)
	f, err := os.Open("/run/netns/" + host)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	conn, err := Dial(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	out, outRun := newNetnsNamed(t)
	run("ip", "link", "add", testNet.Bridge, "type", "bridge")
	run("ip", "addr", "add", "10.213.7.1/24", "dev", testNet.Bridge)
	run("ip", "link", "set", testNet.Bridge, "up")
	run("ip", "link", "add", "pdkseg0", "type", "veth", "peer", "name", "pdkseg1", "netns", out)
	run("ip", "addr", "add", "198.19.250.1/30", "dev", "pdkseg0")
	run("ip", "link", "set", "pdkseg0", "up")
	run("ip", "link", "set", "lo", "up")
	run("sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.pdkseg0.rp_filter=0")
	outRun("ip", "addr", "add", "198.19.250.2/30", "dev", "pdkseg1")
	outRun("ip", "link", "set", "pdkseg1", "up")
	outRun("ip", "link", "set", "lo", "up")
	outRun("ip", "addr", "add", "10.213.7.2/32", "dev", "lo") // a box's address, forged
	outRun("ip", "route", "add", "10.213.7.0/24", "via", "198.19.250.1")
	rs := Compile(testNet, testBoxes())
	if err := Apply(conn, rs, nil); err != nil {
		t.Fatal(err)
	}
	var l *net.UDPConn
	inNetns(t, host, func() {
		var err error
		if l, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP("10.213.7.1"), Port: 5353}); err != nil {
			t.Error(err)
		}
	})
	if l == nil {
		t.FailNow()
	}
	defer l.Close()
	send := func(from string) bool {
		t.Helper()
		inNetns(t, out, func() {
			c, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.ParseIP(from)}, &net.UDPAddr{IP: net.ParseIP("10.213.7.1"), Port: 5353})
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.Write([]byte("from " + from))
		})
		l.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 64)
		n, _, err := l.ReadFromUDP(buf)
		return err == nil && string(buf[:n]) == "from "+from
	}
	if !send("198.19.250.2") {
		t.Fatal("a packet from the sender's own address did not arrive (positive control)")
	}
	if send("10.213.7.2") {
		t.Fatal("a packet with a box's address, from outside the bridge, arrived")
	}
	counters, err := Counters(conn, rs)
	if err != nil {
		t.Fatal(err)
	}
	if n := counters[counterName("*", DropSpoof)]; n != 1 {
		t.Fatalf("the spoof counter: %d (all: %v)", n, counters)
	}
}
