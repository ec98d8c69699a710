// Package auth makes and checks API tokens. A token is 32 random bytes,
// shown once as "pdk_" and hex; only its SHA-256 is stored, which is enough
// for a secret of that entropy (passwords, which are not, get a slow hash).
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// Prefix starts every token, so a leaked one is easy to recognise.
const Prefix = "pdk_"

// NewToken returns a fresh token and its hash.
func NewToken() (token, hash string) {
	b := make([]byte, 32)
	rand.Read(b)
	token = Prefix + hex.EncodeToString(b)
	return token, Hash(token)
}

// Hash is the stored form of a token.
func Hash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// ErrNoToken is returned when a request carries no bearer token.
var ErrNoToken = errors.New("no token: log in with 'paddock login' or set PADDOCK_TOKEN")

// FromHeader extracts the bearer token from an Authorization header value.
func FromHeader(v string) (string, error) {
	t, ok := strings.CutPrefix(v, "Bearer ")
	if !ok || t == "" {
		return "", ErrNoToken
	}
	return strings.TrimSpace(t), nil
}
