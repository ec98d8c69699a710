package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// seen are the digests of the keys the fake API was sent, newest last.
var seen struct {
	sync.Mutex
	keys []string
}

func noteKey(r *http.Request) {
	k := r.Header.Get("X-Api-Key")
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && k == "" {
		k = b
	}
	if k == "" {
		return
	}
	sum := sha256.Sum256([]byte(k))
	seen.Lock()
	seen.keys = append(seen.keys, hex.EncodeToString(sum[:]))
	if len(seen.keys) > 1000 {
		seen.keys = seen.keys[len(seen.keys)-1000:]
	}
	seen.Unlock()
}

// serveModelAPI makes an authority and a certificate for the fake API's
// names, writes the authority to caPath and serves the API on its
// addresses.
func serveModelAPI(caPath string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "paddock testbed model API authority"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "api.model.test"},
		DNSNames:  []string{"api.model.test", "other-api.test", "private-api.test", "metadata-api.test"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	tmp := caPath + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, caPath); err != nil {
		return err
	}
	cert := tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) {
		noteKey(r)
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"type": "message", "role": "assistant", "model": "fake",
			"content": []map[string]string{{"type": "text", "text": "pong from " + r.Host + ": " + string(body)}},
		})
	})
	mux.HandleFunc("GET /_seen", func(w http.ResponseWriter, r *http.Request) {
		seen.Lock()
		defer seen.Unlock()
		json.NewEncoder(w).Encode(seen.keys)
	})
	mux.HandleFunc("/bytes", func(w http.ResponseWriter, r *http.Request) {
		noteKey(r)
		sendBytes(w, r)
	})
	for _, ip := range []string{"198.18.5.5", "198.18.5.6", "10.254.254.254", "169.254.169.254"} {
		// The namespace's lo has 198.18.0.0/16: every address of it is
		// this namespace's own.
		l, err := net.Listen("tcp", ip+":443")
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
		go func() { log.Fatal(srv.ServeTLS(l, "", "")) }()
	}
	return nil
}
