package capped

import "testing"

// What fits is kept; what comes past the bound is taken and not kept, and
// the buffer says so; a write never fails.
func TestBuffer(t *testing.T) {
	b := &Buffer{Max: 5}
	for _, w := range []string{"abc", "de", "f", "gh"} {
		if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("write %q: %d %v", w, n, err)
		}
	}
	if b.String() != "abcde" || !b.Over {
		t.Fatalf("kept %q, over %v", b.String(), b.Over)
	}
	if c := (&Buffer{Max: 5}); func() bool { c.Write([]byte("abcde")); return c.Over }() {
		t.Fatal("exactly the bound is over it")
	}
}
