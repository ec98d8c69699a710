package node_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
	"github.com/paddock-dev/paddock/appliance/node"
)

// joinServer serves a cluster listener for ca on loopback; join signs the
// key it is sent when the token is "good".
func joinServer(t *testing.T, ca *node.CA) (addr string, tokens *[]string) {
	t.Helper()
	cp, err := ca.Issue(node.ControlPlane)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	h := node.JoinHandler(func(ctx context.Context, req api.NodeJoinRequest) (api.NodeJoined, error) {
		seen = append(seen, req.Token)
		if req.Token != "good" {
			return api.NodeJoined{}, &api.Error{Code: api.CodeUnauthorized, Message: "the join token is not valid"}
		}
		blk, _ := pem.Decode([]byte(req.PublicKey))
		pub, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return api.NodeJoined{}, err
		}
		der, err := ca.Sign(req.Name, pub)
		if err != nil {
			return api.NodeJoined{}, err
		}
		return api.NodeJoined{Name: req.Name, Subnet: "10.214.0.0/24", Instance: "t",
			Cert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), CA: string(ca.PEM)}, nil
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, TLSConfig: ca.JoinTLS(cp)}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String(), &seen
}

// A server joins with the command's token and fingerprint: its key never
// leaves it, and what it keeps lets its agent serve the control plane. A
// control plane of another authority never sees the token; a bad token is
// refused with the control plane's reason.
func TestJoin(t *testing.T) {
	ca, _ := node.NewCA()
	addr, seen := joinServer(t, ca)
	ctx := context.Background()

	other, _ := node.NewCA()
	_, err := node.Join(ctx, t.TempDir(), node.JoinRequest{ControlPlane: addr, Token: "good", CASHA256: other.Fingerprint(), Name: "n2", Listen: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "--ca-sha256") {
		t.Fatalf("a control plane of another authority: %v", err)
	}
	if len(*seen) != 0 {
		t.Fatalf("the token went to a control plane the command did not name: %v", *seen)
	}
	_, err = node.Join(ctx, t.TempDir(), node.JoinRequest{ControlPlane: addr, Token: "bad", CASHA256: ca.Fingerprint(), Name: "n2", Listen: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "not valid") {
		t.Fatalf("a bad token: %v", err)
	}

	dir := filepath.Join(t.TempDir(), "node")
	id, err := node.Join(ctx, dir, node.JoinRequest{ControlPlane: addr, Token: "good", CASHA256: ca.Fingerprint(), Name: "n2", Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := node.LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	if kept.Name != "n2" || kept.Subnet != id.Subnet || kept.CA.Fingerprint() != ca.Fingerprint() {
		t.Fatalf("kept %+v", kept)
	}
	// Its agent, with what it kept, answers the control plane.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	go (&node.Agent{Driver: fake.New("base:1"), Name: kept.Name}).Serve(actx, l, kept.CA.ServerConfig(kept.Cert))
	cp, _ := ca.Issue(node.ControlPlane)
	info, err := node.NewRemote("n2", l.Addr().String(), ca.ClientConfig(cp, "n2", nil)).Info(ctx)
	if err != nil || info.Name != "n2" {
		t.Fatalf("the joined agent: %+v %v", info, err)
	}
}
