package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/testbed/forms"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// The server serves the CLI of its own version: /cli/install.sh installs
// it into a fresh home after checking its checksum (and refuses a binary
// whose checksum is wrong), and the installed CLI logs in and sees the same
// version on both sides. PowerShell is not in Debian's packages, so
// install.ps1 is checked by what it fetches: the server's address, the
// Windows binary's name and the SHA256SUMS its Get-FileHash is compared
// with, which the test verifies against the served binary.
func TestCLIInstall(t *testing.T) {
	dir := t.TempDir()
	cliDir := filepath.Join(dir, "cli")
	os.MkdirAll(cliDir, 0o755)
	linux := "paddock-linux-" + goruntime.GOARCH
	files := map[string][]byte{"paddock-windows-amd64.exe": []byte("MZ not really windows")}
	var err error
	if files[linux], err = os.ReadFile(bins.Paddock); err != nil {
		t.Fatal(err)
	}
	var sums strings.Builder
	for name, b := range files {
		os.WriteFile(filepath.Join(cliDir, name), b, 0o644)
		h := sha256.Sum256(b)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(h[:]), name)
	}
	os.WriteFile(filepath.Join(cliDir, "SHA256SUMS"), []byte(sums.String()), 0o644)

	d := newDaemon(t, filepath.Join(dir, "d"))
	d.Env = append(d.Env, "PADDOCK_CLI_DIR="+cliDir)
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Cleanup)
	base := "http://" + d.Listen
	home := filepath.Join(dir, "home")
	install := func(into string) (string, error) {
		cmd := exec.Command("sh", "-c", "curl -fsSL "+base+"/cli/install.sh | sh")
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "PADDOCK_INSTALL_DIR=" + into}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	bin := filepath.Join(home, "bin")
	out, err := install(bin)
	if err != nil || !strings.Contains(out, "installed "+bin+"/paddock (paddock "+harness.TestVersion+")") || !strings.Contains(out, "paddock login "+base) {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	cli := func(args ...string) (string, string) {
		cmd := exec.Command(filepath.Join(bin, "paddock"), args...)
		cmd.Env = []string{"HOME=" + home, "PADDOCK_CONFIG_DIR=" + filepath.Join(home, "cfg")}
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			t.Fatalf("paddock %v: %v\n%s%s", args, err, o.String(), e.String())
		}
		return o.String(), e.String()
	}
	if o, e := cli("login", base, "--token", d.Token); !strings.Contains(o, "Logged in to "+base) || e != "" {
		t.Fatalf("login with the installed CLI: %s %s", o, e)
	}
	if o, e := cli("version"); o != "client "+harness.TestVersion+"\nserver "+harness.TestVersion+" ("+base+")\n" || e != "" {
		t.Fatalf("version: %q %q", o, e)
	}

	// A binary whose checksum is not the listed one installs nothing.
	os.WriteFile(filepath.Join(cliDir, linux), append(files[linux], 0), 0o644)
	other := filepath.Join(home, "other")
	if out, err := install(other); err == nil || !strings.Contains(out, "checksum mismatch") || !strings.Contains(out, "nothing was installed") {
		t.Fatalf("install of a tampered binary: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(other, "paddock")); err == nil {
		t.Fatal("a tampered binary was installed")
	}

	// install.ps1 names this server, fetches the Windows binary and
	// SHA256SUMS, and compares Get-FileHash with the listed sum, which
	// matches what the server serves.
	hc := forms.Browser()
	_, ps := forms.Get(t, hc, base+"/cli/install.ps1")
	for _, want := range []string{"$url = '" + base + "'", `"paddock-windows-$arch.exe"`, `"$url/cli/SHA256SUMS"`, `"$url/cli/$name"`,
		"Get-FileHash -Algorithm SHA256", "if ($got -ne $want) { throw", "SetEnvironmentVariable('Path'"} {
		if !strings.Contains(ps, want) {
			t.Errorf("install.ps1 lacks %s", want)
		}
	}
	code, exe := forms.Get(t, hc, base+"/cli/paddock-windows-amd64.exe")
	_, listed := forms.Get(t, hc, base+"/cli/SHA256SUMS")
	h := sha256.Sum256([]byte(exe))
	if code != 200 || !strings.Contains(listed, hex.EncodeToString(h[:])+"  paddock-windows-amd64.exe") {
		t.Errorf("the Windows binary served (%d) does not match SHA256SUMS:\n%s", code, listed)
	}
	if code, page := forms.Get(t, hc, base+"/cli/"); code != 200 || !strings.Contains(page, "curl -fsSL "+base+"/cli/install.sh | sh") || !strings.Contains(page, linux) {
		t.Errorf("/cli/: %d %s", code, page)
	}
	if code, _ := forms.Get(t, hc, base+"/cli/..%2Fpaddock.db"); code != 404 {
		t.Errorf("a path out of the CLI directory: %d", code)
	}
}
