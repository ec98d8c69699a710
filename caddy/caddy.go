// Package caddy is Paddock's front door: it builds the configuration of
// the Caddy server embedded in paddockd from Paddock's state, and runs it.
//
// What the configuration says:
//
//   - HTTPS on the host name, with a certificate from ACME (production) or
//     Caddy's internal CA (test machines, private networks; its root is
//     kept in the storage directory and not installed into any trust
//     store);
//   - every plain-HTTP request redirected to HTTPS (ACME's HTTP challenge
//     is answered first, by Caddy itself);
//   - the API, the pages and the desktop websockets proxied to paddockd's
//     own listener (its unix socket), unbuffered so that exec streams,
//     log follows and websockets pass as they come; a configuration
//     replaced leaves the upgraded connections it carried open
//     (streamCloseDelay), where Caddy would close them;
//   - preview URLs https://PORT-BOX.HOST for any box name, proxied to
//     paddockd too, which answers for a box that does not exist as for
//     one the caller may not use, and otherwise reaches the port inside
//     the box; certificates are issued on demand only for names that
//     paddockd's ask endpoint confirms (a running box that listens).
//
// The configuration names no box, so it does not change when boxes come
// and go: a replaced configuration makes Caddy close the idle kept-alive
// connections of the old one, and a client that sent its request on one
// at that moment (the SDKs reuse them) read EOF. Behind a wildcard
// certificate it also no longer tells anyone without an account which
// box names exist: Caddy's 404 for the names outside the route did.
//
// Certificates, keys and the CA are kept in files, in the layout of Caddy's
// file_system storage, by a storage of its own (storage.go) that does not
// let Caddy's storage cleaner remove a site's folder under an issuance.
//
// Only the Caddy modules used are compiled in (not modules/standard). Caddy's
// admin endpoint is off: configuration changes only through Apply, which
// loads the new configuration before stopping the old (Caddy's own
// guarantee) and, when the new one fails, leaves the old one running and
// returns the error.
package caddy

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	caddycore "github.com/caddyserver/caddy/v2"

	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp"
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	_ "github.com/caddyserver/caddy/v2/modules/caddypki"
	_ "github.com/caddyserver/caddy/v2/modules/caddytls"
)

// Site is what the front door's configuration is made from.
type Site struct {
	// Hostname is the server's public name.
	Hostname string
	// Names are other names of the server, served as Hostname is, each
	// given its certificate on demand (when AskURL approves it): E2B's
	// api.HOSTNAME.
	Names []string
	// HTTPSListen and HTTPListen are host:port addresses (":443", ":80").
	HTTPSListen string
	HTTPListen  string
	// TLS is "acme" or "internal".
	TLS string
	// Email is given to the ACME CA (optional).
	Email string
	// StorageDir keeps certificates, keys and the internal CA.
	StorageDir string
	// Upstream is paddockd's own listener: "unix//path/to.sock" or host:port.
	Upstream string
	// AskURL is paddockd's endpoint that says whether a name may get a
	// certificate on demand.
	AskURL string
}

// RootCA is where the internal CA's root certificate is kept.
func RootCA(storageDir string) string {
	return filepath.Join(storageDir, "pki", "authorities", "local", "root.crt")
}

func port(addr string) (int, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("listen address %q: %w", addr, err)
	}
	return strconv.Atoi(p)
}

// PreviewPattern matches the Host of a preview URL of a box on hostname:
// PORT-BOX.HOSTNAME, with an optional :port.
func PreviewPattern(hostname string) string {
	return `^([0-9]{1,5})-([a-z0-9][a-z0-9-]*)\.` + regexp.QuoteMeta(hostname) + `(?::[0-9]+)?$`
}

type obj = map[string]any

// streamBuffer is the size of the proxy's reads from and writes to
// paddockd.
const streamBuffer = 256 << 10

// streamCloseDelay is how long an upgraded connection (an exec, a
// terminal, a desktop) that a replaced configuration carried is left
// open after the replacement.
const streamCloseDelay = "24h"

// Config builds the Caddy JSON configuration for a site.
func Config(s Site) ([]byte, error) {
	if s.Hostname == "" || s.Upstream == "" || s.StorageDir == "" {
		return nil, fmt.Errorf("front door: hostname, upstream and storage are required")
	}
	httpsPort, err := port(s.HTTPSListen)
	if err != nil {
		return nil, err
	}
	httpPort, err := port(s.HTTPListen)
	if err != nil {
		return nil, err
	}
	var issuer obj
	switch s.TLS {
	case "internal":
		issuer = obj{"module": "internal"}
	case "acme":
		issuer = obj{"module": "acme"}
		if s.Email != "" {
			issuer["email"] = s.Email
		}
	default:
		return nil, fmt.Errorf("front door: tls must be acme or internal, not %q", s.TLS)
	}
	proxy := obj{
		"handler":        "reverse_proxy",
		"upstreams":      []obj{{"dial": s.Upstream}},
		"flush_interval": -1,
		// Uploads and downloads (pushes, pulls, drive backups) pass in
		// 256 KiB writes, not the transport's 4 KiB.
		"transport": obj{"protocol": "http", "read_buffer_size": streamBuffer, "write_buffer_size": streamBuffer},
		// When a running configuration is replaced (Front.Apply with a
		// changed Site; paddockd itself loads one, at its start), Caddy
		// closes the upgraded connections of the one replaced (execs,
		// terminals, desktops) at once unless told to wait: they are
		// left this long instead, and end as they would have.
		"stream_close_delay": streamCloseDelay,
	}
	routes := []obj{
		{"match": []obj{{"host": append([]string{s.Hostname}, s.Names...)}}, "handle": []obj{proxy}, "terminal": true},
		{"match": []obj{{"header_regexp": obj{"Host": obj{"name": "preview", "pattern": PreviewPattern(s.Hostname)}}}}, "handle": []obj{proxy}, "terminal": true},
		{"handle": []obj{{"handler": "static_response", "status_code": 404, "body": "No such site on this server.\n"}}},
	}
	suffix := ""
	if httpsPort != 443 {
		suffix = ":" + strconv.Itoa(httpsPort)
	}
	tlsApp := obj{
		"automation": obj{
			"policies": []obj{
				{"subjects": []string{s.Hostname}, "issuers": []obj{issuer}},
				{"on_demand": true, "issuers": []obj{issuer}},
			},
			"on_demand": obj{"permission": obj{"module": "http", "endpoint": s.AskURL}},
		},
	}
	apps := obj{
		"http": obj{
			"http_port":  httpPort,
			"https_port": httpsPort,
			"servers": obj{
				"paddock": obj{
					"listen":                  []string{s.HTTPSListen},
					"routes":                  routes,
					"tls_connection_policies": []obj{{}},
					"protocols":               []string{"h1", "h2"},
					"automatic_https":         obj{"disable_redirects": true},
				},
				"redirect": obj{
					"listen": []string{s.HTTPListen},
					"routes": []obj{{"handle": []obj{{
						"handler":     "static_response",
						"status_code": 308,
						"headers":     obj{"Location": []string{"https://{http.request.host}" + suffix + "{http.request.uri}"}},
					}}}},
					"automatic_https": obj{"disable": true},
					"protocols":       []string{"h1"},
				},
			},
		},
		"tls": tlsApp,
	}
	if s.TLS == "internal" {
		apps["pki"] = obj{"certificate_authorities": obj{"local": obj{"install_trust": false}}}
	}
	return json.Marshal(obj{
		"admin":   obj{"disabled": true, "config": obj{"persist": false}},
		"logging": obj{"logs": obj{"default": obj{"level": "WARN"}}},
		"storage": obj{"module": storageModuleName, "root": s.StorageDir},
		"apps":    apps,
	})
}

// Front runs the embedded Caddy. One per process: Caddy's running
// configuration is process-wide.
type Front struct {
	mu      sync.Mutex
	current []byte
}

// Apply builds the configuration for s and, when it differs from the
// running one, loads it: the new configuration is started before the old
// one is stopped, and when it fails the old one keeps serving.
func (f *Front) Apply(s Site) error {
	cfg, err := Config(s)
	if err != nil {
		return err
	}
	return f.Load(cfg)
}

// Load runs a configuration as Apply does.
func (f *Front) Load(cfg []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if string(cfg) == string(f.current) {
		return nil
	}
	if err := caddycore.Load(cfg, false); err != nil {
		return fmt.Errorf("front door: the new configuration failed, the previous one keeps serving: %w", err)
	}
	f.current = cfg
	return nil
}

// Stop stops the front door.
func (f *Front) Stop() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.current == nil {
		return nil
	}
	f.current = nil
	return caddycore.Stop()
}
