package auth

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

func TestTokens(t *testing.T) {
	tok, hash := NewToken()
	if !strings.HasPrefix(tok, Prefix) || len(tok) != len(Prefix)+64 || Hash(tok) != hash || strings.Contains(hash, tok[len(Prefix):]) {
		t.Fatalf("token %q hash %q", tok, hash)
	}
	if t2, _ := NewToken(); t2 == tok {
		t.Fatal("two tokens alike")
	}
	if got, err := FromHeader("Bearer " + tok); err != nil || got != tok {
		t.Fatalf("FromHeader: %q %v", got, err)
	}
	for _, bad := range []string{"", "Basic x", "Bearer ", tok} {
		if _, err := FromHeader(bad); err == nil {
			t.Errorf("FromHeader(%q) accepted", bad)
		}
	}
}

func TestSealer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret.key")
	s, err := LoadSealer(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v %v", fi, err)
	}
	sealed := s.Seal("API_KEY", []byte("s3cret"))
	if bytes.Contains(sealed, []byte("s3cret")) {
		t.Fatal("sealed value holds the secret in clear")
	}
	// The key is kept: a second load opens what the first sealed.
	s2, err := LoadSealer(path)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s2.Open("API_KEY", sealed); err != nil || string(v) != "s3cret" {
		t.Fatalf("Open = %q, %v", v, err)
	}
	if _, err := s2.Open("OTHER", sealed); err == nil {
		t.Fatal("a sealed value opened under another name")
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := s2.Open("API_KEY", sealed); err == nil {
		t.Fatal("a tampered value opened")
	}
}

func TestPasswords(t *testing.T) {
	if err := CheckNewPassword("short"); err == nil || !strings.Contains(err.Error(), "at least 10") {
		t.Fatalf("short password: %v", err)
	}
	if err := CheckNewPassword("long enough pw"); err != nil {
		t.Fatal(err)
	}
	h, err := HashPassword("long enough pw")
	if err != nil || strings.Contains(h, "long enough") {
		t.Fatalf("hash %q %v", h, err)
	}
	if !CheckPassword(h, "long enough pw") || CheckPassword(h, "long enough pX") || CheckPassword("", "") {
		t.Fatal("CheckPassword accepts the wrong password or refuses the right one")
	}
}

// The hash an unknown user's password is checked against costs what a
// real user's does: a valid bcrypt hash of the same cost.
func TestDummyHashCostsAsARealOne(t *testing.T) {
	cost, err := bcrypt.Cost(dummyHash)
	if err != nil || cost != passwordCost {
		t.Fatalf("dummyHash: cost %d (%v), passwords' %d", cost, err, passwordCost)
	}
	if err := bcrypt.CompareHashAndPassword(dummyHash, []byte("paddock-no-such-user")); err != nil {
		t.Fatalf("dummyHash is not a whole bcrypt hash: %v", err)
	}
}

func TestLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := &Limiter{Every: time.Minute, Burst: 3, now: func() time.Time { return now }}
	for i := range 3 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatalf("attempt %d refused within the burst", i)
		}
	}
	ok, wait := l.Allow("a")
	if ok || wait != time.Minute {
		t.Fatalf("fourth attempt: ok=%v wait=%v", ok, wait)
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Fatal("another key shares the bucket")
	}
	now = now.Add(61 * time.Second)
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("no attempt back after a minute")
	}
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("more than one attempt back after a minute")
	}
}
