package policies

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

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
