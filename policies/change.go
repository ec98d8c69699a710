package policies

import (
	"errors"
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
