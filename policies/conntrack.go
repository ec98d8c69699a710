package policies

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// ctnetlink message types and attributes (linux/netfilter/nfnetlink_conntrack.h).
const (
	ctGet       = unix.NFNL_SUBSYS_CTNETLINK<<8 | 1 // IPCTNL_MSG_CT_GET
	ctDelete    = unix.NFNL_SUBSYS_CTNETLINK<<8 | 2 // IPCTNL_MSG_CT_DELETE
	ctaTupleOrg = 1                                 // CTA_TUPLE_ORIG
	ctaZone     = 18                                // CTA_ZONE
	ctaTupleIP  = 1                                 // CTA_TUPLE_IP
	ctaIPv4Src  = 1                                 // CTA_IP_V4_SRC
	ctaIPv4Dst  = 2                                 // CTA_IP_V4_DST
)

// Flow is a tracked connection's original direction.
type Flow struct {
	Src, Dst netip.Addr
	tuple    []byte // CTA_TUPLE_ORIG as the kernel sent it
	zone     []byte
}

func nfgen() []byte { return []byte{unix.AF_INET, unix.NFNETLINK_V0, 0, 0} }

// Flows lists the IPv4 connections the host's conntrack table holds.
func Flows() ([]Flow, error) {
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, nil)
	if err != nil {
		return nil, fmt.Errorf("conntrack: %w", err)
	}
	defer c.Close()
	msgs, err := c.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(ctGet), Flags: netlink.Request | netlink.Dump},
		Data:   nfgen(),
	})
	if err != nil {
		return nil, fmt.Errorf("conntrack dump: %w", err)
	}
	var out []Flow
	for _, m := range msgs {
		if len(m.Data) < 4 {
			continue
		}
		f, ok := parseFlow(m.Data[4:])
		if ok {
			out = append(out, f)
		}
	}
	return out, nil
}

func parseFlow(b []byte) (Flow, bool) {
	var f Flow
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return f, false
	}
	for ad.Next() {
		switch ad.Type() {
		case ctaTupleOrg:
			f.tuple = append([]byte(nil), ad.Bytes()...)
			ad.Nested(func(t *netlink.AttributeDecoder) error {
				for t.Next() {
					if t.Type() != ctaTupleIP {
						continue
					}
					t.Nested(func(ip *netlink.AttributeDecoder) error {
						for ip.Next() {
							a, ok := netip.AddrFromSlice(ip.Bytes())
							switch {
							case !ok:
							case ip.Type() == ctaIPv4Src:
								f.Src = a
							case ip.Type() == ctaIPv4Dst:
								f.Dst = a
							}
						}
						return nil
					})
				}
				return nil
			})
		case ctaZone:
			f.zone = append([]byte(nil), ad.Bytes()...)
		}
	}
	return f, f.tuple != nil && f.Src.IsValid()
}

// Cut deletes the tracked connections that box at src opened and that
// keep(dst) says no to, and returns how many went. A connection that is
// no longer tracked is new again to the rules, which judge it afresh.
func Cut(src netip.Addr, keep func(dst netip.Addr) bool) (int, error) {
	flows, err := Flows()
	if err != nil {
		return 0, err
	}
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, nil)
	if err != nil {
		return 0, fmt.Errorf("conntrack: %w", err)
	}
	defer c.Close()
	n := 0
	for _, f := range flows {
		if f.Src != src || keep(f.Dst) {
			continue
		}
		ae := netlink.NewAttributeEncoder()
		ae.Bytes(ctaTupleOrg|unix.NLA_F_NESTED, f.tuple)
		if f.zone != nil {
			ae.Bytes(ctaZone, f.zone)
		}
		attrs, err := ae.Encode()
		if err != nil {
			return n, err
		}
		_, err = c.Execute(netlink.Message{
			Header: netlink.Header{Type: netlink.HeaderType(ctDelete), Flags: netlink.Request | netlink.Acknowledge},
			Data:   append(nfgen(), attrs...),
		})
		if err != nil && !isNoEnt(err) {
			return n, fmt.Errorf("conntrack delete %s→%s: %w", f.Src, f.Dst, err)
		}
		n++
	}
	return n, nil
}

// isNoEnt: the connection ended between the dump and the delete.
func isNoEnt(err error) bool { return errors.Is(err, unix.ENOENT) }
