package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// authority is a test certificate authority.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newAuthority(t *testing.T, name string) authority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return authority{cert, key}
}

func (a authority) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.cert.Raw})
}

// serve starts an HTTPS server whose certificate, for 127.0.0.1 and the
// names given, is signed by a.
func (a authority) serve(t *testing.T, names ...string) *httptest.Server {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "paddockd"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: names, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"name":"b"}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// get makes one request through a client pinned to caPEM, to the server
// at its address under host (127.0.0.1 when empty).
func get(t *testing.T, srv *httptest.Server, host string, caPEM []byte) error {
	t.Helper()
	url := srv.URL
	if host != "" {
		url = strings.Replace(url, "127.0.0.1", host, 1)
	}
	c, err := NewWithCA(url, "tok", caPEM)
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Listener.Addr().String()
	c.hc.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	_, err = c.Box(context.Background(), "b")
	return err
}

// A client given a CA certificate trusts a server whose certificate it
// signed without reading the system's authorities; one signed by another
// authority only when the system's trust it; and neither for a name the
// certificate is not for.
func TestPinnedCAFirstThenTheSystems(t *testing.T) {
	pinned, system, other := newAuthority(t, "pinned"), newAuthority(t, "system"), newAuthority(t, "other")
	var reads atomic.Int32
	old := systemRoots
	t.Cleanup(func() { systemRoots = old })
	systemRoots = func() (*x509.CertPool, error) {
		reads.Add(1)
		p := x509.NewCertPool()
		p.AddCert(system.cert)
		return p, nil
	}

	if err := get(t, pinned.serve(t), "", pinned.pem()); err != nil {
		t.Fatalf("a server with a certificate of the pinned CA: %v", err)
	}
	if n := reads.Load(); n != 0 {
		t.Fatalf("the system's authorities were read %d times for a server of the pinned CA", n)
	}
	if err := get(t, system.serve(t), "", pinned.pem()); err != nil {
		t.Fatalf("a server with a certificate of a system authority: %v", err)
	}
	if reads.Load() == 0 {
		t.Fatal("a server of a system authority was trusted without reading the system's authorities")
	}
	err := get(t, other.serve(t), "", pinned.pem())
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("a server with a certificate of an authority trusted by neither: %v, want an unknown authority", err)
	}
	err = get(t, pinned.serve(t, "paddock.test"), "localhost", pinned.pem())
	var host x509.HostnameError
	if !errors.As(err, &host) {
		t.Fatalf("a certificate of the pinned CA for another name: %v, want a name error", err)
	}
	err = get(t, system.serve(t, "paddock.test"), "localhost", pinned.pem())
	if !errors.As(err, &host) {
		t.Fatalf("a certificate of a system authority for another name: %v, want a name error", err)
	}
}
