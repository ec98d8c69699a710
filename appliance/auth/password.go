package auth

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
)

// MinPassword is the shortest password accepted, in characters.
const MinPassword = 10

// passwordCost is bcrypt's work factor: about a quarter of a second per
// check on this project's machines, which is what makes guessing slow.
const passwordCost = 12

// CheckNewPassword says what is wrong with a new password, if anything.
func CheckNewPassword(pw string) error {
	if n := utf8.RuneCountInString(pw); n < MinPassword {
		return fmt.Errorf("the password must have at least %d characters (it has %d)", MinPassword, n)
	}
	if len(pw) > 72 {
		return errors.New("the password must be at most 72 bytes")
	}
	return nil
}

// HashPassword returns the stored (slow) hash of a password.
func HashPassword(pw string) (string, error) {
	b, err := bcrypt.GenerateFromPassword([]byte(pw), passwordCost)
	return string(b), err
}

// dummyHash is checked against when there is no such user, so that the
// answer takes as long as for a real one: a hash of passwordCost made
// once, here, not at each start of every program that holds this
// package (making one is as slow as a check, 0.28 s).
var dummyHash = []byte("$2a$12$KxJUJofBYm9KCvzxRBIcTeTGiZgqbSBOi/qZkua3ZakhTmBs52puK")

// CheckPassword reports whether pw matches hash; an empty hash (no such
// user, or no password) never matches but costs the same time.
func CheckPassword(hash, pw string) bool {
	if hash == "" {
		bcrypt.CompareHashAndPassword(dummyHash, []byte(pw))
		return false
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(pw)) == nil
}

// Limiter is a token bucket per key (a client address, a user name):
// Burst attempts at once, then one every Every.
type Limiter struct {
	Every time.Duration
	Burst int

	mu      sync.Mutex
	buckets map[string]*bucket
	now     func() time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

// Allow takes one attempt for key; when none is left it says how long
// until the next.
func (l *Limiter) Allow(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.now != nil {
		now = l.now()
	}
	if l.buckets == nil {
		l.buckets = map[string]*bucket{}
	}
	if len(l.buckets) > 10000 {
		// Forget full buckets so that a flood of keys cannot grow the map.
		for k, b := range l.buckets {
			if l.refill(b, now) >= float64(l.Burst) {
				delete(l.buckets, k)
			}
		}
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: float64(l.Burst), last: now}
		l.buckets[key] = b
	}
	b.tokens = l.refill(b, now)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) * float64(l.Every))
}

func (l *Limiter) refill(b *bucket, now time.Time) float64 {
	t := b.tokens + float64(now.Sub(b.last))/float64(l.Every)
	return min(t, float64(l.Burst))
}
