package policies

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Resolver is the boxes' DNS server. It answers only boxes (by source
// address): allow-all boxes get every name, deny-all boxes none, allowlist
// boxes the names their policy allows, and each address it gives an
// allowlist box is added to that box's set with the record's TTL. Answers
// that point an allowed name into private, loopback, link-local, metadata
// or shared address space are refused (DNS rebinding).
type Resolver struct {
	M *Manager
	// Upstream is the server allowed names are forwarded to (host:port).
	Upstream string
	// Addr is where to listen (the box network's gateway, port 53).
	Addr string

	servers []*dns.Server
}

// Serve listens on UDP and TCP and returns once both are up.
func (r *Resolver) Serve() error {
	errc := make(chan error, 2)
	for _, proto := range []string{"udp", "tcp"} {
		started := make(chan struct{})
		srv := &dns.Server{Addr: r.Addr, Net: proto, Handler: r, NotifyStartedFunc: func() { close(started) }}
		r.servers = append(r.servers, srv)
		go func() { errc <- srv.ListenAndServe() }()
		select {
		case <-started:
		case err := <-errc:
			r.Shutdown()
			return fmt.Errorf("box resolver on %s/%s: %w", r.Addr, proto, err)
		case <-time.After(5 * time.Second):
			r.Shutdown()
			return fmt.Errorf("box resolver on %s/%s did not start", r.Addr, proto)
		}
	}
	return nil
}

// Shutdown stops the servers.
func (r *Resolver) Shutdown() {
	for _, s := range r.servers {
		s.ShutdownContext(context.Background())
	}
}

// Matches reports whether name is allowed by a pattern list: "example.com"
// matches itself, "*.example.com" matches its subdomains (not itself). Names
// are compared label by label, not as text: a query for the one label
// "evil.example" under "com" (written evil\.example.com) is not a
// subdomain of example.com.
func Matches(patterns []string, name string) bool {
	name = dns.CanonicalName(name)
	for _, p := range patterns {
		p = dns.CanonicalName(p)
		if suffix, ok := strings.CutPrefix(p, "*."); ok {
			if dns.IsSubDomain(suffix, name) && dns.CountLabel(name) > dns.CountLabel(suffix) {
				return true
			}
		} else if name == p {
			return true
		}
	}
	return false
}

var forbidden = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("224.0.0.0/3"),
}

// Rebinding reports whether an answer address lies where a public name
// must not point.
func Rebinding(a netip.Addr) bool {
	for _, p := range forbidden {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func reply(w dns.ResponseWriter, req *dns.Msg, rcode int) {
	m := new(dns.Msg)
	m.SetRcode(req, rcode)
	m.RecursionAvailable = true
	w.WriteMsg(m)
}

// ServeDNS answers one query.
func (r *Resolver) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	src, err := netip.ParseAddrPort(w.RemoteAddr().String())
	if err != nil || len(req.Question) != 1 {
		reply(w, req, dns.RcodeRefused)
		return
	}
	box, ok := r.M.Lookup(src.Addr().Unmap())
	if !ok {
		reply(w, req, dns.RcodeRefused)
		return
	}
	q := req.Question[0]
	name := strings.TrimSuffix(q.Name, ".")
	record := func(allowed bool, reason string) {
		r.M.Record(box.Name, Decision{Time: time.Now().UTC(), Name: name, Allowed: allowed, Reason: reason})
	}
	switch box.Policy.Mode {
	case AllowAll:
		r.forward(w, req, nil)
		return
	case List:
		if !Matches(box.Policy.Domains, name) {
			record(false, "not in the allowlist")
			reply(w, req, dns.RcodeNameError)
			return
		}
	default:
		record(false, "deny-all")
		reply(w, req, dns.RcodeNameError)
		return
	}
	if q.Qtype != dns.TypeA && q.Qtype != dns.TypeCNAME {
		// Boxes have no IPv6; other types carry no address to let through.
		m := new(dns.Msg)
		m.SetReply(req)
		m.RecursionAvailable = true
		w.WriteMsg(m)
		return
	}
	r.forward(w, req, func(resp *dns.Msg) error {
		var addrs []netip.Addr
		ttl := uint32(0)
		for _, rr := range resp.Answer {
			a, ok := rr.(*dns.A)
			if !ok {
				continue
			}
			ip, _ := netip.AddrFromSlice(a.A.To4())
			if Rebinding(ip) {
				record(false, "answer "+ip.String()+" is a private or local address (rebinding)")
				return errRebinding
			}
			addrs = append(addrs, ip)
			if ttl == 0 || a.Hdr.Ttl < ttl {
				ttl = a.Hdr.Ttl
			}
		}
		if err := r.M.Allow(box.Name, addrs, time.Duration(ttl)*time.Second); err != nil {
			record(false, "could not open the firewall: "+err.Error())
			return err
		}
		record(true, fmt.Sprint(addrs))
		return nil
	})
}

var errRebinding = errors.New("rebinding")

// forward sends the query upstream; check may refuse the answer.
func (r *Resolver) forward(w dns.ResponseWriter, req *dns.Msg, check func(*dns.Msg) error) {
	c := &dns.Client{Net: "udp", Timeout: 3 * time.Second}
	if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
		c.Net = "tcp"
	}
	resp, _, err := c.Exchange(req, r.Upstream)
	if err != nil {
		reply(w, req, dns.RcodeServerFailure)
		return
	}
	if check != nil {
		if err := check(resp); err != nil {
			reply(w, req, dns.RcodeRefused)
			return
		}
	}
	w.WriteMsg(resp)
}

// UpstreamFromResolvConf returns the first nameserver of a resolv.conf, as
// host:53.
func UpstreamFromResolvConf(path string) (string, error) {
	cfg, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return "", err
	}
	if len(cfg.Servers) == 0 {
		return "", fmt.Errorf("%s names no nameserver", path)
	}
	return net.JoinHostPort(cfg.Servers[0], cfg.Port), nil
}
