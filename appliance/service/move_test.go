package service

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
)

// answerExecs makes the nodes' fake drivers answer every command in a
// box that runs (the pool's readiness probe), and fail in one that does
// not.
func answerExecs(nodes map[string]*fakeNode) {
	for _, n := range nodes {
		drv := n.Driver
		drv.ExecFunc = func(box string, _ driver.ExecSpec) (int, error) {
			if drv.Hostname(box) == "" {
				return -1, fmt.Errorf("%w: box %s does not run", driver.ErrNotFound, box)
			}
			return 0, nil
		}
	}
}

// A box asked for on a server takes a pool box of that server, if it has
// one ready, and is made cold there if not; never a pool box elsewhere.
func TestPoolClaimOnTheServerAsked(t *testing.T) {
	s, nodes := clustered(t)
	s.Cfg.WarmPool = map[string]int{"small": 3}
	s.Cfg.DesktopDefault = false
	answerExecs(nodes)
	fillPool(t, s, 3)
	pool, _ := s.Store.ListPool()
	on := map[string]string{}
	for _, p := range pool {
		on[p.Node] = p.Key
	}
	if len(on) < 2 {
		t.Fatalf("the pool is on %d server(s): %v", len(on), on)
	}
	ctx := context.Background()
	for i, n := range []string{"n2", "n3"} {
		name := fmt.Sprintf("x%d", i)
		if _, err := s.CreateBox(ctx, api.BoxPost{Name: name, Node: n}); err != nil {
			t.Fatal(err)
		}
		b, _ := s.Store.GetBox(name)
		if b.Node != n {
			t.Fatalf("box %s asked for on %s is on %q", name, n, b.Node)
		}
		if key, ok := on[n]; ok && b.Engine != key {
			t.Fatalf("box %s asked for on %s: engine name %q, not %s's pool box %s", name, n, b.Engine, n, key)
		}
		if _, ok := on[n]; !ok && b.Engine != "" {
			t.Fatalf("box %s asked for on %s took pool box %q of another server", name, n, b.Engine)
		}
	}
}

// A server's own warm pool is kept on it, beside warm_pool's (which goes
// where there is most room): a pool box counts first towards its server's
// own pool; a box asked for on that server is claimed from it; a drained
// server's own pool is not made; 0 keeps none there; and what cannot be
// a pool (a type there is not, a count out of bounds, a server there is
// not) is refused and changes nothing.
func TestOwnPoolIsKeptOnItsServer(t *testing.T) {
	s, nodes := clustered(t)
	s.Cfg.WarmPool = map[string]int{"small": 1}
	s.Cfg.DesktopDefault = false
	answerExecs(nodes)
	ctx := context.Background()
	onN3 := func() int {
		pool, _ := s.Store.ListPool()
		n := 0
		for _, p := range pool {
			if p.Node == "n3" {
				n++
			}
		}
		return n
	}
	for _, bad := range []struct {
		node string
		pool map[string]int
		says string
	}{
		{"n3", map[string]int{"huge": 1}, `no box type "huge"`},
		{"n3", map[string]int{"small": -1}, "from 0 to"},
		{"n3", map[string]int{"small": 21}, "from 0 to"},
		{"n9", map[string]int{"small": 1}, "n9"},
	} {
		if _, err := servers(s).SetPool(ctx, bad.node, bad.pool); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Fatalf("SetNodePool %s %v: %v, want an error saying %q", bad.node, bad.pool, err, bad.says)
		}
	}
	if own, _ := s.Store.NodePools(); len(own) != 0 {
		t.Fatalf("refused pools were kept: %v", own)
	}
	n, err := servers(s).SetPool(ctx, "n3", map[string]int{"small": 2})
	if err != nil || n.OwnPool["small"] != 2 {
		t.Fatalf("SetNodePool n3 small=2: %+v, %v", n, err)
	}
	fillPool(t, s, 3)
	if got := onN3(); got < 2 {
		t.Fatalf("%d pool boxes on n3, which keeps 2 of its own", got)
	}
	if _, err := s.CreateBox(ctx, api.BoxPost{Name: "on3", Node: "n3"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.Store.GetBox("on3"); b.Node != "n3" || b.Engine == "" {
		t.Fatalf("a box asked for on n3: node %q, engine %q (not claimed from n3's own pool)", b.Node, b.Engine)
	}
	fillPool(t, s, 3)
	// Drained: its pool boxes go, and none is made there.
	if err := s.RemoveBox(ctx, "on3"); err != nil {
		t.Fatal(err)
	}
	if _, err := servers(s).Drain(ctx, "n3"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.KeepPool(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := onN3(); got != 0 {
		t.Fatalf("%d pool boxes on drained n3", got)
	}
	if err := servers(s).Undrain(ctx, "n3"); err != nil {
		t.Fatal(err)
	}
	fillPool(t, s, 3)
	if got := onN3(); got < 2 {
		t.Fatalf("%d pool boxes on n3 once undrained", got)
	}
	if _, err := servers(s).SetPool(ctx, "n3", map[string]int{"small": 0}); err != nil {
		t.Fatal(err)
	}
	fillPool(t, s, 1)
	if pool, _ := s.Store.ListPool(); len(pool) != 1 {
		t.Fatalf("%d pool boxes with warm_pool 1 and no server's own", len(pool))
	}
}
