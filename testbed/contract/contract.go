// Package contract checks real API traffic against paddockd's OpenAPI
// document with a maintained validator (pb33f/libopenapi-validator, chosen
// because it validates OpenAPI 3.1 and JSON Schema 2020-12, which the
// document uses). Tests put a Checker between a client and the server, as
// an http.RoundTripper or as a reverse proxy, and fail on what it found:
// a route the document does not have, a status it does not list, a JSON
// body that does not match its schema.
//
// JSON bodies are validated whole; tar, text and event streams, and
// upgraded connections are only matched to their operation and status.
package contract

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"
)

// Checker validates exchanges against one document.
type Checker struct {
	v   validator.Validator
	ops []op

	mu       sync.Mutex
	failures []string
	checked  map[string]int
}

type op struct {
	method string
	re     *regexp.Regexp
	path   string
	codes  map[string]bool
}

// New makes a Checker of an OpenAPI document (JSON); the document itself
// must be valid.
func New(doc []byte) (*Checker, error) {
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, err
	}
	v, errs := validator.NewValidator(d)
	if len(errs) > 0 {
		return nil, fmt.Errorf("the document: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		var msgs []string
		for _, e := range verrs {
			msgs = append(msgs, e.Message+": "+e.Reason)
		}
		return nil, fmt.Errorf("the document is not valid OpenAPI: %s", strings.Join(msgs, "; "))
	}
	c := &Checker{v: v, checked: map[string]int{}}
	model, err := d.BuildV3Model()
	if err != nil {
		return nil, err
	}
	for pair := model.Model.Paths.PathItems.First(); pair != nil; pair = pair.Next() {
		path := pair.Key()
		re := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[a-z]+\\\}`).ReplaceAllString(regexp.QuoteMeta(path), `[^/]+`) + "$")
		for m := pair.Value().GetOperations().First(); m != nil; m = m.Next() {
			codes := map[string]bool{}
			for r := m.Value().Responses.Codes.First(); r != nil; r = r.Next() {
				codes[r.Key()] = true
			}
			c.ops = append(c.ops, op{method: strings.ToUpper(m.Key()), re: re, path: path, codes: codes})
		}
	}
	return c, nil
}

func (c *Checker) fail(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.failures) < 100 {
		c.failures = append(c.failures, fmt.Sprintf(format, args...))
	}
}

// Failures are the mismatches found so far.
func (c *Checker) Failures() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.failures...)
}

// Checked counts the exchanges checked, by operation ("GET /v1/boxes").
func (c *Checker) Checked() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.checked {
		out[k] = v
	}
	return out
}

// Summary says how many exchanges of how many operations were checked.
func (c *Checker) Summary() string {
	ch := c.Checked()
	n := 0
	var names []string
	for k, v := range ch {
		n += v
		names = append(names, k)
	}
	sort.Strings(names)
	return fmt.Sprintf("%d exchanges of %d operations checked against the OpenAPI document", n, len(names))
}

func isJSON(h http.Header) bool {
	return strings.HasPrefix(h.Get("Content-Type"), "application/json")
}

// maxBody bounds a JSON body kept for validation.
const maxBody = 8 << 20

// check validates one exchange; reqBody and respBody are the JSON bodies
// (nil when not JSON or not read).
func (c *Checker) check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) {
	if !strings.HasPrefix(req.URL.Path, "/v1/") {
		return
	}
	var found *op
	for i := range c.ops {
		if c.ops[i].method == req.Method && c.ops[i].re.MatchString(req.URL.Path) {
			found = &c.ops[i]
			break
		}
	}
	if found == nil {
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			c.fail("%s %s: answered %d, and the document has no such operation", req.Method, req.URL.Path, resp.StatusCode)
		}
		return
	}
	name := req.Method + " " + found.path
	c.mu.Lock()
	c.checked[name]++
	c.mu.Unlock()
	code := fmt.Sprint(resp.StatusCode)
	if resp.StatusCode < 400 && !found.codes[code] {
		c.fail("%s: status %d is not in the document (it lists %v)", name, resp.StatusCode, keys(found.codes))
	}
	if resp.StatusCode >= 400 && !isJSON(resp.Header) {
		c.fail("%s: error status %d without the JSON error body (Content-Type %q)", name, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if reqBody != nil && resp.StatusCode < 400 {
		r2 := req.Clone(req.Context())
		r2.Body = io.NopCloser(bytes.NewReader(reqBody))
		r2.Header.Set("Content-Type", "application/json")
		if ok, errs := c.v.ValidateHttpRequestSync(r2); !ok {
			c.fail("%s: request body: %s", name, describe(errs))
		}
	}
	if respBody != nil && resp.StatusCode != http.StatusSwitchingProtocols {
		r2 := req.Clone(req.Context())
		r2.Body = io.NopCloser(bytes.NewReader(reqBody))
		rs := *resp
		rs.Body = io.NopCloser(bytes.NewReader(respBody))
		if ok, errs := c.v.ValidateHttpResponse(r2, &rs); !ok {
			c.fail("%s %d: response body: %s", name, resp.StatusCode, describe(errs))
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func describe(errs []*verrors.ValidationError) string {
	var out []string
	for _, e := range errs {
		s := e.Message
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		for _, se := range e.SchemaValidationErrors {
			s += fmt.Sprintf(" [%s: %s]", se.FieldPath, se.Reason)
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// Transport wraps base (nil: the default) so that every exchange is checked.
func (c *Checker) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper{c, base}
}

type roundTripper struct {
	c    *Checker
	base http.RoundTripper
}

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil && isJSON(req.Header) {
		b, err := io.ReadAll(io.LimitReader(req.Body, maxBody))
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	var respBody []byte
	if isJSON(resp.Header) {
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		respBody = b
		resp.Body = io.NopCloser(bytes.NewReader(b))
	}
	rt.c.check(req, reqBody, resp, respBody)
	return resp, nil
}

// Proxy is a reverse proxy to target whose exchanges are checked;
// upgraded connections (exec, websockets) and streams pass through.
func (c *Checker) Proxy(target string) (http.Handler, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := httputil.NewSingleHostReverseProxy(u)
	p.Transport = c.Transport(nil)
	p.FlushInterval = -1
	return p, nil
}
