package policies

import (
	"errors"
	"reflect"
	"slices"
	"strings"

	"github.com/google/nftables"
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

	added, ok := newSets(from, to)
	if !ok {
		return Ruleset{}, errReplace
	}
	sets := setsOf(inet, to.Sets)
	for _, s := range added {
		if err := conn.AddSet(sets[s.Name], netlinkElements(elems[s.Name])); err != nil {
			return Ruleset{}, err
		}
	}
	isNew := map[string]bool{}
	for _, s := range added {
		isNew[s.Name] = true
	}
	for _, name := range empty {
		if sets[name] != nil && !isNew[name] {
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

// newSets is the sets of to that from does not have; false when a set
// of both changed its kind.
func newSets(from, to Ruleset) ([]Set, bool) {
	had := map[string]Set{}
	for _, s := range from.Sets {
		had[s.Name] = s
	}
	var added []Set
	for _, s := range to.Sets {
		old, ok := had[s.Name]
		if ok && old.Timeout != s.Timeout {
			return nil, false
		}
		if !ok {
			added = append(added, s)
		}
	}
	return added, true
}

// setsOf is the netlink form of the sets of a table, by name.
func setsOf(table *nftables.Table, ss []Set) map[string]*nftables.Set {
	sets := map[string]*nftables.Set{}
	for _, s := range ss {
		sets[s.Name] = &nftables.Set{Table: table, Name: s.Name, KeyType: nftables.TypeIPAddr, HasTimeout: s.Timeout}
	}
	return sets
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
// 13-16 ms. A change that empties a chain to fill it again pays that too,
// and boxes wait for such changes: a box made has its jumps put among the
// others (its address, then its port once it runs), and a box claimed
// from the warm pool changes the table in just that way (its address and
// port are the pool box's, and its name and policy its own, so the jumps
// from the address and the port go to new chains and the pool box's go).
//
// So a change is made by adding only when it can be:
//   - a chain whose new rules are its old ones with others among them
//     gets those, each put where it goes: the chain is then as the new
//     ruleset says;
//   - a chain whose new rules only send some sources to new chains in
//     place of others (the same match, another jump; the new chain ends in
//     a verdict of its own, as a box's and a port's do) gets each new jump
//     just before the old one, which no packet reaches again;
//   - new chains and sets are made; those no longer there stay, reached
//     by nothing but the jumps passed over.
// What such a change leaves is removed by the next change that is not of
// that kind (Manager.Sync makes one a moment later).

// insert is a rule put into a chain that is kept: before its rule at
// index before (of the chain in force, of length rules), or last when
// before is -1.
type insert struct {
	chain  string
	rule   Rule
	before int
	rules  int
}

// overlay is the add-only way from one ruleset to another, if there is
// one: the ruleset the table holds after it (to, and what of from it only
// passes over), the rules it puts into chains that are kept, and the
// chains and sets it makes.
type overlay struct {
	held             Ruleset
	inet, bridge     []insert
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
	var ok bool
	if o.addSets, ok = newSets(from, to); !ok {
		return o, false
	}
	o.held = Ruleset{Table: to.Table, Sets: slices.Clone(to.Sets)}
	for _, s := range from.Sets {
		if !slices.ContainsFunc(to.Sets, func(t Set) bool { return t.Name == s.Name }) {
			o.held.Sets = append(o.held.Sets, s) // left, reached by nothing
		}
	}
	if o.held.Chains, o.inet, ok = overlayChains(from.Chains, to.Chains, ci); !ok {
		return o, false
	}
	if o.held.Ports, o.bridge, ok = overlayChains(from.Ports, to.Ports, cb); !ok {
		return o, false
	}
	o.addInet, o.addPort = ci.add, cb.add
	return o, true
}

// overlayChains is the chains of one half after an overlay, and the rules
// it puts into kept chains; false when a changed chain takes more than
// that.
func overlayChains(from, to []Chain, d chainDiff) ([]Chain, []insert, bool) {
	added := map[string]Chain{}
	for _, c := range d.add {
		added[c.Name] = c
	}
	old := map[string]Chain{}
	for _, c := range from {
		old[c.Name] = c
	}
	changed := map[string]Chain{}
	var ins []insert
	for _, c := range d.change {
		was := old[c.Name]
		if more, ok := inserted(c.Name, was.Rules, c.Rules); ok {
			ins = append(ins, more...)
			continue // the chain is then as to says
		}
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
			_, wasJump := strings.CutPrefix(w.Verdict, "jump ")
			t, isNew := added[target]
			if !jump || !wasJump || !isNew || !endsInVerdict(t) || w.Counter != r.Counter || w.Comment != r.Comment || !reflect.DeepEqual(w.Match, r.Match) {
				return nil, nil, false
			}
			held.Rules = append(held.Rules, r, w)
			ins = append(ins, insert{chain: c.Name, rule: r, before: i, rules: len(was.Rules)})
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
	return append(out, d.remove...), ins, true
}

// inserted is what turns the rules was into now by inserting only, if
// was is a subsequence of now.
func inserted(chain string, was, now []Rule) ([]insert, bool) {
	var ins []insert
	j := 0
	for _, r := range now {
		if j < len(was) && reflect.DeepEqual(was[j], r) {
			j++
			continue
		}
		before := j
		if j == len(was) {
			before = -1
		}
		ins = append(ins, insert{chain: chain, rule: r, before: before, rules: len(was)})
	}
	return ins, j == len(was)
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
// from the table in force. It first reads the handles of the rules that
// new ones go before (so conn must be the table's namespace's); false,
// with nothing queued, when a chain in the kernel is not as long as the
// ruleset in force says.
func queueOverlay(conn *nftables.Conn, o overlay, elems map[string][]Element) (bool, error) {
	inet := &nftables.Table{Name: o.held.Table, Family: nftables.TableFamilyINet}
	bridge := &nftables.Table{Name: o.held.Table, Family: nftables.TableFamilyBridge}
	type half struct {
		table   *nftables.Table
		ins     []insert
		handles []uint64 // of the rule each goes before (0: last)
	}
	halves := []*half{{table: inet, ins: o.inet}, {table: bridge, ins: o.bridge}}
	for _, h := range halves {
		rules := map[string][]*nftables.Rule{}
		for _, in := range h.ins {
			rs, ok := rules[in.chain]
			if !ok {
				var err error
				rs, err = conn.GetRules(h.table, &nftables.Chain{Name: in.chain, Table: h.table})
				if err != nil {
					return false, err
				}
				if len(rs) != in.rules {
					return false, nil
				}
				rules[in.chain] = rs
			}
			var handle uint64
			if in.before >= 0 {
				handle = rs[in.before].Handle
			}
			h.handles = append(h.handles, handle)
		}
	}
	sets := setsOf(inet, o.held.Sets)
	for _, s := range o.addSets {
		if err := conn.AddSet(sets[s.Name], netlinkElements(elems[s.Name])); err != nil {
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
		for i, in := range h.ins {
			nr, err := ruleOf(h.table, &nftables.Chain{Name: in.chain, Table: h.table}, in.rule, sets)
			if err != nil {
				return false, err
			}
			if h.handles[i] == 0 {
				conn.AddRule(nr) // last
				continue
			}
			nr.Position = h.handles[i] // inserted before it
			conn.InsertRule(nr)
		}
	}
	return true, nil
}
