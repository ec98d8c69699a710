package e2e

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// postForm posts a form to base+path as a page of base would (its Origin).
func postForm(t *testing.T, hc *http.Client, base, path string, v url.Values) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+path, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// approveDevice opens a device login's verification URL (which carries the
// code) in browser hc, logged in to base, and approves it with the page's
// CSRF value.
func approveDevice(t *testing.T, hc *http.Client, base, verify string) {
	t.Helper()
	resp, err := hc.Get(verify)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(page))
	if csrf == nil {
		t.Fatalf("device page: %s", page)
	}
	u, err := url.Parse(verify)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := postForm(t, hc, base, "/device", url.Values{"code": {u.Query().Get("code")}, "action": {"approve"}, "csrf": {csrf[1]}}); code != 200 {
		t.Fatalf("approving the device login: %d %s", code, body)
	}
}
