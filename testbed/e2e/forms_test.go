package e2e

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/paddock-dev/paddock/testbed/forms"
)

// approveDevice opens a device login's verification URL (which carries the
// code) in browser hc, logged in to base, and approves it with the page's
// CSRF value.
func approveDevice(t forms.TB, hc *http.Client, base, verify string) {
	t.Helper()
	_, page := forms.Get(t, hc, verify)
	csrf := forms.CSRF(page)
	if csrf == "" {
		t.Fatal("device page: " + page)
	}
	u, err := url.Parse(verify)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := forms.Post(t, hc, base, "/device", url.Values{"code": {u.Query().Get("code")}, "action": {"approve"}, "csrf": {csrf}}); code != 200 {
		t.Fatal(fmt.Sprintf("approving the device login: %d %s", code, body))
	}
}
