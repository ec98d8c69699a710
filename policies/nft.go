package policies

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Element is a dynamic set element: an address with a time to live.
type Element struct {
	Addr netip.Addr
	TTL  time.Duration
}

func ifname(n string) []byte {
	b := make([]byte, 16)
	copy(b, n+"\x00")
	return b
}

func nfproto4() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}},
	}
}

func daddr() expr.Any {
	return &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4}
}

func (m Match) exprs(sets map[string]*nftables.Set) ([]expr.Any, error) {
	switch m.Kind {
	case IifNot:
		return metaCmp(expr.MetaKeyIIFNAME, expr.CmpOpNeq, ifname(m.Name)), nil
	case CtEstRel:
		return ctBits(expr.CtKeySTATE, expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED, expr.CmpOpNeq), nil
	case NfprotoIPv6:
		return metaCmp(expr.MetaKeyNFPROTO, expr.CmpOpEq, []byte{unix.NFPROTO_IPV6}), nil
	case Saddr:
		a := m.Addr.As4()
		return append(nfproto4(),
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a[:]}), nil
	case SaddrPrefix:
		return append(nfproto4(), prefixAt(12, m.Pfx)...), nil
	case Daddr:
		a := m.Addr.As4()
		return append(nfproto4(), daddr(), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a[:]}), nil
	case DaddrPrefix:
		return append(nfproto4(), prefixAt(16, m.Pfx)...), nil
	case Dport:
		proto := byte(unix.IPPROTO_TCP)
		if m.UDP {
			proto = unix.IPPROTO_UDP
		}
		return []expr.Any{
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(m.Port)},
		}, nil
	case FibDaddrLocal:
		return []expr.Any{
			&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(unix.RTN_LOCAL)},
		}, nil
	case CtDNAT:
		return ctBits(expr.CtKeySTATUS, 0x20, expr.CmpOpNeq), nil // IPS_DST_NAT
	case OifIs:
		return metaCmp(expr.MetaKeyOIFNAME, expr.CmpOpEq, ifname(m.Name)), nil
	case CtNotEstRel:
		return ctBits(expr.CtKeySTATE, expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED, expr.CmpOpEq), nil
	case PktTypeNot:
		return metaCmp(expr.MetaKeyPKTTYPE, expr.CmpOpNeq, []byte{byte(m.Value)}), nil
	case IPSaddrIn:
		return prefixAt(12, m.Pfx), nil
	case ArpSpaIn:
		return prefixAt(14, m.Pfx), nil
	case ArpTpaIn:
		return prefixAt(24, m.Pfx), nil
	case IifIs:
		return metaCmp(expr.MetaKeyIIFNAME, expr.CmpOpEq, ifname(m.Name)), nil
	case EtherSaddrNot:
		return payloadNeq(expr.PayloadBaseLLHeader, 6, m.MAC), nil
	case EtherType:
		return []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseLLHeader, Offset: 12, Len: 2},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(m.Value)},
		}, nil
	case IPSaddrNot:
		a := m.Addr.As4()
		return payloadNeq(expr.PayloadBaseNetworkHeader, 12, a[:]), nil
	case ArpShaNot:
		return payloadNeq(expr.PayloadBaseNetworkHeader, 8, m.MAC), nil
	case ArpSpaNot:
		a := m.Addr.As4()
		return payloadNeq(expr.PayloadBaseNetworkHeader, 14, a[:]), nil
	case DaddrInSet:
		s := sets[m.Name]
		if s == nil {
			return nil, fmt.Errorf("rule refers to unknown set %q", m.Name)
		}
		return append(nfproto4(), daddr(), &expr.Lookup{SourceRegister: 1, SetName: s.Name, SetID: s.ID}), nil
	}
	return nil, fmt.Errorf("unknown match %q", m.Kind)
}

// metaCmp compares a meta key with data.
func metaCmp(key expr.MetaKey, op expr.CmpOp, data []byte) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: key, Register: 1},
		&expr.Cmp{Op: op, Register: 1, Data: data},
	}
}

// ctBits compares the bits mask of a conntrack key with zero.
func ctBits(key expr.CtKey, mask uint32, op expr.CmpOp) []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: key},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(mask),
			Xor:  binaryutil.NativeEndian.PutUint32(0)},
		&expr.Cmp{Op: op, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)},
	}
}

// prefixAt matches when the IPv4 address at offset of the network header
// is in p.
func prefixAt(offset uint32, p netip.Prefix) []expr.Any {
	a := p.Masked().Addr().As4()
	mask := make([]byte, 4)
	binary.BigEndian.PutUint32(mask, ^uint32(0)<<(32-p.Bits()))
	if p.Bits() == 0 {
		mask = []byte{0, 0, 0, 0}
	}
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: mask, Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a[:]},
	}
}

// payloadNeq matches when the bytes at offset of base differ from want.
func payloadNeq(base expr.PayloadBase, offset uint32, want []byte) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: base, Offset: offset, Len: uint32(len(want))},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: append([]byte(nil), want...)},
	}
}

func verdict(v string) (*expr.Verdict, error) {
	switch {
	case v == "accept":
		return &expr.Verdict{Kind: expr.VerdictAccept}, nil
	case v == "drop":
		return &expr.Verdict{Kind: expr.VerdictDrop}, nil
	case strings.HasPrefix(v, "jump "):
		return &expr.Verdict{Kind: expr.VerdictJump, Chain: strings.TrimPrefix(v, "jump ")}, nil
	}
	return nil, fmt.Errorf("unknown verdict %q", v)
}

// Queue adds to conn, without sending, the messages that replace the table
// with rs, with the given dynamic elements in its sets. Sending them
// (conn.Flush) applies all of it in one transaction.
func Queue(conn *nftables.Conn, rs Ruleset, elems map[string][]Element) error {
	table := &nftables.Table{Name: rs.Table, Family: nftables.TableFamilyINet}
	// Add (a no-op if it exists), delete, add: the table is replaced
	// whether or not it was there, within the one batch.
	conn.AddTable(table)
	conn.DelTable(table)
	conn.AddTable(table)

	sets := setsOf(table, rs.Sets)
	for _, s := range rs.Sets {
		if err := conn.AddSet(sets[s.Name], netlinkElements(elems[s.Name])); err != nil {
			return fmt.Errorf("set %s: %w", s.Name, err)
		}
	}
	if err := queueChains(conn, table, rs.Chains, sets); err != nil {
		return err
	}
	bridge := &nftables.Table{Name: rs.Table, Family: nftables.TableFamilyBridge}
	conn.AddTable(bridge)
	conn.DelTable(bridge)
	if len(rs.Ports) > 0 {
		conn.AddTable(bridge)
		return queueChains(conn, bridge, rs.Ports, nil)
	}
	return nil
}

var hooks = map[string]*nftables.ChainHook{
	"forward":    nftables.ChainHookForward,
	"input":      nftables.ChainHookInput,
	"prerouting": nftables.ChainHookPrerouting,
}

func queueChains(conn *nftables.Conn, table *nftables.Table, cs []Chain, sets map[string]*nftables.Set) error {
	chains := map[string]*nftables.Chain{}
	for _, c := range cs {
		ch, err := chainOf(table, c)
		if err != nil {
			return err
		}
		chains[c.Name] = conn.AddChain(ch)
	}
	return queueRules(conn, table, cs, chains, sets)
}

// chainOf is the netlink form of a chain (with its hook, for a base chain).
func chainOf(table *nftables.Table, c Chain) (*nftables.Chain, error) {
	ch := &nftables.Chain{Name: c.Name, Table: table}
	if c.Hook != "" {
		hook := hooks[c.Hook]
		if hook == nil {
			return nil, fmt.Errorf("chain %s: unknown hook %q", c.Name, c.Hook)
		}
		policy := nftables.ChainPolicyAccept
		ch.Hooknum, ch.Priority, ch.Type, ch.Policy = hook, nftables.ChainPriorityRef(nftables.ChainPriority(c.Priority)), nftables.ChainTypeFilter, &policy
	}
	return ch, nil
}

// queueRules adds the rules of cs to their chains (by name in chains).
func queueRules(conn *nftables.Conn, table *nftables.Table, cs []Chain, chains map[string]*nftables.Chain, sets map[string]*nftables.Set) error {
	for _, c := range cs {
		for _, r := range c.Rules {
			rule, err := ruleOf(table, chains[c.Name], r, sets)
			if err != nil {
				return err
			}
			conn.AddRule(rule)
		}
	}
	return nil
}

// ruleOf is the netlink form of a rule of a chain.
func ruleOf(table *nftables.Table, chain *nftables.Chain, r Rule, sets map[string]*nftables.Set) (*nftables.Rule, error) {
	var exprs []expr.Any
	for _, m := range r.Match {
		e, err := m.exprs(sets)
		if err != nil {
			return nil, err
		}
		exprs = append(exprs, e...)
	}
	if r.Counter {
		exprs = append(exprs, &expr.Counter{})
	}
	v, err := verdict(r.Verdict)
	if err != nil {
		return nil, err
	}
	exprs = append(exprs, v)
	rule := &nftables.Rule{Table: table, Chain: chain, Exprs: exprs}
	if r.Comment != "" {
		rule.UserData = userdata.AppendString(nil, userdata.TypeComment, r.Comment)
	}
	return rule, nil
}

// Apply replaces the table with rs in one transaction.
func Apply(conn *nftables.Conn, rs Ruleset, elems map[string][]Element) error {
	if err := Queue(conn, rs, elems); err != nil {
		return err
	}
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("applying nftables table %s: %w", rs.Table, err)
	}
	return nil
}

// AddElements adds addresses with timeouts to a set of the table.
func AddElements(conn *nftables.Conn, table, set string, els []Element) error {
	s := &nftables.Set{Table: &nftables.Table{Name: table, Family: nftables.TableFamilyINet}, Name: set, KeyType: nftables.TypeIPAddr, HasTimeout: true}
	if err := conn.SetAddElements(s, netlinkElements(els)); err != nil {
		return err
	}
	return conn.Flush()
}

// netlinkElements is the netlink form of set elements.
func netlinkElements(els []Element) []nftables.SetElement {
	var ne []nftables.SetElement
	for _, e := range els {
		a := e.Addr.As4()
		ne = append(ne, nftables.SetElement{Key: a[:], Timeout: e.TTL})
	}
	return ne
}

// Remove deletes both halves of the table if they exist.
func Remove(conn *nftables.Conn, table string) error {
	for _, f := range []nftables.TableFamily{nftables.TableFamilyINet, nftables.TableFamilyBridge} {
		t := &nftables.Table{Name: table, Family: f}
		conn.AddTable(t)
		conn.DelTable(t)
	}
	return conn.Flush()
}

// Exists reports whether the table is in the kernel: both halves.
func Exists(conn *nftables.Conn, table string) (bool, error) {
	for _, f := range []nftables.TableFamily{nftables.TableFamilyINet, nftables.TableFamilyBridge} {
		ok, err := existsFamily(conn, table, f)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func existsFamily(conn *nftables.Conn, table string, f nftables.TableFamily) (bool, error) {
	_, err := conn.ListTableOfFamily(table, f)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	ts, lerr := conn.ListTablesOfFamily(f)
	if lerr != nil {
		return false, err
	}
	for _, t := range ts {
		if t.Name == table {
			return true, nil
		}
	}
	return false, nil
}

// Counters reads the packet counts of the table's commented counters, by
// comment ("box=NAME kind=WHAT").
func Counters(conn *nftables.Conn, rs Ruleset) (map[string]uint64, error) {
	out := map[string]uint64{}
	if err := countChains(conn, &nftables.Table{Name: rs.Table, Family: nftables.TableFamilyINet}, rs.Chains, out); err != nil {
		return nil, err
	}
	if err := countChains(conn, &nftables.Table{Name: rs.Table, Family: nftables.TableFamilyBridge}, rs.Ports, out); err != nil {
		return nil, err
	}
	return out, nil
}

func countChains(conn *nftables.Conn, table *nftables.Table, chains []Chain, out map[string]uint64) error {
	for _, c := range chains {
		rules, err := conn.GetRules(table, &nftables.Chain{Name: c.Name, Table: table})
		if err != nil {
			return err
		}
		for _, r := range rules {
			name, ok := userdata.GetString(r.UserData, userdata.TypeComment)
			if !ok {
				continue
			}
			for _, e := range r.Exprs {
				if ctr, ok := e.(*expr.Counter); ok {
					out[name] += ctr.Packets
				}
			}
		}
	}
	return nil
}

// Dial opens a netlink connection for a batch. With many boxes a batch is
// larger than the default socket buffers: the request does not fit
// (EMSGSIZE) and its acknowledgements overflow (ENOBUFS). So the buffers
// are raised (root may exceed the sysctl limits) and acknowledgements come
// without the echoed request.
func Dial(opts ...nftables.ConnOption) (*nftables.Conn, error) {
	opts = append(opts, nftables.WithSockOptions(func(c *netlink.Conn) error {
		if err := c.SetOption(netlink.CapAcknowledge, true); err != nil {
			return err
		}
		rc, err := c.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		err = rc.Control(func(fd uintptr) {
			for _, opt := range []int{unix.SO_SNDBUFFORCE, unix.SO_RCVBUFFORCE} {
				if e := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, 32<<20); e != nil {
					serr = e
				}
			}
		})
		if err != nil {
			return err
		}
		return serr
	}))
	return nftables.New(opts...)
}
