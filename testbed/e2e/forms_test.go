package e2e

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/paddock-dev/paddock/testbed/forms"
)

// approveDevice opens a device login's verification URL in browser hc,
// logged in to base, types the code, and approves it on the confirmation
// page with the page's CSRF value.
func approveDevice(t forms.TB, hc *http.Client, base, verify, userCode string) {
	t.Helper()
	_, page := forms.Get(t, hc, verify)
	csrf := forms.CSRF(page)
	if csrf == "" {
		t.Fatal("device page: " + page)
	}
	if code, body := forms.Post(t, hc, base, "/device", url.Values{"code": {userCode}, "action": {"review"}, "csrf": {csrf}}); code != 200 {
		t.Fatal(fmt.Sprintf("the device login's confirmation page: %d %s", code, body))
	}
	if code, body := forms.Post(t, hc, base, "/device", url.Values{"code": {userCode}, "action": {"approve"}, "csrf": {csrf}}); code != 200 {
		t.Fatal(fmt.Sprintf("approving the device login: %d %s", code, body))
	}
}
