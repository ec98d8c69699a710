package policies

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Routes that take the box network's addresses elsewhere.
//
// The engine makes the box network's bridge with the subnet it is given
// even when a route of this machine already covers part of it (a VPN, a
// cloud's private network, a bridge another program left): the host then
// sends what is meant for some boxes to that route's device, and those
// boxes are unreachable from paddockd (commands, files, previews, the
// resolver's answers), with nothing said. CheckRoutes finds such a route
// once the bridge is up: for every route of this machine, in any table,
// that overlaps the subnet (and one address of the subnet besides), it
// asks the kernel where an address of the overlap goes, so that the
// answer is the machine's own, its rules and their order included. A
// route that loses to the bridge's (a wider one in the main table, a
// table no rule consults) is no conflict; one that wins for any box
// address is, and paddockd does not start (daemon).

// Route is one IPv4 route of this machine.
type Route struct {
	Dst   netip.Prefix
	Dev   string // "" when it has no device (an unreachable or blackhole route)
	Table uint32
	Type  uint8 // RTN_*
}

func (r Route) String() string {
	s := r.Dst.String()
	switch r.Type {
	case unix.RTN_LOCAL:
		s = "local " + s
	case unix.RTN_BLACKHOLE:
		s = "blackhole " + s
	case unix.RTN_UNREACHABLE:
		s = "unreachable " + s
	case unix.RTN_PROHIBIT:
		s = "prohibit " + s
	}
	if r.Dev != "" {
		s += " dev " + r.Dev
	}
	switch r.Table {
	case unix.RT_TABLE_MAIN:
	case unix.RT_TABLE_LOCAL:
		s += " table local"
	default:
		s += fmt.Sprintf(" table %d", r.Table)
	}
	return s
}

// rtmsg is struct rtmsg (linux/rtnetlink.h): family, dst_len, src_len,
// tos, table, protocol, scope, type, flags.
func rtmsg(dstLen uint8, flags uint32) []byte {
	b := make([]byte, 12)
	b[0] = unix.AF_INET
	b[1] = dstLen
	binary.NativeEndian.PutUint32(b[8:], flags)
	return b
}

// parseRoute reads an RTM_NEWROUTE message's data; devs names the
// devices by index.
func parseRoute(b []byte, devs map[int]string) (Route, bool) {
	if len(b) < 12 || b[0] != unix.AF_INET {
		return Route{}, false
	}
	r := Route{Table: uint32(b[4]), Type: b[7]}
	bits := int(b[1])
	addr := netip.IPv4Unspecified()
	ad, err := netlink.NewAttributeDecoder(b[12:])
	if err != nil {
		return Route{}, false
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.RTA_DST:
			if a, ok := netip.AddrFromSlice(ad.Bytes()); ok {
				addr = a.Unmap()
			}
		case unix.RTA_OIF:
			if name, ok := devs[int(ad.Uint32())]; ok {
				r.Dev = name
			} else {
				r.Dev = fmt.Sprintf("#%d", ad.Uint32())
			}
		case unix.RTA_TABLE:
			r.Table = ad.Uint32()
		}
	}
	if ad.Err() != nil {
		return Route{}, false
	}
	p, err := addr.Prefix(bits)
	if err != nil {
		return Route{}, false
	}
	r.Dst = p
	return r, true
}

// routeConn asks the kernel about routes, over one netlink connection.
type routeConn struct {
	c    *netlink.Conn
	devs map[int]string // device names by index, read once
}

func dialRoutes() (*routeConn, error) {
	c, err := netlink.Dial(unix.NETLINK_ROUTE, nil)
	if err != nil {
		return nil, fmt.Errorf("routes: %w", err)
	}
	ifs, err := net.Interfaces()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("routes: %w", err)
	}
	devs := make(map[int]string, len(ifs))
	for _, ifc := range ifs {
		devs[ifc.Index] = ifc.Name
	}
	return &routeConn{c: c, devs: devs}, nil
}

// routes lists this machine's IPv4 routes, of every table.
func (rc *routeConn) routes() ([]Route, error) {
	msgs, err := rc.c.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.RTM_GETROUTE, Flags: netlink.Request | netlink.Dump},
		Data:   rtmsg(0, 0),
	})
	if err != nil {
		return nil, fmt.Errorf("routes: %w", err)
	}
	var out []Route
	for _, m := range msgs {
		if r, ok := parseRoute(m.Data, rc.devs); ok && m.Header.Type == unix.RTM_NEWROUTE {
			out = append(out, r)
		}
	}
	return out, nil
}

// routeTo is the route this machine takes to a, as the kernel looks it
// up (its rules, in their order, and its tables): the entry that matched
// (RTM_F_FIB_MATCH), in the table it was found in (RTM_F_LOOKUP_TABLE).
// ok is false where the kernel has no route it would send a by (none, or
// a blackhole, unreachable or prohibit route).
func (rc *routeConn) routeTo(a netip.Addr) (r Route, ok bool, err error) {
	ae := netlink.NewAttributeEncoder()
	a4 := a.As4()
	ae.Bytes(unix.RTA_DST, a4[:])
	attrs, err := ae.Encode()
	if err != nil {
		return Route{}, false, err
	}
	msgs, err := rc.c.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.RTM_GETROUTE, Flags: netlink.Request},
		Data:   append(rtmsg(32, unix.RTM_F_FIB_MATCH|unix.RTM_F_LOOKUP_TABLE), attrs...),
	})
	var errno unix.Errno
	if errors.As(err, &errno) && (errno == unix.ENETUNREACH || errno == unix.EHOSTUNREACH || errno == unix.EINVAL || errno == unix.EACCES) {
		return Route{}, false, nil
	}
	if err != nil {
		return Route{}, false, fmt.Errorf("route to %s: %w", a, err)
	}
	for _, m := range msgs {
		if r, ok := parseRoute(m.Data, rc.devs); ok && m.Header.Type == unix.RTM_NEWROUTE {
			return r, true, nil
		}
	}
	return Route{}, false, fmt.Errorf("route to %s: the kernel gave no route", a)
}

// RouteConflict is an address of the box network that the machine sends
// elsewhere than the bridge, and the route that takes it.
type RouteConflict struct {
	Addr  netip.Addr
	Route Route
}

func (c RouteConflict) String() string { return fmt.Sprintf("%s goes by %q", c.Addr, c.Route) }

// RouteConflicts lists, for each route of the machine that overlaps the
// box network, other than the bridge's own, the box address the kernel
// sends elsewhere than the bridge (at most one a route, and one for the
// network as a whole). The bridge must be up (its route is the one that
// must win).
func (n Network) RouteConflicts() ([]RouteConflict, error) {
	rc, err := dialRoutes()
	if err != nil {
		return nil, err
	}
	defer rc.c.Close()
	routes, err := rc.routes()
	if err != nil {
		return nil, err
	}
	// The addresses to ask about: the first box's, and for each route
	// inside the network the first box address it covers (not the
	// network's own address, its gateway nor its broadcast address,
	// which are the host's).
	type ask struct {
		addr netip.Addr
		from Route // the route that made it asked about
	}
	asks := []ask{{addr: n.Gateway.Next(), from: Route{Dst: n.Subnet}}}
	last := lastAddr(n.Subnet)
	for _, r := range routes {
		if r.Dev == n.Bridge || !r.Dst.Overlaps(n.Subnet) || r.Dst.Bits() <= n.Subnet.Bits() {
			continue
		}
		a := r.Dst.Addr()
		if a == n.Subnet.Addr() || a == n.Gateway {
			a = n.Gateway.Next()
		}
		if !r.Dst.Contains(a) || a == last {
			continue
		}
		asks = append(asks, ask{a, r})
	}
	var out []RouteConflict
	seen := map[Route]bool{}
	for _, q := range asks {
		r, ok, err := rc.routeTo(q.addr)
		if err != nil {
			return nil, err
		}
		if !ok {
			// Dropped (a blackhole route, or one that refuses): the
			// route listed is the one to name; with none, the kernel
			// has no route at all, which the bridge's would be.
			if q.from.Dst == n.Subnet {
				q.from = Route{Dst: n.Subnet, Type: unix.RTN_UNREACHABLE}
			}
			r = q.from
		}
		// The main table's default route wins only where the bridge's
		// own is missing or skipped (a bridge without boxes is down, and
		// a machine may skip the routes of devices that are down): no
		// route of another takes the address then.
		mainDefault := ok && r.Table == unix.RT_TABLE_MAIN && r.Dst.Bits() == 0
		if (ok && r.Type == unix.RTN_UNICAST && r.Dev == n.Bridge) || mainDefault || seen[r] {
			continue
		}
		seen[r] = true
		out = append(out, RouteConflict{Addr: q.addr, Route: r})
	}
	return out, nil
}

// lastAddr is p's last address (its broadcast address).
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	v := binary.BigEndian.Uint32(a[:]) | (1<<(32-p.Bits()) - 1)
	binary.BigEndian.PutUint32(a[:], v)
	return netip.AddrFrom4(a)
}

// CheckRoutes says which routes of this machine take addresses of the box
// network away from its bridge (nil: none), and then what to do: fix.
func (n Network) CheckRoutes(fix string) error {
	cs, err := n.RouteConflicts()
	if err != nil {
		return fmt.Errorf("checking the box network %s against this machine's routes: %w", n.Subnet, err)
	}
	if len(cs) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the box network %s overlaps routes of this machine, which take some box addresses away from its bridge %s:", n.Subnet, n.Bridge)
	for _, c := range cs {
		fmt.Fprintf(&b, "\n  %s", c)
	}
	fmt.Fprintf(&b, "\nboxes there would be unreachable. %s (`ip route show table all` and `ip rule` list them)", fix)
	return errors.New(b.String())
}

// SubnetFix is what CheckRoutes tells the owner of a server to do.
const SubnetFix = `Set another subnet, one no route of this machine covers ("subnet" in paddockd's configuration, or PADDOCK_SUBNET; it can change while there are no boxes), or remove those routes`
