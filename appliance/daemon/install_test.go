package daemon

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/units"
)

func TestInstallIsIdempotent(t *testing.T) {
	root := t.TempDir()
	var out, errb bytes.Buffer
	if code := Run([]string{"install", "--root", root, "--no-start", "--runtime", "runc"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "config: wrote") || !strings.Contains(out.String(), "unit: wrote") {
		t.Fatalf("first run:\n%s", out.String())
	}
	conf, err := os.ReadFile(filepath.Join(root, "etc/paddock/paddock.toml"))
	if err != nil || !strings.Contains(string(conf), `runtime = "runc"`) {
		t.Fatalf("config %q %v", conf, err)
	}
	unit, _ := os.ReadFile(filepath.Join(root, "etc/systemd/system/paddockd.service"))
	if !bytes.Equal(unit, units.Service) {
		t.Fatal("the unit written is not the embedded one")
	}
	if fi, err := os.Stat(filepath.Join(root, "var/lib/paddock")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state dir %v %v", fi, err)
	}
	// A hand-edited config is kept; nothing else changes the second time.
	os.WriteFile(filepath.Join(root, "etc/paddock/paddock.toml"), []byte("runtime = \"sysbox-runc\"\n"), 0o640)
	out.Reset()
	if code := Run([]string{"install", "--root", root, "--no-start"}, nil, &out, &errb); code != 0 {
		t.Fatalf("second run exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "config: kept") || !strings.Contains(out.String(), "unit: unchanged") {
		t.Fatalf("second run:\n%s", out.String())
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/paddock/paddock.toml")); string(b) != "runtime = \"sysbox-runc\"\n" {
		t.Fatalf("the config was overwritten: %q", b)
	}
	if code := Run([]string{"install", "--root", root, "--no-start", "--runtime", "crun"}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), `runtime "crun"`) {
		t.Fatalf("bad runtime accepted: %d %s", code, errb.String())
	}
}

func TestInstallPrintsTheSetupLinkUntilThereIsAnOwner(t *testing.T) {
	root := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"install", "--root", root, "--no-start", "--runtime", "runc", "--hostname", "pd.example.org", "--tls", "internal"}
	if code := Run(args, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	link := regexp.MustCompile(`https://pd\.example\.org/setup/(pdk_[0-9a-f]{64})`).FindStringSubmatch(out.String())
	if link == nil {
		t.Fatalf("no setup link:\n%s", out.String())
	}
	if conf, _ := os.ReadFile(filepath.Join(root, "etc/paddock/paddock.toml")); !strings.Contains(string(conf), `hostname = "pd.example.org"`) {
		t.Fatalf("config: %s", conf)
	}
	// Only the hash is stored.
	db, _ := os.ReadFile(filepath.Join(root, "var/lib/paddock/paddock.db"))
	wal, _ := os.ReadFile(filepath.Join(root, "var/lib/paddock/paddock.db-wal"))
	if bytes.Contains(append(db, wal...), []byte(link[1])) {
		t.Fatal("the setup token is stored in the clear")
	}
	// A second run makes a fresh link (the first stops working) while no
	// owner exists; once one does, it says so and makes none.
	out.Reset()
	Run(args, nil, &out, &errb)
	link2 := regexp.MustCompile(`/setup/(pdk_[0-9a-f]{64})`).FindStringSubmatch(out.String())
	if link2 == nil || link2[1] == link[1] {
		t.Fatalf("second run:\n%s", out.String())
	}
	st, err := store.Open(filepath.Join(root, "var/lib/paddock"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RedeemLink(auth.Hash(link[1]), time.Now(), store.User{Name: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the replaced link: %v", err)
	}
	if _, err := st.RedeemLink(auth.Hash(link2[1]), time.Now(), store.User{Name: "olga"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	out.Reset()
	Run(append(args[:len(args):len(args)], "--hostname", "other.example.org"), nil, &out, &errb)
	if !strings.Contains(out.String(), `keeps hostname "pd.example.org" (not "other.example.org")`) {
		t.Fatalf("a different host name on a second run:\n%s", out.String())
	}
	out.Reset()
	Run(args, nil, &out, &errb)
	if strings.Contains(out.String(), "/setup/") || !strings.Contains(out.String(), "the owner account exists") {
		t.Fatalf("run after setup:\n%s", out.String())
	}
}
