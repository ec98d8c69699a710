package policies

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/nftables"
)

// Decision is one answer of the resolver to a box.
type Decision struct {
	Time    time.Time `json:"time"`
	Name    string    `json:"name"`
	Allowed bool      `json:"allowed"`
	// Reason says why a name was refused (not allowed, rebinding, ...) or
	// which addresses were let through.
	Reason string `json:"reason"`
}

// Report is what a box's firewall has done.
type Report struct {
	// Drops counts dropped packets by kind: host, metadata, boxes, policy.
	Drops map[string]uint64 `json:"drops"`
	DNS   []Decision        `json:"dns"`
}

const logSize = 200

// MinTTL keeps an allowed address in a box's set at least this long, so a
// record with a TTL of zero can still be connected to.
const MinTTL = 5 * time.Second

// Manager owns the table: it applies the ruleset for the declared boxes,
// keeps the addresses the resolver learned, and the per-box counters and
// DNS log. It is safe for concurrent use.
type Manager struct {
	Net Network
	// Conn makes a netlink connection (one per batch).
	Conn func() (*nftables.Conn, error)

	mu      sync.Mutex
	boxes   map[string]Box
	byIP    map[netip.Addr]string
	learned map[string]map[netip.Addr]time.Time // box → address → expiry
	last    string                              // text of the applied ruleset
	applied Ruleset
	totals  map[string]uint64 // counters carried over table rebuilds
	logs    map[string][]Decision
}

// NewManager makes a manager for a network.
func NewManager(n Network, conn func() (*nftables.Conn, error)) *Manager {
	return &Manager{Net: n, Conn: conn, boxes: map[string]Box{}, byIP: map[netip.Addr]string{},
		learned: map[string]map[netip.Addr]time.Time{}, totals: map[string]uint64{}, logs: map[string][]Decision{}}
}

func samePolicy(a, b Policy) bool {
	return a.Mode == b.Mode && fmt.Sprint(a.Domains) == fmt.Sprint(b.Domains) && fmt.Sprint(a.CIDRs) == fmt.Sprint(b.CIDRs)
}

// Sync applies the ruleset for boxes if it differs from the one in force.
// Addresses learned for a box survive a rebuild unless its policy changed.
func (m *Manager) Sync(boxes []Box) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := map[string]Box{}
	byIP := map[netip.Addr]string{}
	forget := false // addresses the kernel holds must go with a policy change
	for _, b := range boxes {
		next[b.Name] = b
		if b.IP.IsValid() {
			byIP[b.IP] = b.Name
		}
		if old, ok := m.boxes[b.Name]; !ok || !samePolicy(old.Policy, b.Policy) || old.IP != b.IP {
			forget = forget || len(m.learned[b.Name]) > 0
			delete(m.learned, b.Name)
		}
	}
	for name := range m.boxes {
		if _, ok := next[name]; !ok {
			delete(m.learned, name)
			delete(m.logs, name)
		}
	}
	rs := Compile(m.Net, boxes)
	text := rs.String()
	m.boxes, m.byIP = next, byIP
	conn, err := m.Conn()
	if err != nil {
		return err
	}
	if text == m.last && !forget {
		// Unchanged; but if someone removed the table, put it back.
		if ok, err := Exists(conn, m.Net.Table); err != nil || ok {
			return err
		}
		m.last = ""
	}
	if m.last != "" {
		// Counters restart with the new table: carry them over.
		if cs, err := Counters(conn, m.applied); err == nil {
			for k, v := range cs {
				m.totals[k] += v
			}
		}
	}
	elems := map[string][]Element{}
	now := time.Now()
	for box, addrs := range m.learned {
		for a, exp := range addrs {
			if ttl := exp.Sub(now).Round(time.Second); ttl >= time.Second {
				elems[DNSSet(box)] = append(elems[DNSSet(box)], Element{Addr: a, TTL: ttl})
			}
		}
	}
	if err := Apply(conn, rs, elems); err != nil {
		return err
	}
	m.last, m.applied = text, rs
	return nil
}

// Lookup returns the box that has an address.
func (m *Manager) Lookup(ip netip.Addr) (Box, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name, ok := m.byIP[ip]
	if !ok {
		return Box{}, false
	}
	return m.boxes[name], true
}

// Allow lets a box reach addresses for ttl (at least MinTTL).
func (m *Manager) Allow(box string, addrs []netip.Addr, ttl time.Duration) error {
	if ttl < MinTTL {
		ttl = MinTTL
	}
	ttl = ttl.Round(time.Second)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.boxes[box]; !ok || len(addrs) == 0 {
		return nil
	}
	exp := time.Now().Add(ttl)
	if m.learned[box] == nil {
		m.learned[box] = map[netip.Addr]time.Time{}
	}
	var els []Element
	for _, a := range addrs {
		if cur, ok := m.learned[box][a]; !ok || cur.Before(exp) {
			m.learned[box][a] = exp
		}
		els = append(els, Element{Addr: a, TTL: ttl})
	}
	conn, err := m.Conn()
	if err != nil {
		return err
	}
	return AddElements(conn, m.Net.Table, DNSSet(box), els)
}

// Record adds a resolver decision to a box's log.
func (m *Manager) Record(box string, d Decision) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := append(m.logs[box], d)
	if len(l) > logSize {
		l = l[len(l)-logSize:]
	}
	m.logs[box] = l
}

// Report returns a box's drop counters (since the daemon started) and its
// recent DNS decisions.
func (m *Manager) Report(box string) (Report, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := Report{Drops: map[string]uint64{}, DNS: append([]Decision(nil), m.logs[box]...)}
	for _, k := range []string{DropHost, DropMetadata, DropBoxes, DropPolicy} {
		r.Drops[k] = m.totals[counterName(box, k)]
	}
	if m.last == "" {
		return r, nil
	}
	conn, err := m.Conn()
	if err != nil {
		return r, err
	}
	cs, err := Counters(conn, m.applied)
	if err != nil {
		return r, err
	}
	prefix := "box=" + box + " kind="
	for k, v := range cs {
		if kind, ok := strings.CutPrefix(k, prefix); ok {
			r.Drops[kind] += v
		}
	}
	return r, nil
}

// Boxes lists the boxes the manager knows, by name.
func (m *Manager) Boxes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for n := range m.boxes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Cleanup removes Paddock's table.
func (m *Manager) Cleanup() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	conn, err := m.Conn()
	if err != nil {
		return err
	}
	m.last = ""
	return Remove(conn, m.Net.Table)
}
