package policies

import (
	"errors"
	"reflect"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// errReplace says that a change cannot be made in place: the table is
// replaced whole instead.
var errReplace = errors.New("the change needs the table replaced")

// QueueChange adds to conn, without sending, the messages that turn the
// table in force (from) into to, touching only what differs: chains whose
// rules differ are emptied and filled again, new chains and sets are
// made, and those no longer there are removed; the sets named in empty
// are emptied (a box whose policy changed forgets what its resolver
// let it reach). Chains and sets that did not change keep their counters
// and elements. Sending the messages applies all of it in one
// transaction, as Queue does. It returns the chains whose counters
// restart (emptied or removed), so that the caller can read them first.
// A change of a chain's hook or priority, of a set's kind, or one that
// adds or removes the bridge half, is errReplace.
func QueueChange(conn *nftables.Conn, from, to Ruleset, elems map[string][]Element, empty []string) (Ruleset, error) {
	restart, ci, cb, err := planChange(from, to)
	if err != nil {
		return Ruleset{}, err
	}
	inet := &nftables.Table{Name: to.Table, Family: nftables.TableFamilyINet}
	bridge := &nftables.Table{Name: to.Table, Family: nftables.TableFamilyBridge}

	had := map[string]Set{}
	for _, s := range from.Sets {
		had[s.Name] = s
	}
	sets := map[string]*nftables.Set{}
	for _, s := range to.Sets {
		set := &nftables.Set{Table: inet, Name: s.Name, KeyType: nftables.TypeIPAddr, HasTimeout: s.Timeout}
		sets[s.Name] = set
		old, ok := had[s.Name]
		if ok && old.Timeout != s.Timeout {
			return Ruleset{}, errReplace
		}
		if ok {
			continue
		}
		var els []nftables.SetElement
		for _, e := range elems[s.Name] {
			a := e.Addr.As4()
			els = append(els, nftables.SetElement{Key: a[:], Timeout: e.TTL})
		}
		if err := conn.AddSet(set, els); err != nil {
			return Ruleset{}, err
		}
	}
	for _, name := range empty {
		if _, ok := had[name]; ok && sets[name] != nil {
			conn.FlushSet(sets[name])
		}
	}
	if err := queueChainChange(conn, inet, ci, sets); err != nil {
		return Ruleset{}, err
	}
	if err := queueChainChange(conn, bridge, cb, nil); err != nil {
		return Ruleset{}, err
	}
	for _, s := range from.Sets {
		if sets[s.Name] == nil {
			conn.DelSet(&nftables.Set{Table: inet, Name: s.Name})
		}
	}
	return restart, nil
}

// ChangeRestarts names the chains whose counters a change from one
// ruleset to another restarts (see QueueChange), or is errReplace.
func ChangeRestarts(from, to Ruleset) (Ruleset, error) {
	restart, _, _, err := planChange(from, to)
	return restart, err
}

func planChange(from, to Ruleset) (restart Ruleset, inet, bridge chainDiff, err error) {
	if from.Table != to.Table || (len(from.Ports) == 0) != (len(to.Ports) == 0) {
		return restart, inet, bridge, errReplace
	}
	if inet, err = diffChains(from.Chains, to.Chains); err != nil {
		return restart, inet, bridge, err
	}
	if bridge, err = diffChains(from.Ports, to.Ports); err != nil {
		return restart, inet, bridge, err
	}
	restart = Ruleset{Table: to.Table,
		Chains: append(append([]Chain(nil), inet.change...), inet.remove...),
		Ports:  append(append([]Chain(nil), bridge.change...), bridge.remove...)}
	return restart, inet, bridge, nil
}

// chainDiff is what changes between two lists of chains.
type chainDiff struct {
	add, change, remove []Chain
}

func diffChains(from, to []Chain) (chainDiff, error) {
	var d chainDiff
	old := map[string]Chain{}
	for _, c := range from {
		old[c.Name] = c
	}
	seen := map[string]bool{}
	for _, c := range to {
		seen[c.Name] = true
		o, ok := old[c.Name]
		switch {
		case !ok:
			d.add = append(d.add, c)
		case o.Hook != c.Hook || o.Priority != c.Priority:
			return d, errReplace
		case chainText(o) != chainText(c):
			d.change = append(d.change, c)
		}
	}
	for _, c := range from {
		if !seen[c.Name] {
			d.remove = append(d.remove, c)
		}
	}
	return d, nil
}

func chainText(c Chain) string {
	var b strings.Builder
	writeChains(&b, []Chain{c})
	return b.String()
}

// queueChainChange makes the new chains (empty, so that jumps to them
// resolve), empties the changed and removed ones, fills the new and
// changed ones, and then removes the removed ones: nothing jumps to a
// removed chain by then, since every chain that did now jumps elsewhere
// and was emptied too.
func queueChainChange(conn *nftables.Conn, table *nftables.Table, d chainDiff, sets map[string]*nftables.Set) error {
	chains := map[string]*nftables.Chain{}
	for _, c := range d.add {
		ch, err := chainOf(table, c)
		if err != nil {
			return err
		}
		chains[c.Name] = conn.AddChain(ch)
	}
	for _, c := range append(append([]Chain(nil), d.change...), d.remove...) {
		ch := &nftables.Chain{Name: c.Name, Table: table}
		conn.FlushChain(ch)
		chains[c.Name] = ch
	}
	if err := queueRules(conn, table, append(append([]Chain(nil), d.add...), d.change...), chains, sets); err != nil {
		return err
	}
	for _, c := range d.remove {
		conn.DelChain(&nftables.Chain{Name: c.Name, Table: table})
	}
	return nil
}

// The overlay: a change that only adds.
//
// The kernel makes a transaction that removes anything (a rule, a chain, a
// set element) wait for a grace period of RCU before it answers: on the
// test machines a rule added took 4 ms with nft's own start, one removed
// 13-16 ms. A box claimed from the warm pool changes the table in just
// that way, and its answer waited for it: its address and port are the
// pool box's, and its name and policy its own, so the jumps from the
// address and the port go to new chains and the pool box's chains go.
//
// So when every chain that changes only sends a source to a new chain in
// place of another (the same match, another jump; the new chain ends in a
// verdict of its own, as a box's and a port's do), the new jump is put
// just before the old one, which no packet reaches again, and nothing is
// removed: the new chains and sets are made, and the old ones stay,
// reached by nothing. What the overlay left is removed by the next change
// that is not one (Manager.Sync does it a moment later).

// retarget is a jump put before another of the same match in a chain.
type retarget struct {
	chain  string
	rule   Rule   // the new jump
	before string // the chain the old jump goes to
}

// overlay is the add-only way from one ruleset to another, if there is
// one: the ruleset the table holds after it (to, and what of from it only
// shadows), the jumps it puts before others, and the chains and sets it
// makes.
type overlay struct {
	held             Ruleset
	inet, bridge     []retarget
	addInet, addPort []Chain
	addSets          []Set
}

// planOverlay finds the overlay from one ruleset to another; false when
// the change removes or changes anything else.
func planOverlay(from, to Ruleset) (overlay, bool) {
	var o overlay
	_, ci, cb, err := planChange(from, to)
	if err != nil {
		return o, false
	}
	had := map[string]Set{}
	for _, s := range from.Sets {
		had[s.Name] = s
	}
	seen := map[string]bool{}
	o.held = Ruleset{Table: to.Table}
	for _, s := range to.Sets {
		seen[s.Name] = true
		old, ok := had[s.Name]
		if ok && old.Timeout != s.Timeout {
			return o, false
		}
		if !ok {
			o.addSets = append(o.addSets, s)
		}
		o.held.Sets = append(o.held.Sets, s)
	}
	for _, s := range from.Sets {
		if !seen[s.Name] {
			o.held.Sets = append(o.held.Sets, s)
		}
	}
	var ok bool
	if o.held.Chains, o.inet, ok = overlayChains(from.Chains, to.Chains, ci); !ok {
		return o, false
	}
	if o.held.Ports, o.bridge, ok = overlayChains(from.Ports, to.Ports, cb); !ok {
		return o, false
	}
	o.addInet, o.addPort = ci.add, cb.add
	return o, true
}

// overlayChains is the chains of one half after an overlay, and the jumps
// it puts before others; false when a changed chain is not only that.
func overlayChains(from, to []Chain, d chainDiff) ([]Chain, []retarget, bool) {
	added := map[string]Chain{}
	for _, c := range d.add {
		added[c.Name] = c
	}
	old := map[string]Chain{}
	for _, c := range from {
		old[c.Name] = c
	}
	changed := map[string]Chain{}
	var re []retarget
	for _, c := range d.change {
		was := old[c.Name]
		if len(was.Rules) != len(c.Rules) {
			return nil, nil, false
		}
		held := c
		held.Rules = nil
		for i, r := range c.Rules {
			w := was.Rules[i]
			if reflect.DeepEqual(w, r) {
				held.Rules = append(held.Rules, w)
				continue
			}
			target, jump := strings.CutPrefix(r.Verdict, "jump ")
			before, wasJump := strings.CutPrefix(w.Verdict, "jump ")
			t, isNew := added[target]
			if !jump || !wasJump || !isNew || !endsInVerdict(t) || w.Counter != r.Counter || w.Comment != r.Comment || !reflect.DeepEqual(w.Match, r.Match) {
				return nil, nil, false
			}
			held.Rules = append(held.Rules, r, w)
			re = append(re, retarget{chain: c.Name, rule: r, before: before})
		}
		changed[c.Name] = held
	}
	var out []Chain
	for _, c := range to {
		if h, ok := changed[c.Name]; ok {
			c = h
		}
		out = append(out, c)
	}
	return append(out, d.remove...), re, true
}

// endsInVerdict says whether every packet that enters a chain leaves it
// with an accept or a drop (so that a jump after the one to it is never
// taken).
func endsInVerdict(c Chain) bool {
	if len(c.Rules) == 0 {
		return false
	}
	last := c.Rules[len(c.Rules)-1]
	return len(last.Match) == 0 && (last.Verdict == "accept" || last.Verdict == "drop")
}

// queueOverlay adds to conn, without sending, the messages of an overlay
// from the table in force. It first reads the handles of the rules the
// new jumps go before (so conn must be the table's namespace's); false,
// with nothing queued, when one is not found as the ruleset says.
func queueOverlay(conn *nftables.Conn, o overlay, elems map[string][]Element) (bool, error) {
	inet := &nftables.Table{Name: o.held.Table, Family: nftables.TableFamilyINet}
	bridge := &nftables.Table{Name: o.held.Table, Family: nftables.TableFamilyBridge}
	type half struct {
		table   *nftables.Table
		re      []retarget
		handles []uint64 // of the rule each new jump goes before
	}
	halves := []*half{{table: inet, re: o.inet}, {table: bridge, re: o.bridge}}
	for _, h := range halves {
		rules := map[string][]*nftables.Rule{}
		for _, r := range h.re {
			if _, ok := rules[r.chain]; !ok {
				rs, err := conn.GetRules(h.table, &nftables.Chain{Name: r.chain, Table: h.table})
				if err != nil {
					return false, err
				}
				rules[r.chain] = rs
			}
			var found []uint64
			for _, kr := range rules[r.chain] {
				for _, e := range kr.Exprs {
					if v, ok := e.(*expr.Verdict); ok && v.Kind == expr.VerdictJump && v.Chain == r.before {
						found = append(found, kr.Handle)
					}
				}
			}
			if len(found) != 1 {
				return false, nil
			}
			h.handles = append(h.handles, found[0])
		}
	}
	sets := map[string]*nftables.Set{}
	for _, s := range o.held.Sets {
		sets[s.Name] = &nftables.Set{Table: inet, Name: s.Name, KeyType: nftables.TypeIPAddr, HasTimeout: s.Timeout}
	}
	for _, s := range o.addSets {
		var els []nftables.SetElement
		for _, e := range elems[s.Name] {
			a := e.Addr.As4()
			els = append(els, nftables.SetElement{Key: a[:], Timeout: e.TTL})
		}
		if err := conn.AddSet(sets[s.Name], els); err != nil {
			return false, err
		}
	}
	if err := queueChains(conn, inet, o.addInet, sets); err != nil {
		return false, err
	}
	if err := queueChains(conn, bridge, o.addPort, nil); err != nil {
		return false, err
	}
	for _, h := range halves {
		for i, r := range h.re {
			nr, err := ruleOf(h.table, &nftables.Chain{Name: r.chain, Table: h.table}, r.rule, sets)
			if err != nil {
				return false, err
			}
			nr.Position = h.handles[i] // inserted before it
			conn.InsertRule(nr)
		}
	}
	return true, nil
}
