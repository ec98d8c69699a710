package remotecmd

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// The block goes at the top of the user's SSH config, keeps everything
// else as it was, and replaces itself on each install: installing twice
// is installing once.
func TestSSHBlockIsKeptInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ssh", "config")
	mine := "Host *\n  User me\n  ServerAliveInterval 30\n\nHost work\n  HostName work.example\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(mine), 0o640); err != nil {
		t.Fatal(err)
	}
	one := sshEntries([]string{"web"}, "pd.example", 2222, []string{"-o", "UserKnownHostsFile=/k", "-o", "StrictHostKeyChecking=yes"})
	two := sshEntries([]string{"api", "web"}, "pd.example", 2222, nil)
	for _, entries := range []string{one, one, two} {
		if err := installSSHBlock(path, entries); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	got := string(b)
	want := sshBlockBegin + "\n" + two + sshBlockEnd + "\n\n" + mine
	if got != want {
		t.Fatalf("the config after three installs:\n%s\nwant:\n%s", got, want)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("the config's mode became %v", fi.Mode().Perm())
	}
	if !strings.Contains(one, "Host web.paddock\n  HostName pd.example\n  Port 2222\n  User web\n  UserKnownHostsFile /k\n  StrictHostKeyChecking yes\n") {
		t.Errorf("the entry: %q", one)
	}
	// A new file is the block alone, mode 0600.
	fresh := filepath.Join(t.TempDir(), "config")
	if err := installSSHBlock(fresh, one); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(fresh); string(b) != sshBlockBegin+"\n"+one+sshBlockEnd+"\n" {
		t.Errorf("a new config: %q", b)
	}
	if fi, _ := os.Stat(fresh); fi.Mode().Perm() != 0o600 {
		t.Errorf("a new config's mode: %v", fi.Mode().Perm())
	}
}

// The private key whose public key is registered is found by its
// fingerprint, whatever its name; a public key without its private one,
// or one not registered, is not taken.
func TestIdentityForFindsTheRegisteredKey(t *testing.T) {
	dir := t.TempDir()
	fp := func(name string, private bool) string {
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		pk, _ := ssh.NewPublicKey(pub)
		os.WriteFile(filepath.Join(dir, name+".pub"), ssh.MarshalAuthorizedKey(pk), 0o644)
		if private {
			os.WriteFile(filepath.Join(dir, name), []byte("a private key"), 0o600)
		}
		return ssh.FingerprintSHA256(pk)
	}
	fp("id_ed25519", true)
	work := fp("work laptop", true)
	lost := fp("lost", false)
	if got := identityFor(dir, []string{"SHA256:nothing", work}); got != filepath.Join(dir, "work laptop") {
		t.Errorf("the registered key: %q", got)
	}
	if got := identityFor(dir, []string{lost}); got != "" {
		t.Errorf("a registered key whose private key is not here: %q", got)
	}
	if got := identityFor(dir, nil); got != "" {
		t.Errorf("no key registered: %q", got)
	}
	if got := sshQuote(filepath.Join(dir, "work laptop")); got != `"`+filepath.Join(dir, "work laptop")+`"` {
		t.Errorf("a path with a space for ssh: %s", got)
	}
}
