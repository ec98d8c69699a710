// Package policies is egress policy for boxes: it compiles every box's
// policy into one nftables table that Paddock owns, applies it atomically,
// and serves the DNS resolver that allowlist boxes must use.
//
// The ruleset is data (Ruleset) with two renderings from the same source:
// nft-style text, compared as golden text in tests, and netlink messages
// (google/nftables), applied in one batch, so a change is all or nothing
// and no rule lives in a table that belongs to Docker or anyone else. The
// first batch (and any after the table went, or when a change cannot be
// made in place) deletes and recreates the table; later ones change only
// the chains and sets that differ (QueueChange), so that a change to one
// box costs about the same with 50 boxes as with one, and the other boxes'
// counters and resolver-learned addresses are left alone. The kernel
// makes a batch that removes anything wait for a grace period (10-12 ms
// here), so a change that can be made by adding only is (a box made, a
// box claimed from the warm pool: change.go).
//
// The table has two halves with one name: a bridge-family half that binds
// every box to its own bridge port, and an inet half that applies policies
// to what the first let through.
//
// The bridge half (hook prerouting, priority -200, frames entering any
// bridge port): a frame from a running box's port is let on only with that
// box's MAC as its source, only as IPv4 with that box's address as source or
// as ARP that speaks for that box's address and MAC. Anything else from it
// (another box's address or MAC, ARP answers for another box, IPv6, VLAN
// tags, any other frame type) is dropped. A frame from any other port that
// speaks from the box subnet, or asks for an address in it (a box that
// started since the last apply, whose port is not yet known), is dropped
// too, so the rules fail closed. (The kernel's bridge meta keys, which
// would name the bridge a port belongs to, are not in every kernel; the
// subnet is what identifies the box network's frames.) So a box's root, even with NET_RAW or NET_ADMIN in its own
// namespace, cannot send as another box and pass that box's policy, nor
// take another box's traffic by ARP; and the source address the inet half
// keys on can be trusted.
//
// What every box gets in the inet half, whatever its policy, in chains
// hooked at forward and input with priority -10 (before Docker's own filter
// rules):
//
//   - new connections into the box subnet from anywhere but the host
//     (paddockd's previews and desktops) are dropped;
//   - IPv6 from boxes is dropped outright (boxes get no IPv6 route anyway);
//   - cloud metadata and host agents are dropped: 169.254.0.0/16 and the
//     addresses other clouds use (100.100.100.200, 168.63.129.16,
//     192.0.0.192);
//   - traffic to any of the host's own addresses, and broadcast or multicast
//     to the host, is dropped, except DNS (udp and tcp 53) to the box
//     network's gateway, where the resolver is, and the credential
//     broker's port there (Network.BrokerPort, tcp);
//   - traffic to other boxes (the box subnet) and DNATed traffic (the host's
//     published ports) is dropped;
//   - in a cluster, traffic to the other servers (their addresses in the
//     cluster, and their box networks: Network.Fence) is dropped, so a box
//     reaches no server's agent, swarm or control-plane ports;
//   - a source address in the box subnet that belongs to no declared box is
//     dropped: the rules fail closed.
//
// Then the policy: allow-all accepts; deny-all drops; an allowlist accepts
// destinations in the box's allowed CIDRs and in its DNS set, to which the
// resolver adds the addresses it answered for allowed names, each with the
// record's TTL. Connections already established are accepted first; when a
// box's policy changes, the Manager deletes the conntrack entries of that
// box's connections the new policy would not allow, so they are cut rather
// than left to finish.
package policies

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
)

// Modes of a policy.
const (
	AllowAll = "allow-all"
	DenyAll  = "deny-all"
	List     = "allowlist"
)

// Policy is what one box may reach.
type Policy struct {
	Mode    string
	Domains []string // with List: "example.com" or "*.example.com"
	CIDRs   []netip.Prefix
}

// Box is a declared box as the firewall sees it.
type Box struct {
	Name   string
	IP     netip.Addr
	Policy Policy
	// Pid is a process of the running box (0 when it is not running); the
	// Manager finds Port and MAC from its network namespace.
	Pid int
	// Port is the host side of the box's link, a port of the box bridge;
	// MAC is the box's own address on that link. A box without a Port has
	// no frames let onto the bridge.
	Port string
	MAC  net.HardwareAddr
}

// Network is the box network.
type Network struct {
	// Table is the name of Paddock's nftables table (family inet).
	Table string
	// Bridge is the box network's interface.
	Bridge string
	// Subnet is the box network's IPv4 prefix; Gateway its address on the host.
	Subnet  netip.Prefix
	Gateway netip.Addr
	// Fence is what no box of this network reaches, whatever its policy,
	// beyond this machine's own addresses: in a cluster, the other
	// servers' addresses and their box networks (Manager.SetFence).
	Fence []netip.Prefix
	// BrokerPort is where the credential broker listens on the gateway
	// (TCP); 0: there is none, and boxes do not reach that port.
	BrokerPort uint16
}

// Match is one condition of a rule.
type Match struct {
	Kind string // see the constants below
	Addr netip.Addr
	Pfx  netip.Prefix
	Name string // interface or set name
	Port uint16
	UDP  bool
	MAC  net.HardwareAddr
	// Value is a number the match compares with (an ether type, a packet
	// type).
	Value uint16
}

// Match kinds.
const (
	IifNot        = "iifname!="
	CtEstRel      = "ct-established"
	NfprotoIPv6   = "ipv6"
	Saddr         = "saddr"
	SaddrPrefix   = "saddr-prefix"
	Daddr         = "daddr"
	DaddrPrefix   = "daddr-prefix"
	Dport         = "dport"
	FibDaddrLocal = "fib-local"
	CtDNAT        = "ct-dnat"
	DaddrInSet    = "daddr-set"
	OifIs         = "oifname=="
	CtNotEstRel   = "ct-not-established"
	PktTypeNot    = "pkttype!="

	// Matches of the bridge half.
	IifIs         = "iifname=="
	EtherSaddrNot = "ether-saddr!="
	EtherType     = "ether-type"
	IPSaddrNot    = "ip-saddr!="
	ArpShaNot     = "arp-sha!="
	ArpSpaNot     = "arp-spa!="
	IPSaddrIn     = "ip-saddr-in"
	ArpSpaIn      = "arp-spa-in"
	ArpTpaIn      = "arp-tpa-in"
)

// Ether types and packet types the rules name.
const (
	EtherIPv4    = 0x0800
	EtherARP     = 0x0806
	PacketToHost = 0 // PACKET_HOST: unicast to this machine's address
)

// Rule is a list of matches, an optional counter, and a verdict: "accept",
// "drop" or "jump CHAIN".
type Rule struct {
	Match   []Match
	Counter bool
	Verdict string
	// Comment names the counter: "box=NAME kind=WHAT".
	Comment string
}

// Chain is a chain of the table; Hook is "forward", "input" or "" (a
// regular chain reached by jump).
type Chain struct {
	Name     string
	Hook     string
	Priority int
	Rules    []Rule
}

// Set is a named set of IPv4 addresses; Timeout sets take elements with a
// timeout (the DNS-learned addresses).
type Set struct {
	Name    string
	Timeout bool
}

// Ruleset is the whole table: its inet half (Sets, Chains) and its bridge
// half (Ports).
type Ruleset struct {
	Table  string
	Sets   []Set
	Chains []Chain
	// Ports are the chains of the bridge-family table of the same name.
	Ports []Chain
}

// Priority of the hook chains: before Docker's filter rules (0).
const Priority = -10

// BridgePriority is the bridge half's: the bridge family's filter priority.
const BridgePriority = -200

// PortChain names the bridge chain of a box's port.
func PortChain(box string) string { return "port-" + box }

// BoxChain names a box's chain; DNSSet its set of resolved addresses.
func BoxChain(box string) string { return "box-" + box }

// DNSSet names the set of addresses the resolver allowed for a box.
func DNSSet(box string) string { return "dns-" + box }

// Drop counter kinds.
const (
	DropHost     = "host"
	DropMetadata = "metadata"
	DropBoxes    = "boxes"
	DropPolicy   = "policy"
	DropIPv6     = "ipv6"
	DropUnknown  = "unknown"
	// DropSpoof counts frames from a box's port with another source (IP,
	// MAC, or an ARP that speaks for another address), and (box "*")
	// packets with a box's source that came in by another device.
	DropSpoof = "spoof"
	// DropFrame counts frames of a type boxes may not send (IPv6, VLAN, ...).
	DropFrame = "frame"
	// DropPort counts frames from a bridge port that is no known box's.
	DropPort = "port"
	// DropInbound counts new connections into the box subnet from outside.
	DropInbound = "inbound"
)

// Metadata is what no box reaches in any mode: link-local (AWS, GCP,
// OpenStack, DigitalOcean, Hetzner metadata) and the other clouds' metadata
// and host-agent addresses (Alibaba, Azure, Oracle).
var Metadata = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("100.100.100.200/32"),
	netip.MustParsePrefix("168.63.129.16/32"),
	netip.MustParsePrefix("192.0.0.192/32"),
}

func counterName(box, kind string) string { return "box=" + box + " kind=" + kind }

// Compile builds the ruleset for a network and its boxes.
func Compile(n Network, boxes []Box) Ruleset {
	// In the order of their addresses: a box claimed from the warm pool
	// keeps its place (see the overlay in change.go). No two boxes have
	// one address, so no packet's verdict depends on the order.
	boxes = append([]Box(nil), boxes...)
	sort.Slice(boxes, func(i, j int) bool {
		if c := boxes[i].IP.Compare(boxes[j].IP); c != 0 {
			return c < 0
		}
		return boxes[i].Name < boxes[j].Name
	})
	rs := Ruleset{Table: n.Table}

	base := func(hook string) Chain {
		c := Chain{Name: hook, Hook: hook, Priority: Priority}
		// A box's address from elsewhere than the bridge (or the host's
		// own loopback) is forged: a machine on the server's network
		// sending as a box, to what takes a box's address for the box
		// (its resolver, the broker), or through the host. The host's
		// reverse-path check, where it is loose or off (Debian's and
		// Ubuntu's defaults), lets it in.
		c.Rules = append(c.Rules, Rule{Match: []Match{{Kind: IifNot, Name: n.Bridge}, {Kind: IifNot, Name: "lo"}, {Kind: SaddrPrefix, Pfx: n.Subnet}},
			Counter: true, Verdict: "drop", Comment: counterName("*", DropSpoof)})
		if hook == "forward" {
			// Routed in from outside: only replies reach a box.
			c.Rules = append(c.Rules, Rule{Match: []Match{{Kind: IifNot, Name: n.Bridge}, {Kind: OifIs, Name: n.Bridge}, {Kind: CtNotEstRel}},
				Counter: true, Verdict: "drop", Comment: counterName("*", DropInbound)})
		}
		c.Rules = append(c.Rules,
			Rule{Match: []Match{{Kind: IifNot, Name: n.Bridge}}, Verdict: "accept"},
			Rule{Match: []Match{{Kind: CtEstRel}}, Verdict: "accept"},
			Rule{Match: []Match{{Kind: NfprotoIPv6}}, Counter: true, Verdict: "drop", Comment: counterName("*", DropIPv6)},
		)
		for _, b := range boxes {
			if b.IP.IsValid() {
				c.Rules = append(c.Rules, Rule{Match: []Match{{Kind: Saddr, Addr: b.IP}}, Verdict: "jump " + BoxChain(b.Name)})
			}
		}
		c.Rules = append(c.Rules, Rule{Counter: true, Verdict: "drop", Comment: counterName("*", DropUnknown)})
		return c
	}
	rs.Chains = append(rs.Chains, base("forward"), base("input"))

	for _, b := range boxes {
		if !b.IP.IsValid() {
			continue
		}
		c := Chain{Name: BoxChain(b.Name)}
		c.Rules = append(c.Rules,
			Rule{Match: []Match{{Kind: Daddr, Addr: n.Gateway}, {Kind: Dport, Port: 53, UDP: true}}, Verdict: "accept"},
			Rule{Match: []Match{{Kind: Daddr, Addr: n.Gateway}, {Kind: Dport, Port: 53}}, Verdict: "accept"},
		)
		if n.BrokerPort != 0 {
			c.Rules = append(c.Rules, Rule{Match: []Match{{Kind: Daddr, Addr: n.Gateway}, {Kind: Dport, Port: n.BrokerPort}}, Verdict: "accept"})
		}
		c.Rules = append(c.Rules,
			Rule{Match: []Match{{Kind: FibDaddrLocal}}, Counter: true, Verdict: "drop", Comment: counterName(b.Name, DropHost)},
			Rule{Match: []Match{{Kind: PktTypeNot, Value: PacketToHost}}, Counter: true, Verdict: "drop", Comment: counterName(b.Name, DropHost)},
		)
		for _, p := range Metadata {
			c.Rules = append(c.Rules, Rule{Match: []Match{{Kind: DaddrPrefix, Pfx: p}}, Counter: true, Verdict: "drop", Comment: counterName(b.Name, DropMetadata)})
		}
		for _, p := range n.Fence {
			c.Rules = append(c.Rules, Rule{Match: []Match{{Kind: DaddrPrefix, Pfx: p}}, Counter: true, Verdict: "drop", Comment: counterName(b.Name, DropHost)})
		}
		c.Rules = append(c.Rules,
			Rule{Match: []Match{{Kind: DaddrPrefix, Pfx: n.Subnet}}, Counter: true, Verdict: "drop", Comment: counterName(b.Name, DropBoxes)},
			Rule{Match: []Match{{Kind: CtDNAT}}, Counter: true, Verdict: "drop", Comment: counterName(b.Name, DropHost)},
		)
		switch b.Policy.Mode {
		case AllowAll:
			c.Rules = append(c.Rules, Rule{Verdict: "accept"})
		case List:
			rs.Sets = append(rs.Sets, Set{Name: DNSSet(b.Name), Timeout: true})
			c.Rules = append(c.Rules, Rule{Match: []Match{{Kind: DaddrInSet, Name: DNSSet(b.Name)}}, Verdict: "accept"})
			for _, p := range b.Policy.CIDRs {
				c.Rules = append(c.Rules, Rule{Match: []Match{{Kind: DaddrPrefix, Pfx: p}}, Verdict: "accept"})
			}
			c.Rules = append(c.Rules, Rule{Counter: true, Verdict: "drop", Comment: counterName(b.Name, DropPolicy)})
		default: // deny-all, and anything unknown: fail closed
			c.Rules = append(c.Rules, Rule{Counter: true, Verdict: "drop", Comment: counterName(b.Name, DropPolicy)})
		}
		rs.Chains = append(rs.Chains, c)
	}
	rs.Ports = compilePorts(n, boxes)
	return rs
}

// compilePorts builds the bridge half: a box's frames pass only from its
// own port, with its own addresses.
func compilePorts(n Network, boxes []Box) []Chain {
	pre := Chain{Name: "ports", Hook: "prerouting", Priority: BridgePriority}
	var chains []Chain
	for _, b := range boxes {
		if b.Port == "" || !b.IP.IsValid() || len(b.MAC) != 6 {
			continue
		}
		pre.Rules = append(pre.Rules, Rule{Match: []Match{{Kind: IifIs, Name: b.Port}}, Verdict: "jump " + PortChain(b.Name)})
		spoof := counterName(b.Name, DropSpoof)
		c := Chain{Name: PortChain(b.Name)}
		c.Rules = append(c.Rules,
			Rule{Match: []Match{{Kind: EtherSaddrNot, MAC: b.MAC}}, Counter: true, Verdict: "drop", Comment: spoof},
			Rule{Match: []Match{{Kind: EtherType, Value: EtherIPv4}, {Kind: IPSaddrNot, Addr: b.IP}}, Counter: true, Verdict: "drop", Comment: spoof},
			Rule{Match: []Match{{Kind: EtherType, Value: EtherIPv4}}, Verdict: "accept"},
			Rule{Match: []Match{{Kind: EtherType, Value: EtherARP}, {Kind: ArpShaNot, MAC: b.MAC}}, Counter: true, Verdict: "drop", Comment: spoof},
			Rule{Match: []Match{{Kind: EtherType, Value: EtherARP}, {Kind: ArpSpaNot, Addr: b.IP}}, Counter: true, Verdict: "drop", Comment: spoof},
			Rule{Match: []Match{{Kind: EtherType, Value: EtherARP}}, Verdict: "accept"},
			Rule{Counter: true, Verdict: "drop", Comment: counterName(b.Name, DropFrame)},
		)
		chains = append(chains, c)
	}
	unknown := counterName("*", DropPort)
	pre.Rules = append(pre.Rules,
		Rule{Match: []Match{{Kind: EtherType, Value: EtherIPv4}, {Kind: IPSaddrIn, Pfx: n.Subnet}}, Counter: true, Verdict: "drop", Comment: unknown},
		Rule{Match: []Match{{Kind: EtherType, Value: EtherARP}, {Kind: ArpSpaIn, Pfx: n.Subnet}}, Counter: true, Verdict: "drop", Comment: unknown},
		Rule{Match: []Match{{Kind: EtherType, Value: EtherARP}, {Kind: ArpTpaIn, Pfx: n.Subnet}}, Counter: true, Verdict: "drop", Comment: unknown},
	)
	return append([]Chain{pre}, chains...)
}

func (m Match) text() string {
	switch m.Kind {
	case IifNot:
		return fmt.Sprintf("iifname != %q", m.Name)
	case CtEstRel:
		return "ct state established,related"
	case NfprotoIPv6:
		return "meta nfproto ipv6"
	case Saddr:
		return "ip saddr " + m.Addr.String()
	case SaddrPrefix:
		return "ip saddr " + m.Pfx.String()
	case Daddr:
		return "ip daddr " + m.Addr.String()
	case DaddrPrefix:
		return "ip daddr " + m.Pfx.String()
	case Dport:
		if m.UDP {
			return fmt.Sprintf("udp dport %d", m.Port)
		}
		return fmt.Sprintf("tcp dport %d", m.Port)
	case FibDaddrLocal:
		return "fib daddr type local"
	case CtDNAT:
		return "ct status dnat"
	case DaddrInSet:
		return "ip daddr @" + m.Name
	case OifIs:
		return fmt.Sprintf("oifname %q", m.Name)
	case CtNotEstRel:
		return "ct state != established,related"
	case PktTypeNot:
		return fmt.Sprintf("meta pkttype != %s", map[uint16]string{PacketToHost: "host"}[m.Value])
	case IPSaddrIn:
		return "ip saddr " + m.Pfx.String()
	case ArpSpaIn:
		return "arp saddr ip " + m.Pfx.String()
	case ArpTpaIn:
		return "arp daddr ip " + m.Pfx.String()
	case IifIs:
		return fmt.Sprintf("iifname %q", m.Name)
	case EtherSaddrNot:
		return "ether saddr != " + m.MAC.String()
	case EtherType:
		return "ether type " + map[uint16]string{EtherIPv4: "ip", EtherARP: "arp"}[m.Value]
	case IPSaddrNot:
		return "ip saddr != " + m.Addr.String()
	case ArpShaNot:
		return "arp saddr ether != " + m.MAC.String()
	case ArpSpaNot:
		return "arp saddr ip != " + m.Addr.String()
	}
	return "?" + m.Kind
}

// String renders the ruleset as nft text.
func (rs Ruleset) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n", rs.Table)
	for _, s := range rs.Sets {
		flags := ""
		if s.Timeout {
			flags = " flags timeout;"
		}
		fmt.Fprintf(&b, "\tset %s { type ipv4_addr;%s }\n", s.Name, flags)
	}
	writeChains(&b, rs.Chains)
	b.WriteString("}\n")
	if len(rs.Ports) > 0 {
		fmt.Fprintf(&b, "table bridge %s {\n", rs.Table)
		writeChains(&b, rs.Ports)
		b.WriteString("}\n")
	}
	return b.String()
}

func writeChains(b *strings.Builder, chains []Chain) {
	for _, c := range chains {
		fmt.Fprintf(b, "\tchain %s {\n", c.Name)
		if c.Hook != "" {
			fmt.Fprintf(b, "\t\ttype filter hook %s priority %d; policy accept;\n", c.Hook, c.Priority)
		}
		for _, r := range c.Rules {
			var parts []string
			for _, m := range r.Match {
				parts = append(parts, m.text())
			}
			if r.Counter {
				parts = append(parts, "counter")
			}
			parts = append(parts, r.Verdict)
			if r.Comment != "" {
				parts = append(parts, fmt.Sprintf("comment %q", r.Comment))
			}
			fmt.Fprintf(b, "\t\t%s\n", strings.Join(parts, " "))
		}
		b.WriteString("\t}\n")
	}
}

// NetworkFor derives the box network of a Paddock instance: the table is
// named after the instance, the bridge "pdk-" and a hash of it (interface
// names have at most 15 bytes), the gateway is the subnet's first address.
func NetworkFor(instance, subnet string) (Network, error) {
	p, err := netip.ParsePrefix(subnet)
	if err != nil || !p.Addr().Is4() || p.Bits() > 29 || p.Masked() != p {
		return Network{}, fmt.Errorf("box network subnet %q: give an IPv4 prefix of /29 or larger, such as 10.213.0.0/16", subnet)
	}
	h := sha256.Sum256([]byte(instance))
	return Network{
		Table:   instance,
		Bridge:  "pdk-" + hex.EncodeToString(h[:4]),
		Subnet:  p,
		Gateway: p.Addr().Next(),
	}, nil
}
