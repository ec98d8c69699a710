package node_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/drivertest"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
	"github.com/paddock-dev/paddock/appliance/node"
	"github.com/paddock-dev/paddock/testbed/drivers"
)

// serve runs an agent for d behind a new authority's mutual TLS and
// returns the control plane's driver of it, and the authority.
func serve(t *testing.T, d driver.Driver, name string) (*node.Remote, *node.CA) {
	t.Helper()
	ca, err := node.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	return drivers.Node(t, ca, name, d), ca
}

// caller is the control plane's driver of the agent at addr, that meant
// to call node name.
func caller(t *testing.T, ca *node.CA, name, addr string) *node.Remote {
	t.Helper()
	cert, err := ca.Issue(node.ControlPlane)
	if err != nil {
		t.Fatal(err)
	}
	return node.NewRemote(name, addr, ca.ClientConfig(cert, name, nil))
}

// Through an agent, a driver keeps the driver contract: the fake's here,
// the real engine's in TestRemoteEngineContract.
func TestRemoteContract(t *testing.T) {
	r, _ := serve(t, fake.New("base:1"), "n1")
	drivertest.Lifecycle(t, r, "base:1")
}

// Only callers with a certificate of the cluster's authority reach an
// agent, and a caller accepts only the node it meant.
func TestOnlyTheClusterTalks(t *testing.T) {
	r, ca := serve(t, fake.New("base:1"), "n1")
	addr := r.Addr()
	ctx := context.Background()
	if _, err := r.Boxes(ctx); err != nil {
		t.Fatalf("the control plane's call (positive control): %v", err)
	}
	// No certificate.
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if resp, err := anon.Get("https://" + addr + node.Prefix + "boxes"); err == nil {
		resp.Body.Close()
		t.Fatalf("a caller without a certificate: %s", resp.Status)
	}
	// A certificate of another authority.
	other, _ := node.NewCA()
	stranger, _ := other.Issue(node.ControlPlane)
	cfg := ca.ClientConfig(stranger, "n1", nil)
	if _, err := node.NewRemote("n1", addr, cfg).Boxes(ctx); err == nil {
		t.Fatal("a caller with another authority's certificate was answered")
	}
	// The right authority, but another node's certificate as the caller:
	// one node does not reach another.
	n2, _ := ca.Issue("n2")
	if _, err := node.NewRemote("n1", addr, ca.ClientConfig(n2, "n1", nil)).Boxes(ctx); err == nil {
		t.Fatal("a node's certificate was answered as a caller")
	}
	// The right authority, another node's name: the caller refuses it.
	if _, err := caller(t, ca, "n2", addr).Boxes(ctx); err == nil || !strings.Contains(err.Error(), "n2") {
		t.Fatalf("a caller that meant n2 talked to n1: %v", err)
	}
}

// cutDriver is the fake whose archives break off half way.
type cutDriver struct{ *fake.Driver }

func (c cutDriver) CopyFrom(ctx context.Context, box, path string) (io.ReadCloser, error) {
	return io.NopCloser(io.MultiReader(strings.NewReader(strings.Repeat("x", 100000)), errReader{})), nil
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("the disk went away") }

// An archive the node could not send whole is an error to its reader, not
// a shorter archive.
func TestCutArchiveIsAnError(t *testing.T) {
	f := fake.New("base:1")
	r, _ := serve(t, cutDriver{f}, "n1")
	rc, err := r.CopyFrom(context.Background(), "b", "/x")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Fatalf("%d bytes, %v: want an error that says the stream was cut", len(b), err)
	}
}

// A node removed keeps its certificate (whoever held that server does);
// a later node of the same name gets another at its join. The control
// plane pins each node to the certificate of its join: the old one,
// though the authority signed it for the same name, is refused.
func TestAttackRemovedNodesCertificate(t *testing.T) {
	ca, err := node.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	old, err := ca.Issue("n2")
	if err != nil {
		t.Fatal(err)
	}
	current, err := ca.Issue("n2")
	if err != nil {
		t.Fatal(err)
	}
	cp, err := ca.Issue(node.ControlPlane)
	if err != nil {
		t.Fatal(err)
	}
	pin, err := node.PinOf(string(node.CertPEM(current)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	agentWith := func(cert tls.Certificate) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- (&node.Agent{Driver: fake.New("base:1")}).Serve(sctx, l, ca.ServerConfig(cert)) }()
		t.Cleanup(func() { cancel(); <-done })
		return l.Addr().String()
	}
	if _, err := node.NewRemote("n2", agentWith(current), ca.ClientConfig(cp, "n2", pin)).Boxes(ctx); err != nil {
		t.Fatalf("the node with its own certificate (positive control): %v", err)
	}
	_, err = node.NewRemote("n2", agentWith(old), ca.ClientConfig(cp, "n2", pin)).Boxes(ctx)
	if err == nil || !strings.Contains(err.Error(), "a certificate other than the one it was given at its join") {
		t.Fatalf("a removed node's certificate for the same name: %v", err)
	}
}
