package policies

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
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
	// Ports finds a running box's bridge port and MAC from one of its
	// processes (PortOf; tests replace it).
	Ports func(pid int) (string, net.HardwareAddr, error)
	// Cut deletes a box's tracked connections that keep refuses (Cut;
	// tests replace it).
	Cut func(src netip.Addr, keep func(netip.Addr) bool) (int, error)
	// Log, when set, hears of a running box whose port cannot be found
	// (its frames stay dropped).
	Log func(msg string, args ...any)

	mu      sync.Mutex
	boxes   map[string]Box
	byIP    map[netip.Addr]string
	learned map[string]map[netip.Addr]time.Time // box → address → expiry
	last    string                              // text of the applied ruleset
	applied Ruleset
	totals  map[string]uint64 // counters carried over table rebuilds
	logs    map[string][]Decision
	ports   map[int]port // by pid
	// fenced is set when the fence changed since the last Sync: the
	// connections it now refuses are cut there.
	fenced bool
	// syncs counts the Syncs; a tidy after an overlay is dropped if
	// another came since.
	syncs uint64
}

// TidyAfter is how long after a change made by adding only (see
// change.go) the Manager removes what it left, unless another change did
// first. The removal waits for the kernel's grace period; a claim's answer
// does not.
var TidyAfter = 2 * time.Second

type port struct {
	name string
	mac  net.HardwareAddr
}

// NewManager makes a manager for a network.
func NewManager(n Network, conn func() (*nftables.Conn, error)) *Manager {
	return &Manager{Net: n, Conn: conn, boxes: map[string]Box{}, byIP: map[netip.Addr]string{},
		learned: map[string]map[netip.Addr]time.Time{}, totals: map[string]uint64{}, logs: map[string][]Decision{},
		ports: map[int]port{},
		Ports: func(pid int) (string, net.HardwareAddr, error) { return PortOf(pid, "eth0") },
		Cut:   Cut}
}

// SetFence sets what no box reaches besides this machine (Network.Fence);
// the next Sync applies it, and cuts the boxes' connections it refuses.
func (m *Manager) SetFence(fence []netip.Prefix) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if slices.Equal(m.Net.Fence, fence) {
		return
	}
	m.Net.Fence = slices.Clone(fence)
	m.fenced = true
}

// resolvePorts fills in Port and MAC of the boxes that run, from a cache by
// pid (a restarted box has a new pid, and so a fresh look-up).
func (m *Manager) resolvePorts(boxes []Box) []Box {
	out := make([]Box, len(boxes))
	seen := map[int]bool{}
	for i, b := range boxes {
		out[i] = b
		if b.Pid <= 0 || b.Port != "" {
			continue
		}
		seen[b.Pid] = true
		p, ok := m.ports[b.Pid]
		if !ok {
			name, mac, err := m.Ports(b.Pid)
			if err != nil {
				if m.Log != nil {
					m.Log("box port not found; its frames are dropped", "box", b.Name, "pid", b.Pid, "err", err)
				}
				continue
			}
			p = port{name, mac}
			m.ports[b.Pid] = p
		}
		out[i].Port, out[i].MAC = p.name, p.mac
	}
	for pid := range m.ports {
		if !seen[pid] {
			delete(m.ports, pid)
		}
	}
	return out
}

// allows says whether a policy lets a box keep a connection to dst once
// the addresses the resolver had learned are forgotten.
func (p Policy) allows(dst netip.Addr) bool {
	switch p.Mode {
	case AllowAll:
		return true
	case List:
		for _, c := range p.CIDRs {
			if c.Contains(dst) {
				return true
			}
		}
	}
	return false
}

func samePolicy(a, b Policy) bool {
	return a.Mode == b.Mode && fmt.Sprint(a.Domains) == fmt.Sprint(b.Domains) && fmt.Sprint(a.CIDRs) == fmt.Sprint(b.CIDRs)
}

// Sync applies the ruleset for boxes if it differs from the one in force.
// Addresses learned for a box survive a rebuild unless its policy changed.
func (m *Manager) Sync(boxes []Box) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sync(boxes, true)
}

// tidy removes what an overlay left, if no Sync came since the one that
// made it (number n).
func (m *Manager) tidy(n uint64, boxes []Box) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.syncs != n {
		return
	}
	if err := m.sync(boxes, false); err != nil && m.Log != nil {
		m.Log("removing what a change left in the firewall table failed; the next change does it", "err", err)
	}
}

// sync is Sync, as an overlay when it can be one and overlays are allowed.
func (m *Manager) sync(boxes []Box, overlays bool) error {
	m.syncs++
	boxes = m.resolvePorts(boxes)
	next := map[string]Box{}
	byIP := map[netip.Addr]string{}
	var emptied []string // sets whose addresses must go with a policy change
	var changed []Box    // running boxes whose policy changed: cut what it no longer allows
	for _, b := range boxes {
		next[b.Name] = b
		if b.IP.IsValid() {
			byIP[b.IP] = b.Name
		}
		if old, ok := m.boxes[b.Name]; !ok || !samePolicy(old.Policy, b.Policy) || old.IP != b.IP {
			if len(m.learned[b.Name]) > 0 {
				emptied = append(emptied, DNSSet(b.Name))
			}
			delete(m.learned, b.Name)
			if ok && old.IP == b.IP && b.IP.IsValid() && b.Policy.Mode != AllowAll {
				changed = append(changed, b)
			}
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
	if text == m.last && len(emptied) == 0 {
		// Unchanged; but if someone removed the table, put it back.
		if ok, err := Exists(conn, m.Net.Table); err != nil || ok {
			return err
		}
		m.last = ""
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
	if overlays && m.last != "" && len(emptied) == 0 && len(changed) == 0 && !m.fenced {
		if o, ok := planOverlay(m.applied, rs); ok {
			done, err := queueOverlay(conn, o, elems)
			if err == nil && done {
				if err = conn.Flush(); err == nil {
					m.last, m.applied = o.held.String(), o.held
					if m.last != text { // something is left to remove
						n := m.syncs
						time.AfterFunc(TidyAfter, func() { m.tidy(n, boxes) })
					}
					return nil
				}
			}
			// Not done: nothing was queued. Failed: a fresh batch.
			if err != nil {
				if m.Log != nil {
					m.Log("changing the firewall table by adding only failed; changing it in place", "err", err)
				}
				if conn, err = m.Conn(); err != nil {
					return err
				}
			}
		}
	}
	if err := m.apply(conn, rs, elems, emptied); err != nil {
		return err
	}
	m.last, m.applied = text, rs
	if m.fenced {
		m.fenced = false
		fence := m.Net.Fence
		keep := func(dst netip.Addr) bool {
			for _, p := range fence {
				if p.Contains(dst) {
					return false
				}
			}
			return true
		}
		for _, b := range boxes {
			if b.IP.IsValid() && b.Pid != 0 {
				if _, err := m.Cut(b.IP, keep); err != nil {
					return fmt.Errorf("cutting connections of box %s to the cluster's servers: %w", b.Name, err)
				}
			}
		}
	}
	for _, b := range changed {
		gw := m.Net.Gateway
		keep := func(dst netip.Addr) bool { return dst == gw || b.Policy.allows(dst) }
		if _, err := m.Cut(b.IP, keep); err != nil {
			return fmt.Errorf("cutting connections of box %s after its policy changed: %w", b.Name, err)
		}
	}
	return nil
}

// apply puts rs in force: in place when a table is (only what changed,
// in one transaction), else, or if that fails, by replacing the table
// whole. Counters of chains that restart are carried over.
func (m *Manager) apply(conn *nftables.Conn, rs Ruleset, elems map[string][]Element, emptied []string) error {
	if m.last != "" {
		err := m.change(conn, rs, elems, emptied)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errReplace) && m.Log != nil {
			m.Log("changing the firewall table in place failed; replacing it", "err", err)
		}
		if conn, err = m.Conn(); err != nil { // a fresh batch
			return err
		}
		// Counters restart with the new table: carry them over.
		if cs, err := Counters(conn, m.applied); err == nil {
			for k, v := range cs {
				m.totals[k] += v
			}
		}
	}
	return Apply(conn, rs, elems)
}

// change applies what differs between the table in force and rs.
func (m *Manager) change(conn *nftables.Conn, rs Ruleset, elems map[string][]Element, emptied []string) error {
	restart, err := ChangeRestarts(m.applied, rs)
	if err != nil {
		return err
	}
	carry, err := Counters(conn, restart)
	if err != nil {
		return err
	}
	if _, err := QueueChange(conn, m.applied, rs, elems, emptied); err != nil {
		return err
	}
	if err := conn.Flush(); err != nil {
		return err
	}
	for k, v := range carry {
		m.totals[k] += v
	}
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
	for _, k := range []string{DropHost, DropMetadata, DropBoxes, DropPolicy, DropSpoof, DropFrame} {
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
	m.syncs++ // no tidy puts it back
	return Remove(conn, m.Net.Table)
}
