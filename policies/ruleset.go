// Package policies is egress policy for boxes: it compiles every box's
// policy into one nftables table that Paddock owns, applies it atomically,
// and serves the DNS resolver that allowlist boxes must use.
//
// The ruleset is data (Ruleset) with two renderings from the same source:
// nft-style text, compared as golden text in tests, and netlink messages
// (google/nftables), applied in one batch that deletes and recreates the
// table, so a change is all or nothing and no rule lives in a table that
// belongs to Docker or anyone else.
//
// What every box gets, whatever its policy, in chains hooked at forward and
// input with priority -10 (before Docker's own filter rules):
//
//   - IPv6 from boxes is dropped outright (boxes get no IPv6 route anyway);
//   - traffic to 169.254.0.0/16 (cloud metadata, link-local) is dropped;
//   - traffic to any of the host's own addresses is dropped, except DNS
//     (udp and tcp 53) to the box network's gateway, where the resolver is;
//   - traffic to other boxes (the box subnet) and DNATed traffic (the host's
//     published ports) is dropped;
//   - a source address in the box subnet that belongs to no declared box is
//     dropped: the rules fail closed.
//
// Then the policy: allow-all accepts; deny-all drops new connections
// (connections already established may finish: conntrack state
// established,related is accepted first); an allowlist accepts destinations
// in the box's allowed CIDRs and in its DNS set, to which the resolver adds
// the addresses it answered for allowed names, each with the record's TTL.
package policies

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
}

// Match is one condition of a rule.
type Match struct {
	Kind string // see the constants below
	Addr netip.Addr
	Pfx  netip.Prefix
	Name string // interface or set name
	Port uint16
	UDP  bool
}

// Match kinds.
const (
	IifNot        = "iifname!="
	CtEstRel      = "ct-established"
	NfprotoIPv6   = "ipv6"
	Saddr         = "saddr"
	Daddr         = "daddr"
	DaddrPrefix   = "daddr-prefix"
	Dport         = "dport"
	FibDaddrLocal = "fib-local"
	CtDNAT        = "ct-dnat"
	DaddrInSet    = "daddr-set"
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

// Ruleset is the whole table.
type Ruleset struct {
	Table  string
	Sets   []Set
	Chains []Chain
}

// Priority of the hook chains: before Docker's filter rules (0).
const Priority = -10

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
)

func counterName(box, kind string) string { return "box=" + box + " kind=" + kind }

var linkLocal = netip.MustParsePrefix("169.254.0.0/16")

// Compile builds the ruleset for a network and its boxes.
func Compile(n Network, boxes []Box) Ruleset {
	boxes = append([]Box(nil), boxes...)
	sort.Slice(boxes, func(i, j int) bool { return boxes[i].Name < boxes[j].Name })
	rs := Ruleset{Table: n.Table}

	base := func(hook string) Chain {
		c := Chain{Name: hook, Hook: hook, Priority: Priority}
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
			Rule{Match: []Match{{Kind: FibDaddrLocal}}, Counter: true, Verdict: "drop", Comment: counterName(b.Name, DropHost)},
			Rule{Match: []Match{{Kind: DaddrPrefix, Pfx: linkLocal}}, Counter: true, Verdict: "drop", Comment: counterName(b.Name, DropMetadata)},
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
	return rs
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
	for _, c := range rs.Chains {
		fmt.Fprintf(&b, "\tchain %s {\n", c.Name)
		if c.Hook != "" {
			fmt.Fprintf(&b, "\t\ttype filter hook %s priority %d; policy accept;\n", c.Hook, c.Priority)
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
			fmt.Fprintf(&b, "\t\t%s\n", strings.Join(parts, " "))
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
	return b.String()
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
