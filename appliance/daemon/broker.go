package daemon

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/broker"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/secrets"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/policies"
)

// refused says whether the broker may not dial ip: what a public name
// must not point to (policies.Rebinding: private, shared, loopback,
// link-local and multicast ranges), the clouds' metadata and host
// agents, the box network, and this machine's own addresses.
func refused(ip netip.Addr, boxes netip.Prefix) bool {
	if !ip.Is4() || boxes.Contains(ip) || policies.Rebinding(ip) {
		return true
	}
	for _, p := range policies.Metadata {
		if p.Contains(ip) {
			return true
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if own, ok := netip.AddrFromSlice(n.IP); ok && own.Unmap() == ip {
				return true
			}
		}
	}
	return false
}

// startBroker serves the credential broker on the box network's gateway
// (broker_port), when it is on: its stand-ins' key is made on first use
// and kept in the state folder.
func startBroker(cfg config.Config, svc *service.Service, sec *secrets.Secrets, boxNet policies.Network, log *slog.Logger) (stop func(), err error) {
	if boxNet.BrokerPort == 0 {
		return func() {}, nil
	}
	key, err := auth.LoadKey(filepath.Join(cfg.StateDir, "broker.key"))
	if err != nil {
		return nil, err
	}
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if cfg.BrokerCAFile != "" {
		pem, err := os.ReadFile(cfg.BrokerCAFile)
		if err != nil {
			return nil, fmt.Errorf("broker_ca_file: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("broker_ca_file %s: no PEM certificate in it", cfg.BrokerCAFile)
		}
	}
	upstream, err := dnsUpstream(cfg)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	b := &broker.Broker{
		Grant: sec.Grant, Done: sec.Done, RootCAs: roots,
		Resolver: &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, upstream)
		}},
		Refuse: func(ip netip.Addr) bool { return refused(ip, boxNet.Subnet) },
	}
	addr := net.JoinHostPort(boxNet.Gateway.String(), strconv.Itoa(int(boxNet.BrokerPort)))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("the credential broker (broker_port): %w", err)
	}
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: serverLog(log)}
	go srv.Serve(l)
	svc.BrokerURL, svc.BrokerKey = "http://"+addr, key
	log.Info("credential broker", "listen", addr)
	return func() { srv.Close() }, nil
}
