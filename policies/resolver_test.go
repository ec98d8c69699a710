package policies

import (
	"net/netip"
	"testing"
)

func TestMatches(t *testing.T) {
	pats := []string{"allowed.test", "*.wild.test", "Mixed.Case."}
	for name, want := range map[string]bool{
		"allowed.test": true, "allowed.test.": true, "ALLOWED.test": true,
		"sub.allowed.test": false, "notallowed.test": false,
		"a.wild.test": true, "a.b.wild.test": true, "wild.test": false, "xwild.test": false,
		"mixed.case": true,
		// One label "evil.wild" under "test": not a subdomain of wild.test.
		`evil\.wild.test`: false, `evil\.wild.test.`: false, `a\.b.wild.test`: true,
	} {
		if got := Matches(pats, name); got != want {
			t.Errorf("Matches(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestRebinding(t *testing.T) {
	for a, want := range map[string]bool{
		"10.1.2.3": true, "172.16.0.1": true, "192.168.1.1": true, "127.0.0.1": true,
		"169.254.169.254": true, "100.64.0.1": true, "0.0.0.0": true, "224.0.0.1": true,
		"198.18.1.1": false, "140.82.112.3": false, "8.8.8.8": false,
	} {
		if got := Rebinding(netip.MustParseAddr(a)); got != want {
			t.Errorf("Rebinding(%s) = %v, want %v", a, got, want)
		}
	}
}

func TestNetworkFor(t *testing.T) {
	n, err := NetworkFor("paddock", "10.213.0.0/16")
	if err != nil || n.Gateway.String() != "10.213.0.1" || len(n.Bridge) > 15 || n.Table != "paddock" {
		t.Fatalf("%+v %v", n, err)
	}
	for _, bad := range []string{"", "10.213.0.1/16", "fd00::/64", "10.0.0.0/30"} {
		if _, err := NetworkFor("p", bad); err == nil {
			t.Errorf("subnet %q accepted", bad)
		}
	}
}
