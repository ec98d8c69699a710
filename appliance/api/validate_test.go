package api

import (
	"math/rand"
	"regexp"
	"testing"
	"time"
)

// isLabel against the rule written as a regular expression, on random
// strings of the characters that matter, lengths 0 to 70.
func TestIsLabelIsTheRule(t *testing.T) {
	rule := regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	r := rand.New(rand.NewSource(1))
	const chars = "az09-A_.é"
	for i := 0; i < 20000; i++ {
		b := make([]byte, r.Intn(71))
		for j := range b {
			if r.Intn(4) == 0 {
				b[j] = chars[r.Intn(len(chars))]
			} else {
				b[j] = "abcxyz0129-"[r.Intn(11)]
			}
		}
		if s := string(b); isLabel(s) != rule.MatchString(s) {
			t.Fatalf("%q: isLabel %v, the rule %v", s, isLabel(s), rule.MatchString(s))
		}
	}
}

func TestValidName(t *testing.T) {
	for _, ok := range []string{"a", "web", "web-1", "0box", "a123456789012345678901234567890123456789012345678901234567890bc"} {
		if err := ValidName("box", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-a", "a-", "A", "a_b", "a.b", "current", "a123456789012345678901234567890123456789012345678901234567890bcd"} {
		if err := ValidName("box", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseTTL(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "3600": time.Hour, "5s": 5 * time.Second, "1h30m": 90 * time.Minute} {
		got, err := ParseTTL(in)
		if err != nil || got != want {
			t.Errorf("ParseTTL(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"soon", "-1", "-5s", "1.5s", "10ms"} {
		if _, err := ParseTTL(bad); err == nil {
			t.Errorf("ParseTTL(%q) accepted", bad)
		}
	}
}

func TestParseMount(t *testing.T) {
	m, err := ParseMount("cache:/mnt/npm:ro")
	if err != nil || m.Drive != "cache" || m.Path != "/mnt/npm" || !m.ReadOnly {
		t.Fatalf("%+v %v", m, err)
	}
	if m, err := ParseMount("cache"); err != nil || m.Path != "/mnt/cache" {
		t.Fatalf("%+v %v", m, err)
	}
	for _, bad := range []string{"cache:/etc", "cache:/mnt", "cache:/mnt/../etc", "cache:/mnt/a/", "Bad:/mnt/x", "a:b:c:d"} {
		if _, err := ParseMount(bad); err == nil {
			t.Errorf("ParseMount(%q) accepted", bad)
		}
	}
}

func TestParseIdleStop(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "off": IdleStopOff, "0": IdleStopOff, "30m": 30 * time.Minute, "1s": time.Second} {
		if got, err := ParseIdleStop(in); err != nil || got != want {
			t.Errorf("ParseIdleStop(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"soon", "-5m", "500ms", "1.5s", "30"} {
		if _, err := ParseIdleStop(bad); err == nil {
			t.Errorf("ParseIdleStop(%q) accepted", bad)
		}
	}
}
