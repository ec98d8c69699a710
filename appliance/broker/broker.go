// Package broker is the credential broker: a box that uses one of its
// owner's brokered secrets holds a stand-in token in the secret's
// variable, never the secret, and reaches the API the secret is for
// through the broker, which listens on the host side of the box network.
//
// A box sends plain HTTP to http://GATEWAY:PORT/HOST/PATH with the
// stand-in where its API expects the secret (a header). The broker finds
// the box by the request's source address (which the box network's rules
// keep a box from forging), asks Grant whether that box may use the
// secret the stand-in names, checks the stand-in is that box's, that HOST
// is one the secret may be sent to and that the box is within its rate,
// puts the secret in place of the stand-in and forwards the request over
// HTTPS to HOST, checking its certificate. No address on this machine, in
// a private range or a cloud's metadata range is ever dialled (Refuse),
// whatever a secret's hosts resolve to.
//
// A stand-in is an HMAC of the box's own id, the secret's owner, name and
// the time it was set, under a key of this server: it is stored nowhere,
// is worth nothing from another box or once the box is gone, and changes
// when the secret is set again.
package broker

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Header is where a secret goes in a request: the header Name, its value
// Prefix then the secret.
type Header struct {
	Name   string
	Prefix string
}

// Named headers: the forms the common APIs take.
var named = map[string]Header{
	"x-api-key": {Name: "X-Api-Key"},
	"bearer":    {Name: "Authorization", Prefix: "Bearer "},
	"token":     {Name: "Authorization", Prefix: "token "},
}

// The package's expressions are compiled on first use: the CLI imports
// this package (a Boxfile's secret blocks are checked with it), and
// compiling them as it starts cost every command 2.4 ms.
var headerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,63}$`) })

// ParseHeader reads a header spec: "x-api-key", "bearer" (Authorization:
// Bearer SECRET), "token" (Authorization: token SECRET), a header's name
// (the secret is its whole value), or "NAME: PREFIX" (the value is PREFIX,
// a space, then the secret).
func ParseHeader(spec string) (Header, error) {
	spec = strings.TrimSpace(spec)
	if h, ok := named[strings.ToLower(spec)]; ok {
		return h, nil
	}
	name, prefix, templ := strings.Cut(spec, ":")
	name, prefix = strings.TrimSpace(name), strings.TrimSpace(prefix)
	if !headerName().MatchString(name) || (templ && prefix == "") || strings.ContainsAny(prefix, "\r\n") {
		return Header{}, fmt.Errorf("bad header %q: use x-api-key, bearer, token, a header's name, or \"NAME: PREFIX\"", spec)
	}
	if strings.EqualFold(name, "host") || strings.EqualFold(name, "content-length") {
		return Header{}, fmt.Errorf("bad header %q: a secret cannot go in %s", spec, name)
	}
	h := Header{Name: http.CanonicalHeaderKey(name)}
	if prefix != "" {
		h.Prefix = prefix + " "
	}
	return h, nil
}

// String is the spec that parses back to h.
func (h Header) String() string {
	for n, v := range named {
		if v == h {
			return n
		}
	}
	if h.Prefix == "" {
		return h.Name
	}
	return h.Name + ": " + strings.TrimSuffix(h.Prefix, " ")
}

var hostName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(:[0-9]{1,5})?$`)
})

// CheckHosts checks the hosts a secret may be sent to: DNS names, each
// with an optional port (443 when none), at least one.
func CheckHosts(hosts []string) error {
	if len(hosts) == 0 {
		return errors.New("a brokered secret needs the host(s) it may be sent to")
	}
	if len(hosts) > 16 {
		return errors.New("at most 16 hosts per secret")
	}
	for _, h := range hosts {
		name, port, hasPort := strings.Cut(h, ":")
		if !hostName().MatchString(h) || len(h) > 253 || !strings.Contains(name, ".") {
			return fmt.Errorf("bad host %q: a DNS name such as api.example.com, lower case, with an optional :PORT", h)
		}
		if _, err := netip.ParseAddr(name); err == nil {
			return fmt.Errorf("bad host %q: name the host, not its address (its certificate is checked against the name)", h)
		}
		if n, err := strconv.Atoi(port); hasPort && (err != nil || n < 1 || n > 65535) {
			return fmt.Errorf("bad host %q: the port must be 1 to 65535", h)
		}
	}
	return nil
}

// Limit is how many requests one box may send with one secret in Per.
type Limit struct {
	N   int
	Per time.Duration
}

var limitForm = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([0-9]{1,9})/(s|sec|second|m|min|minute|h|hour|d|day)$`)
})

// ParseLimit reads "N/min", "N/h", "N/day" or "N/s" ("" is no limit).
func ParseLimit(s string) (Limit, error) {
	if s == "" {
		return Limit{}, nil
	}
	m := limitForm().FindStringSubmatch(strings.ReplaceAll(strings.ToLower(s), " ", ""))
	if m == nil {
		return Limit{}, fmt.Errorf("bad limit %q: use N/s, N/min, N/h or N/day (requests per box)", s)
	}
	n, _ := strconv.Atoi(m[1])
	if n < 1 {
		return Limit{}, fmt.Errorf("bad limit %q: at least 1 request", s)
	}
	per := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[m[2][0]]
	return Limit{N: n, Per: per}, nil
}

// String is the limit's form ("" for none).
func (l Limit) String() string {
	if l.N == 0 {
		return ""
	}
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "min", time.Hour: "h", 24 * time.Hour: "day"}[l.Per]
	return fmt.Sprintf("%d/%s", l.N, unit)
}

// StandIn is the stand-in of a box (by its own id) for a secret (its
// owner, name and the time it was set) of the box's owner's: theirs, or
// one shared with them.
func StandIn(key []byte, boxUID string, owner int64, secret string, set time.Time) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "paddock stand-in\x00%s\x00%d\x00%s\x00%d", boxUID, owner, secret, set.UnixNano())
	return "pdk-" + secret + "-" + hex.EncodeToString(m.Sum(nil)[:20])
}

// UserStandIn is the stand-in of a box for a secret of user's (theirs,
// or one shared with them) who is not the box's owner: a prompt they
// asked for in a box shared with them runs with it. The stand-in names
// them (pdk-NAME-uID-…), so the broker finds their secret, and spends it
// under their name.
func UserStandIn(key []byte, boxUID string, user, owner int64, secret string, set time.Time) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "paddock stand-in of a user\x00%s\x00%d\x00%d\x00%s\x00%d", boxUID, user, owner, secret, set.UnixNano())
	return fmt.Sprintf("pdk-%s-u%d-%s", secret, user, hex.EncodeToString(m.Sum(nil)[:20]))
}

var standIn = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`pdk-([A-Za-z_][A-Za-z0-9_]{0,127})-(?:u([1-9][0-9]{0,18})-)?[0-9a-f]{40}`)
})

// Grant is what a box may do with one secret. With a Refusal, Box is
// still set when the address is a box's.
type Grant struct {
	Box string
	// User names whose secret it is when it is not the box's owner's
	// (UserStandIn).
	User    string
	StandIn string
	Value   []byte
	Header  Header
	Hosts   []string
	Limit   Limit
}

// Refusal is a request the broker turned away, and why; Grant returns
// one for a box or secret that may not be used (anything else is the
// server's own error).
type Refusal struct {
	Status int
	Reason string
}

func (r *Refusal) Error() string { return r.Reason }

func refuse(status int, format string, args ...any) *Refusal {
	return &Refusal{Status: status, Reason: fmt.Sprintf(format, args...)}
}

// Done is one request the broker answered: forwarded (Status is the
// API's, or 502 when it could not be reached) or refused (Refused says
// why). Box and Secret are empty when the request named no secret.
type Done struct {
	Box, Secret, Host string
	// User is Grant.User: whose secret was spent, when not the box
	// owner's.
	User     string
	Addr     string
	Status   int
	Up, Down int64 // request and response body bytes
	Refused  string
	// Limited: refused for the box's rate, the first time in its window.
	FirstLimited bool
}

// Broker serves the boxes' requests.
type Broker struct {
	// Grant says what the box at addr may do with secret, or why not:
	// the box's owner's secret of that name (user 0), or user's, as the
	// stand-in says (UserStandIn).
	Grant func(ctx context.Context, addr netip.Addr, secret string, user int64) (Grant, error)
	// Done hears of each request once it is answered (on a goroutine of
	// its own).
	Done func(Done)
	// RootCAs are the authorities upstream certificates are checked
	// against (nil: the system's).
	RootCAs *x509.CertPool
	// Resolver looks up the hosts (nil: the system's).
	Resolver *net.Resolver
	// Refuse says an address is never dialled.
	Refuse func(netip.Addr) bool
	// Now is the clock of the rate limits (nil: time.Now).
	Now func() time.Time

	once   sync.Once
	proxy  *httputil.ReverseProxy
	mu     sync.Mutex
	window map[string]*window
}

type window struct {
	start  time.Time
	n      int
	warned bool
}

type ctxKey struct{}

type target struct {
	host, path, rawPath, rawQuery string
	grant                         Grant
}

func (b *Broker) init() {
	b.once.Do(func() {
		b.window = map[string]*window{}
		tr := &http.Transport{
			DialContext:         b.dial,
			TLSClientConfig:     &tls.Config{RootCAs: b.RootCAs, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 15 * time.Second,
		}
		b.proxy = &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				t := pr.In.Context().Value(ctxKey{}).(*target)
				pr.Out.URL.Scheme, pr.Out.URL.Host = "https", t.host
				pr.Out.URL.Path, pr.Out.URL.RawPath, pr.Out.URL.RawQuery = t.path, t.rawPath, t.rawQuery
				pr.Out.Host = t.host
				h := t.grant.Header
				pr.Out.Header.Set(h.Name, h.Prefix+string(t.grant.Value))
			},
			Transport:     tr,
			FlushInterval: -1, // streamed answers (server-sent events) as they come
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				t := r.Context().Value(ctxKey{}).(*target)
				msg := err.Error()
				// The real value never goes back to the box, whatever
				// the error quotes.
				msg = strings.ReplaceAll(msg, string(t.grant.Value), "[secret]")
				http.Error(w, "paddock broker: "+t.host+" could not be reached: "+msg, http.StatusBadGateway)
			},
		}
	})
}

// dial connects to a host, only at addresses Refuse lets through.
func (b *Broker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	r := b.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ips, err := r.LookupNetIP(ctx, "ip4", host)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	var last error
	for _, ip := range ips {
		ip = ip.Unmap()
		if b.Refuse != nil && b.Refuse(ip) {
			last = fmt.Errorf("%s is at %s, where the broker never sends a secret (this machine, a private or metadata address)", host, ip)
			continue
		}
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		last = err
	}
	if last == nil {
		last = fmt.Errorf("%s has no IPv4 address", host)
	}
	return nil, last
}

// allow counts a request of a box on a secret against its limit: fixed
// windows of Per from the first request.
func (b *Broker) allow(key string, l Limit) (ok, first bool, retry time.Duration) {
	if l.N == 0 {
		return true, false, 0
	}
	now := time.Now()
	if b.Now != nil {
		now = b.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.window[key]
	if w == nil || now.Sub(w.start) >= l.Per {
		if len(b.window) > 4096 {
			for k, o := range b.window {
				if now.Sub(o.start) >= 24*time.Hour {
					delete(b.window, k)
				}
			}
		}
		w = &window{start: now}
		b.window[key] = w
	}
	if w.n >= l.N {
		first, w.warned = !w.warned, true
		return false, first, w.start.Add(l.Per).Sub(now)
	}
	w.n++
	return true, false, 0
}

// findStandIn finds a stand-in in the request's headers: its secret's
// name, the user it names (0: the box's owner), its text, the header.
func findStandIn(h http.Header) (name string, user int64, token, in string) {
	for k, vs := range h {
		for _, v := range vs {
			if m := standIn().FindStringSubmatch(v); m != nil {
				if m[2] != "" {
					var err error
					if user, err = strconv.ParseInt(m[2], 10, 64); err != nil {
						continue
					}
				}
				return m[1], user, m[0], k
			}
		}
	}
	return "", 0, "", ""
}

// ServeHTTP answers one request of a box.
func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.init()
	d := Done{Addr: r.RemoteAddr}
	cw := &countingWriter{ResponseWriter: w}
	body := &countingReader{r: r.Body}
	r.Body = body
	t := &target{}
	defer func() {
		d.Up, d.Down = body.n, cw.n
		if d.Status == 0 {
			d.Status = cw.status
		}
		if b.Done != nil {
			go b.Done(d)
		}
	}()
	fail := func(rf *Refusal) {
		d.Refused, d.Status = rf.Reason, rf.Status
		http.Error(cw, "paddock broker: "+rf.Reason, rf.Status)
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		fail(refuse(http.StatusForbidden, "no source address"))
		return
	}
	// /HOST/PATH, kept as the box escaped it.
	esc := strings.TrimPrefix(r.URL.EscapedPath(), "/")
	host, rest, _ := strings.Cut(esc, "/")
	host = strings.ToLower(host)
	d.Host = host
	if err := CheckHosts([]string{host}); err != nil {
		fail(refuse(http.StatusBadRequest, "ask for http://BROKER/HOST/PATH: %v", err))
		return
	}
	name, user, token, in := findStandIn(r.Header)
	if name == "" {
		fail(refuse(http.StatusUnauthorized, "no stand-in in the request: send the secret's variable (pdk-NAME-...) where the API expects its key"))
		return
	}
	d.Secret = name
	g, err := b.Grant(r.Context(), ap.Addr().Unmap(), name, user)
	d.Box, d.User = g.Box, g.User // a refusal names the box when there is one
	var rf *Refusal
	if errors.As(err, &rf) {
		fail(rf)
		return
	} else if err != nil {
		d.Status = http.StatusInternalServerError
		http.Error(cw, "paddock broker: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(g.StandIn)) != 1 {
		fail(refuse(http.StatusForbidden, "this stand-in for %s is not box %s's", name, g.Box))
		return
	}
	if !slices.Contains(g.Hosts, host) {
		fail(refuse(http.StatusForbidden, "secret %s is not sent to %s (its hosts: %s)", name, host, strings.Join(g.Hosts, ", ")))
		return
	}
	if got := r.Header.Get(g.Header.Name); in != g.Header.Name || got != g.Header.Prefix+token {
		fail(refuse(http.StatusBadRequest, "secret %s goes in the header %q as %q", name, g.Header.Name, g.Header.Prefix+"$"+name))
		return
	}
	if ok, first, retry := b.allow(g.Box+"\x00"+name+"\x00"+strconv.FormatInt(user, 10), g.Limit); !ok {
		d.FirstLimited = first
		cw.Header().Set("Retry-After", strconv.Itoa(int(retry/time.Second)+1))
		fail(refuse(http.StatusTooManyRequests, "box %s is past its limit of %s on secret %s", g.Box, g.Limit, name))
		return
	}
	p, err := url.PathUnescape("/" + rest)
	if err != nil {
		fail(refuse(http.StatusBadRequest, "bad path: %v", err))
		return
	}
	t.host, t.path, t.rawPath, t.rawQuery, t.grant = host, p, "/"+rest, r.URL.RawQuery, g
	b.proxy.ServeHTTP(cw, r.WithContext(context.WithValue(r.Context(), ctxKey{}, t)))
}

type countingWriter struct {
	http.ResponseWriter
	n      int64
	status int
}

func (c *countingWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController flush the box's answer.
func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

type countingReader struct {
	r io.ReadCloser
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }
