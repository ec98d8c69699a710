package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
