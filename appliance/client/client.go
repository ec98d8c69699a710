// Package client is the Go client of paddockd's HTTP API, used by the CLI,
// the tests and the benchmarks. It depends only on the standard library and
// the API's wire packages, so the CLI stays free of engine code.
//
// A server address is an http:// or https:// URL, or unix:///path/to.sock.
package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/jsonhttp"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// Client talks to one paddockd.
type Client struct {
	base  string // scheme://host, without a trailing slash
	token string
	hc    *http.Client
}

// New makes a client for server, authenticating with token.
func New(server, token string) (*Client, error) { return NewWithCA(server, token, nil) }

// NewWithCA is New trusting, for https, the certificate authorities in
// caPEM as well as the system's (a server on a private network, or a test
// machine, whose certificate comes from Caddy's internal CA).
func NewWithCA(server, token string, caPEM []byte) (*Client, error) {
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("bad server address %q: %w", server, err)
	}
	c := &Client{token: token}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return nil, fmt.Errorf("bad server address %q: no host", server)
		}
		c.base = u.Scheme + "://" + u.Host
		tr := &http.Transport{Proxy: http.ProxyFromEnvironment, WriteBufferSize: streamBuffer, ReadBufferSize: streamBuffer}
		if len(caPEM) > 0 {
			cfg, err := pinnedFirst(caPEM)
			if err != nil {
				return nil, err
			}
			tr.TLSClientConfig = cfg
		}
		c.hc = &http.Client{Transport: tr}
	case "unix":
		sock := u.Path
		if sock == "" {
			return nil, fmt.Errorf("bad server address %q: no socket path", server)
		}
		c.base = "http://paddock"
		c.hc = &http.Client{Transport: &http.Transport{
			WriteBufferSize: streamBuffer, ReadBufferSize: streamBuffer,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			},
		}}
	default:
		return nil, fmt.Errorf("bad server address %q: use http://, https:// or unix://", server)
	}
	return c, nil
}

// pinnedFirst is a TLS configuration that trusts the authorities in caPEM
// and the system's: a server's chain is verified against caPEM's first,
// and only when that fails against the system's, read then. Reading the
// system's (some 140 certificates, parsed) took 19-57 ms on a test
// machine, at every start of the CLI; a server with a certificate of its
// own CA (the usual case when one is given) never needs them.
//
// Go verifies nothing itself here (InsecureSkipVerify): VerifyConnection
// does all of it, the name as well as the chain, as crypto/tls's own
// example of a custom verification does.
func pinnedFirst(caPEM []byte) (*tls.Config, error) {
	pinned := x509.NewCertPool()
	if !pinned.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("the CA certificate is not PEM")
	}
	system := sync.OnceValue(func() *x509.CertPool {
		pool, err := systemRoots()
		if err != nil {
			return x509.NewCertPool()
		}
		return pool
	})
	verify := func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the server sent no certificate")
		}
		opts := x509.VerifyOptions{DNSName: cs.ServerName, Roots: pinned, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		if err == nil {
			return nil
		}
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) {
			return err // a wrong name or an expired certificate: no other roots help
		}
		opts.Roots = system()
		_, err = cs.PeerCertificates[0].Verify(opts)
		return err
	}
	return &tls.Config{InsecureSkipVerify: true, VerifyConnection: verify}, nil
}

// systemRoots reads the system's certificate authorities (a variable for
// the tests).
var systemRoots = x509.SystemCertPool

// streamBuffer is the size of the transport's writes and reads: a push's
// archive goes out in 256 KiB writes (TLS records of 16 KiB), not the
// default 4 KiB.
const streamBuffer = 256 << 10

func (c *Client) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/"+api.Version+path, body)
	if err != nil {
		return nil, err
	}
	c.authorize(req)
	return req, nil
}

// authorize gives a request the client's token.
func (c *Client) authorize(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

// decodeError reads an API error body.
func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e api.Error
	if json.Unmarshal(b, &e) == nil && e.Message != "" {
		return &e
	}
	if resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout {
		// A proxy in front of paddockd (Caddy) answers for it.
		return &api.Error{Code: api.CodeInternal, Message: fmt.Sprintf("paddockd did not answer (%s from the proxy in front of it): it may be restarting; the request may not have been carried out", resp.Status)}
	}
	return &api.Error{Code: api.CodeInternal, Message: fmt.Sprintf("server answered %s: %s", resp.Status, strings.TrimSpace(string(b)))}
}

func (c *Client) send(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, fmt.Errorf("cannot reach paddockd at %s: %w", c.base, err)
		}
		if req.Context().Err() == nil {
			return nil, fmt.Errorf("the connection to paddockd at %s broke before it answered (it may be restarting; the request may not have been carried out): %w", c.base, err)
		}
		return nil, err
	}
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

// do sends a JSON request and decodes a JSON answer into out (if not nil).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	req, err := jsonhttp.NewRequest(ctx, method, c.base+"/"+api.Version+path, in)
	if err != nil {
		return err
	}
	c.authorize(req)
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return jsonhttp.Decode(resp.Body, out)
}

func esc(s string) string { return url.PathEscape(s) }

// Base is the server's base URL (http://host:port); for a unix socket,
// http://paddock.
func (c *Client) Base() string { return c.base }
