package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/testbed/forms"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// member makes a member of d through an invitation redeemed in a browser
// (net/http with cookies) and a device login approved there, and returns
// the member's API client.
func member(t *testing.T, d *harness.Daemon, name string) *client.Client {
	t.Helper()
	c, _ := client.New("http://"+d.Listen, memberToken(t, d, name))
	return c
}

// memberToken makes a member as member does and returns its API token.
func memberToken(t forms.TB, d *harness.Daemon, name string) string {
	t.Helper()
	return userToken(t, d, name, "member")
}

// userToken is memberToken for a user of another role.
func userToken(t forms.TB, d *harness.Daemon, name, role string) string {
	t.Helper()
	ctx := context.Background()
	inv, err := d.Client().Invite(ctx, role)
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	base := "http://" + d.Listen
	if code, body := forms.Post(t, b, base, strings.TrimPrefix(inv.URL, base), url.Values{"name": {name}, "password": {"a long password"}, "password2": {"a long password"}}); code != 201 {
		t.Fatal(fmt.Sprintf("redeeming the invitation: %d %s", code, body))
	}
	anon, _ := client.New(base, "")
	dc, err := anon.DeviceStart(ctx, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	approveDevice(t, b, base, dc.VerificationURIComplete, dc.UserCode)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	tok, err := anon.DeviceWait(wctx, dc)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// A member's SSH key opens the member's box with the real OpenSSH client,
// and is refused at another user's box; the member's API calls do not see
// that box either.
func TestMembersOverSSH(t *testing.T) {
	harness.Tool(t, "ssh")
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	ctx := context.Background()
	if _, err := d.Client().CreateBox(ctx, api.BoxPost{Name: "ownersbox"}); err != nil {
		t.Fatal(err)
	}
	mia := member(t, d, "mia")
	if _, err := mia.CreateBox(ctx, api.BoxPost{Name: "miasbox"}); err != nil {
		t.Fatal(err)
	}
	if _, err := mia.Box(ctx, "ownersbox"); err == nil || !strings.Contains(err.Error(), `no box named "ownersbox"`) {
		t.Fatalf("the member reads the owner's box: %v", err)
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "id")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "mia", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	pub, _ := os.ReadFile(key + ".pub")
	if _, err := mia.AddKey(ctx, api.KeyPost{Key: string(pub)}); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(d.SSH)
	ssh := func(box string, cmd string) (string, error) {
		out, err := exec.Command("ssh", "-F", "none", "-i", key, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
			"-o", "UserKnownHostsFile="+filepath.Join(dir, "known"), "-o", "LogLevel=ERROR", "-p", port, box+"@127.0.0.1", cmd).CombinedOutput()
		return string(out), err
	}
	if out, err := ssh("miasbox", "id -un; exit 4"); exitCode(err) != 4 || !strings.Contains(out, "paddock") {
		t.Fatalf("ssh to the member's box: %v %s", err, out)
	}
	if out, err := ssh("ownersbox", "true"); err == nil || !strings.Contains(out, "Permission denied") {
		t.Fatalf("ssh to the owner's box with the member's key: %v %s", err, out)
	}
	// The owner does not see the member's key among theirs.
	if ks, err := d.Client().Keys(ctx); err != nil || len(ks) != 0 {
		t.Fatalf("the owner's keys: %v %v", ks, err)
	}
}
