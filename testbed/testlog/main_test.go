package main

import (
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	const p = `{"Action":"output","Package":"x/e2e","Test":"TestSlow","Output":"slow says\n"}
{"Action":"pass","Package":"x/e2e","Test":"TestSlow","Elapsed":42.5}
{"Action":"pass","Package":"x/e2e","Test":"TestSlow/part","Elapsed":7}
{"Action":"pass","Package":"x/e2e","Test":"TestQuick","Elapsed":1.5}
{"Action":"output","Package":"x/e2e","Test":"TestGone","Output":"    gone_test.go:9: no tool here\n"}
{"Action":"skip","Package":"x/e2e","Test":"TestGone","Elapsed":0}
{"Action":"output","Package":"x/e2e","Output":"ok  \tx/e2e\t50s\n"}
`
	const broken = `{"Action":"output","Package":"x/a","Test":"TestBad","Output":"    a_test.go:3: it broke\n"}
{"Action":"fail","Package":"x/a","Test":"TestBad","Elapsed":0.1}
{"Action":"fail","Package":"x/a","Elapsed":0.2}
`
	const timedOut = `{"Action":"output","Package":"x/e2e","Test":"TestDone","Output":"done says\n"}
{"Action":"pass","Package":"x/e2e","Test":"TestDone","Elapsed":3}
{"Action":"output","Package":"x/e2e","Test":"TestHung","Output":"    hung_test.go:7: waiting for the box\n"}
{"Action":"output","Package":"x/e2e","Test":"TestHung","Output":"panic: test timed out after 20m0s\n"}
{"Action":"output","Package":"x/e2e","Output":"FAIL\tx/e2e\t1200.1s\n"}
{"Action":"fail","Package":"x/e2e","Elapsed":1200.1}
`
	for _, c := range []struct {
		name, in string
		noSkips  bool
		code     int
		want     []string
		not      []string
	}{
		{"passes", p, false, 0,
			[]string{"ok  \tx/e2e\t50s", "slowest tests", "  42.5s  e2e.TestSlow\n", "   7.0s  e2e.TestSlow/part\n", "1 test(s) skipped:\n  x/e2e.TestGone: gone_test.go:9: no tool here"},
			[]string{"TestQuick", "slow says"}},
		{"no skips", p, true, 1, []string{"this run may skip none"}, nil},
		{"fails", broken, false, 1, []string{"a_test.go:3: it broke"}, []string{"slowest"}},
		{"times out", timedOut, false, 1, []string{"=== still running when x/e2e failed: TestHung", "hung_test.go:7: waiting for the box", "panic: test timed out after 20m0s"}, []string{"done says"}},
	} {
		var out strings.Builder
		if code := run(strings.NewReader(c.in), &out, c.noSkips); code != c.code {
			t.Errorf("%s: exit code %d, want %d", c.name, code, c.code)
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: the log lacks %q:\n%s", c.name, w, out.String())
			}
		}
		for _, w := range c.not {
			if strings.Contains(out.String(), w) {
				t.Errorf("%s: the log has %q:\n%s", c.name, w, out.String())
			}
		}
		if i, j := strings.Index(out.String(), "TestSlow\n"), strings.Index(out.String(), "TestSlow/part"); c.name == "passes" && !(i >= 0 && i < j) {
			t.Errorf("%s: not slowest first:\n%s", c.name, out.String())
		}
	}
}

// The attacks' tally counts every package's attacks by their results:
// the scripts of e2e's TestAttacks, and the tests and subtests named
// TestAttack… or Attack…; one that failed is named.
func TestAttackTally(t *testing.T) {
	const in = `{"Action":"pass","Package":"x/e2e","Test":"TestAttacks/arp","Elapsed":1}
{"Action":"pass","Package":"x/e2e","Test":"TestAttacks/spoof","Elapsed":1}
{"Action":"pass","Package":"x/e2e","Test":"TestAttacks","Elapsed":2}
{"Action":"pass","Package":"x/e2e","Test":"TestCluster/AttackNodeLies","Elapsed":1}
{"Action":"pass","Package":"x/e2e","Test":"TestCluster","Elapsed":3}
{"Action":"pass","Package":"x/docker","Test":"TestAttackLoadTags","Elapsed":1}
{"Action":"output","Package":"x/images","Test":"TestAttackBomb","Output":"    bomb_test.go:3: it inflated\n"}
{"Action":"fail","Package":"x/images","Test":"TestAttackBomb","Elapsed":1}
{"Action":"pass","Package":"x/images","Test":"TestAttackBomb/part","Elapsed":1}
{"Action":"pass","Package":"x/images","Test":"TestOther","Elapsed":1}
{"Action":"fail","Package":"x/images","Elapsed":1}
`
	var out strings.Builder
	if code := run(strings.NewReader(in), &out, false); code != 1 {
		t.Errorf("exit code %d", code)
	}
	for _, w := range []string{"attacks: 5 tried, 4 held (in 3 packages)\n", "  did not hold: images.TestAttackBomb\n"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the log lacks %q:\n%s", w, out.String())
		}
	}
}
