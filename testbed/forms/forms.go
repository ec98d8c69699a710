// Package forms drives paddockd's HTML pages as a browser would, for the
// server tests and the end-to-end tests: a client with a cookie jar, form
// posts with the page's Origin, plain GETs, and the CSRF value of a page.
package forms

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
)

// TB is what the helpers need of a test: testing.TB has it, and so can a
// test script's command.
type TB interface {
	Helper()
	Fatal(args ...any)
}

// Browser is an HTTP client that keeps cookies.
func Browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar}
}

// Post posts a form to base+path as a page of base would (its Origin) and
// returns the status and body.
func Post(t TB, hc *http.Client, base, path string, v url.Values) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+path, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Get fetches u and returns the status and body.
func Get(t TB, hc *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// CSRF is the CSRF value of a page's form, or "" when it has none.
func CSRF(page string) string {
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return m[1]
}
