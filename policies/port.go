package policies

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// PortOf finds where a running box meets the box bridge: the host-side
// name of the veth whose other end is ifname (eth0) in the network
// namespace of pid, and that end's MAC address. The kernel says which
// interface is the peer (IFLA_LINK), so a box cannot lie about it.
func PortOf(pid int, ifname string) (string, net.HardwareAddr, error) {
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return "", nil, fmt.Errorf("network namespace of pid %d: %w", pid, err)
	}
	defer ns.Close()
	c, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{NetNS: int(ns.Fd())})
	if err != nil {
		return "", nil, fmt.Errorf("netlink in the namespace of pid %d: %w", pid, err)
	}
	defer c.Close()
	req := netlink.Message{
		Header: netlink.Header{Type: unix.RTM_GETLINK, Flags: netlink.Request | netlink.Dump},
		Data:   make([]byte, unix.SizeofIfInfomsg),
	}
	msgs, err := c.Execute(req)
	if err != nil {
		return "", nil, fmt.Errorf("listing links of pid %d: %w", pid, err)
	}
	for _, m := range msgs {
		if len(m.Data) < unix.SizeofIfInfomsg {
			continue
		}
		ad, err := netlink.NewAttributeDecoder(m.Data[unix.SizeofIfInfomsg:])
		if err != nil {
			continue
		}
		var name string
		var peer uint32
		var mac net.HardwareAddr
		for ad.Next() {
			switch ad.Type() {
			case unix.IFLA_IFNAME:
				name = strings.TrimRight(ad.String(), "\x00")
			case unix.IFLA_LINK:
				peer = ad.Uint32()
			case unix.IFLA_ADDRESS:
				mac = net.HardwareAddr(append([]byte(nil), ad.Bytes()...))
			}
		}
		if name != ifname {
			continue
		}
		if peer == 0 {
			return "", nil, fmt.Errorf("%s of pid %d has no peer link", ifname, pid)
		}
		host, err := net.InterfaceByIndex(int(peer))
		if err != nil {
			return "", nil, fmt.Errorf("peer of %s of pid %d (index %d): %w", ifname, pid, peer, err)
		}
		return host.Name, mac, nil
	}
	return "", nil, errors.New("no " + ifname + " in the namespace of the box")
}
