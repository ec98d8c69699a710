package daemon

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
