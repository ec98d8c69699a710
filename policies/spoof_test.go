package policies

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/google/nftables"
)

// (This file's tests apply rulesets: they run after TestNetlinkGolden,
// whose golden bytes hold the nftables library's set numbers, which the
// library counts for the whole process.)

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
