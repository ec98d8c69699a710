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
)

// serve runs an agent for d on loopback behind the authority's mutual TLS
// and returns the address and the authority.
func serve(t *testing.T, d driver.Driver, name string) (string, *node.CA) {
	t.Helper()
	ca, err := node.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	return serveWith(t, d, ca, name), ca
}

func serveWith(t *testing.T, d driver.Driver, ca *node.CA, name string) string {
	t.Helper()
	cert, err := ca.Issue(name)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&node.Agent{Driver: d}).Serve(ctx, l, ca.ServerConfig(cert)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the agent: %v", err)
		}
	})
	return l.Addr().String()
}

func remote(t *testing.T, ca *node.CA, name, addr string) *node.Remote {
	t.Helper()
	cert, err := ca.Issue("control-plane")
	if err != nil {
		t.Fatal(err)
	}
	return node.NewRemote(name, addr, ca.ClientConfig(cert, name))
}

// Through an agent, a driver keeps the driver contract: the fake's here,
// the real engine's in TestRemoteEngineContract.
func TestRemoteContract(t *testing.T) {
	addr, ca := serve(t, fake.New("base:1"), "n1")
	drivertest.Lifecycle(t, remote(t, ca, "n1", addr), "base:1")
}

// Only callers with a certificate of the cluster's authority reach an
// agent, and a caller accepts only the node it meant.
func TestOnlyTheClusterTalks(t *testing.T) {
	addr, ca := serve(t, fake.New("base:1"), "n1")
	ctx := context.Background()
	if _, err := remote(t, ca, "n1", addr).Boxes(ctx); err != nil {
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
	stranger, _ := other.Issue("control-plane")
	cfg := ca.ClientConfig(stranger, "n1")
	if _, err := node.NewRemote("n1", addr, cfg).Boxes(ctx); err == nil {
		t.Fatal("a caller with another authority's certificate was answered")
	}
	// The right authority, another node's name: the caller refuses it.
	if _, err := remote(t, ca, "n2", addr).Boxes(ctx); err == nil || !strings.Contains(err.Error(), "n2") {
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
	addr, ca := serve(t, cutDriver{f}, "n1")
	rc, err := remote(t, ca, "n1", addr).CopyFrom(context.Background(), "b", "/x")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Fatalf("%d bytes, %v: want an error that says the stream was cut", len(b), err)
	}
}
