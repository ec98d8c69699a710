package node

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

// JoinPath is the one route of the control plane's cluster listener.
const JoinPath = Prefix + "join"

// JoinHandler is the control plane's cluster listener: a server with a
// join token asks to join (join decides), and nothing else is served
// there. Serve it with JoinTLS, whose certificate chain a joining server
// checks against the authority's fingerprint from its join command.
func JoinHandler(join func(ctx context.Context, req api.NodeJoinRequest) (api.NodeJoined, error)) http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("POST "+JoinPath, func(w http.ResponseWriter, r *http.Request) {
		var req api.NodeJoinRequest
		if err := readJSON(r, &req); err != nil {
			writeError(w, err)
			return
		}
		out, err := join(r.Context(), req)
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			status := http.StatusInternalServerError
			if ae := (*api.Error)(nil); errors.As(err, &ae) {
				status = http.StatusBadRequest
				if ae.Code == api.CodeUnauthorized {
					status = http.StatusForbidden
				}
			}
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(wireError{Error: err.Error()})
			return
		}
		writeJSON(w, out)
	})
	return m
}

// JoinTLS is the cluster listener's TLS: the control plane's certificate
// and the authority's, so that a joining server can check the chain
// against the fingerprint it was given.
func (ca *CA) JoinTLS(cert tls.Certificate) *tls.Config {
	chain := cert
	chain.Certificate = append(append([][]byte{}, cert.Certificate...), ca.Cert.Raw)
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{chain}}
}

// Identity is what a node keeps of its join (in its state directory's
// node/ folder): who it is, its box network, and its agent's key and
// certificate.
type Identity struct {
	Name     string `json:"name"`
	Subnet   string `json:"subnet"`
	Instance string `json:"instance"`
	// ControlPlane is the cluster listener it joined through.
	ControlPlane string `json:"control_plane"`
	// Listen is where its agent answers.
	Listen string `json:"listen"`

	Cert tls.Certificate `json:"-"`
	CA   *CA             `json:"-"`
}

// LoadIdentity reads the identity kept in dir; os.ErrNotExist when the
// node has not joined.
func LoadIdentity(dir string) (*Identity, error) {
	b, err := os.ReadFile(filepath.Join(dir, "node.json"))
	if err != nil {
		return nil, err
	}
	var id Identity
	if err := json.Unmarshal(b, &id); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "node.json"), err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "node.pem"), filepath.Join(dir, "node.key"))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return nil, err
	}
	if id.CA, err = Trusting(caPEM); err != nil {
		return nil, err
	}
	id.Cert = cert
	return &id, nil
}

// JoinRequest is what Join needs: the join command's address, token and
// authority fingerprint, and what this server says of itself.
type JoinRequest struct {
	ControlPlane string // IP:PORT
	Token        string
	CASHA256     string
	Name         string
	// Listen is where the agent will answer; a host left out is the
	// address this server reaches the control plane from.
	Listen string
	// Swarm joins this server's engine to the cluster's swarm, advertised
	// at ip (the agent's address), once the control plane has let the
	// server in and before the join is kept.
	Swarm func(ctx context.Context, sj api.SwarmJoin, ip string) error
}

// Join asks the control plane to let this server in, and keeps what it
// answers in dir (node.json, node.key, node.pem, ca.pem). The key is made
// here and only its public half is sent. The control plane is trusted
// only if its certificate chains to the authority whose fingerprint the
// join command gave.
func Join(ctx context.Context, dir string, jr JoinRequest) (*Identity, error) {
	fp := strings.ToLower(strings.TrimSpace(jr.CASHA256))
	if len(fp) != 64 {
		return nil, errors.New("--ca-sha256: give the 64 hex digits of the join command")
	}
	addr, err := advertised(jr.ControlPlane, jr.Listen)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(api.NodeJoinRequest{Token: jr.Token, Name: jr.Name, Addr: addr,
		PublicKey: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))})

	var caSeen *x509.Certificate
	tr := &http.Transport{TLSClientConfig: &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The chain is checked below, against the fingerprint, not
		// against the machine's authorities.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			ca, err := pinned(cs.PeerCertificates, fp)
			caSeen = ca
			return err
		},
	}}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, "POST", "https://"+jr.ControlPlane+JoinPath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("joining through %s: %w", jr.ControlPlane, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var w wireError
		json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&w)
		if w.Error == "" {
			w.Error = resp.Status
		}
		return nil, fmt.Errorf("the control plane refused the join: %s", w.Error)
	}
	var out api.NodeJoined
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return nil, fmt.Errorf("the control plane's answer: %w", err)
	}
	ca, err := Trusting([]byte(out.CA))
	if err != nil {
		return nil, err
	}
	if caSeen == nil || !ca.Cert.Equal(caSeen) {
		return nil, errors.New("the control plane answered with another authority than the one it showed")
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	cert, err := tls.X509KeyPair([]byte(out.Cert), keyPEM)
	if err != nil {
		return nil, fmt.Errorf("the certificate the control plane issued: %w", err)
	}
	if jr.Swarm != nil {
		ip, _, _ := net.SplitHostPort(addr)
		if err := jr.Swarm(ctx, out.Swarm, ip); err != nil {
			return nil, fmt.Errorf("the control plane let this server in as %s, but its engine did not join the swarm: %w; remove it ('paddock node rm %s') and join again with a new token", out.Name, err, out.Name)
		}
	}
	id := &Identity{Name: out.Name, Subnet: out.Subnet, Instance: out.Instance, ControlPlane: jr.ControlPlane,
		Listen: jr.Listen, Cert: cert, CA: ca}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	meta, _ := json.MarshalIndent(id, "", "  ")
	for _, f := range []struct {
		name string
		b    []byte
		mode os.FileMode
	}{{"node.key", keyPEM, 0o600}, {"node.pem", []byte(out.Cert), 0o644}, {"ca.pem", []byte(out.CA), 0o644}, {"node.json", meta, 0o644}} {
		// node.json last: it says the join is whole.
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.b, f.mode); err != nil {
			return nil, err
		}
	}
	return id, nil
}

// pinned finds, in the chain a server showed, the authority whose
// fingerprint is fp, and checks that the server's certificate is its.
func pinned(chain []*x509.Certificate, fp string) (*x509.Certificate, error) {
	if len(chain) == 0 {
		return nil, errors.New("the control plane showed no certificate")
	}
	for _, c := range chain[1:] {
		sum := sha256.Sum256(c.Raw)
		if hex.EncodeToString(sum[:]) != fp {
			continue
		}
		roots := x509.NewCertPool()
		roots.AddCert(c)
		if _, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return nil, fmt.Errorf("the control plane's certificate: %w", err)
		}
		if chain[0].Subject.CommonName != ControlPlane {
			return nil, fmt.Errorf("the server is %q, not the control plane", chain[0].Subject.CommonName)
		}
		return c, nil
	}
	return nil, errors.New("the control plane's authority is not the one of the join command (--ca-sha256)")
}

// advertised is the address the agent is reached at: listen's, with the
// address this server reaches the control plane from when listen names
// no host. No packet is sent to find it.
func advertised(controlPlane, listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("node_listen %q: %w", listen, err)
	}
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		return listen, nil
	}
	c, err := net.Dial("udp", controlPlane)
	if err != nil {
		return "", fmt.Errorf("finding this server's address towards %s: %w", controlPlane, err)
	}
	defer c.Close()
	return net.JoinHostPort(c.LocalAddr().(*net.UDPAddr).IP.String(), port), nil
}
