package node

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// CA is the cluster's own certificate authority. The control plane makes
// it once and keeps its key; every node's agent and the control plane
// itself hold a certificate it signed, and each side of a call accepts
// only those.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// PEM is the certificate as PEM, what a joining node pins.
	PEM []byte
}

// certLife is how long a node's certificate lasts.
const certLife = 5 * 365 * 24 * time.Hour

// LoadCA reads the authority kept in dir (ca.pem, ca.key), making it the
// first time.
func LoadCA(dir string) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key")
	cb, cerr := os.ReadFile(certPath)
	kb, kerr := os.ReadFile(keyPath)
	if errors.Is(cerr, os.ErrNotExist) && errors.Is(kerr, os.ErrNotExist) {
		ca, err := NewCA()
		if err != nil {
			return nil, err
		}
		kder, err := x509.MarshalECPrivateKey(ca.Key)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		if err := writeFileAtomic(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
			return nil, err
		}
		if err := writeFileAtomic(certPath, ca.PEM, 0o644); err != nil {
			return nil, err
		}
		return ca, nil
	}
	if cerr != nil || kerr != nil {
		return nil, fmt.Errorf("the cluster's authority in %s: %v", dir, errors.Join(cerr, kerr))
	}
	pair, err := tls.X509KeyPair(cb, kb)
	if err != nil {
		return nil, fmt.Errorf("the cluster's authority in %s: %w", dir, err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("the cluster's authority in %s: not an ECDSA key", dir)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, PEM: cb}, nil
}

func writeFileAtomic(p string, b []byte, mode os.FileMode) error {
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// NewCA makes an authority (in memory).
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "Paddock cluster authority"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(20 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

// Fingerprint is the SHA-256 of the authority's certificate, hex: what a
// join command carries, so that the joining node trusts this authority
// and no other.
func (ca *CA) Fingerprint() string {
	s := sha256.Sum256(ca.Cert.Raw)
	return hex.EncodeToString(s[:])
}

// Issue makes a key and a certificate for name (a node, or
// "control-plane"), good to serve as name and to call as it.
func (ca *CA) Issue(name string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	der, err := ca.Sign(name, &key.PublicKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// Sign makes a certificate (DER) for name's public key: a joining node
// sends its key's public half, and its private half never leaves it.
func (ca *CA) Sign(name string, pub crypto.PublicKey) ([]byte, error) {
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(certLife),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	return x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
}

// Trusting is the authority as a node knows it: its certificate alone,
// which it checks callers against, and no key.
func Trusting(caPEM []byte) (*CA, error) {
	b, _ := pem.Decode(caPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("the cluster authority: not a PEM certificate")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the cluster authority: %w", err)
	}
	return &CA{Cert: c, PEM: caPEM}, nil
}

// CertPEM is a certificate's first (leaf) certificate as PEM.
func CertPEM(c tls.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
}

func (ca *CA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// ControlPlane is the name in the control plane's certificate: the one
// caller an agent answers. No node may have it.
const ControlPlane = "control-plane"

// ServerConfig is an agent's TLS: it serves cert and answers only the
// control plane, by a certificate the authority signed for ControlPlane
// (another node's certificate, signed by the same authority, is refused:
// one node taken over does not reach the others).
func (ca *CA) ServerConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca.pool(),
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || cs.PeerCertificates[0].Subject.CommonName != ControlPlane {
				return errors.New("only the control plane may call a node's agent")
			}
			return nil
		},
	}
}

// ClientConfig is a caller's TLS towards the agent of node: it shows cert
// and accepts only that node's certificate from the authority, and, with
// pin (a certificate, DER), only that one: the one issued to the node at
// its join. A node removed and another joined under its name get other
// certificates, so the removed one's (kept by whoever held that server)
// is refused, though the authority signed it for the same name.
func (ca *CA) ClientConfig(cert tls.Certificate, node string, pin []byte) *tls.Config {
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		RootCAs:      ca.pool(),
		ServerName:   node,
	}
	if pin != nil {
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, pin) {
				return fmt.Errorf("node %s answered with a certificate other than the one it was given at its join (an earlier server of that name's?)", node)
			}
			return nil
		}
	}
	return cfg
}

// PinOf is the certificate (DER) of certPEM, as ClientConfig pins it.
func PinOf(certPEM string) ([]byte, error) {
	b, _ := pem.Decode([]byte(certPEM))
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("not a PEM certificate")
	}
	return b.Bytes, nil
}
