package sso

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
)

// Seal encrypts a refresh token with key (32 bytes: sso.key in the
// state folder; AES-GCM): what the store keeps.
func Seal(key []byte, plain string) string {
	if plain == "" {
		return ""
	}
	gcm := aead(key)
	nonce := make([]byte, gcm.NonceSize())
	rand.Read(nonce)
	return base64.RawStdEncoding.EncodeToString(gcm.Seal(nonce, nonce, []byte(plain), nil))
}

// Open decrypts what Seal made.
func Open(key []byte, sealed string) (string, error) {
	if sealed == "" {
		return "", nil
	}
	b, err := base64.RawStdEncoding.DecodeString(sealed)
	gcm := aead(key)
	if err != nil || len(b) < gcm.NonceSize() {
		return "", errors.New("a sealed refresh token that is not one")
	}
	plain, err := gcm.Open(nil, b[:gcm.NonceSize()], b[gcm.NonceSize():], nil)
	if err != nil {
		return "", errors.New("a refresh token sealed with another key")
	}
	return string(plain), nil
}

func aead(key []byte) cipher.AEAD {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // keys are 32 bytes (LoadKey)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return gcm
}
