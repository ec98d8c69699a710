// Package auth makes and checks API tokens, and seals secrets at rest. A
// token is 32 random bytes, shown once as "pdk_" and hex; only its SHA-256
// is stored, which is enough for a secret of that entropy (passwords, which
// are not, get a slow hash).
package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Prefix starts every token, so a leaked one is easy to recognise.
const Prefix = "pdk_"

// E2BPrefix starts a token made as an E2B key: E2B's SDKs take keys of
// this form only.
const E2BPrefix = "e2b_"

// NewToken returns a fresh token and its hash.
func NewToken() (token, hash string) { return NewTokenWith(Prefix) }

// NewTokenWith returns a fresh token that begins with prefix, and its
// hash.
func NewTokenWith(prefix string) (token, hash string) {
	b := make([]byte, 32)
	rand.Read(b)
	token = prefix + hex.EncodeToString(b)
	return token, Hash(token)
}

// RandomHex is n random bytes in hex: the names of builds, jobs and
// staging folders.
func RandomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
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

// Sealer encrypts secrets at rest with AES-256-GCM under a key kept in a
// file of its own (mode 0600), outside the database.
type Sealer struct{ aead cipher.AEAD }

// LoadSealer reads the key at path, making it on first use.
func LoadSealer(path string) (*Sealer, error) {
	key, err := LoadKey(path)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// LoadKey reads a 32-byte key from path, making one (mode 0600) when
// there is none.
func LoadKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		key = make([]byte, 32)
		rand.Read(key)
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, key, 0o600); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, path); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("%s: the key must be 32 bytes", path)
	}
	return key, nil
}

// Seal encrypts a value; name is bound to it, so a sealed value cannot be
// moved to another name.
func (s *Sealer) Seal(name string, value []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, value, []byte(name))
}

// Open decrypts a sealed value.
func (s *Sealer) Open(name string, sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("sealed secret is too short")
	}
	return s.aead.Open(nil, sealed[:n], sealed[n:], []byte(name))
}
