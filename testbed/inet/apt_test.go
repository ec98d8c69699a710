package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The test mirror's package is one dpkg takes: its fields read back.
func TestDebReads(t *testing.T) {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no dpkg-deb: CI's machines are Debian's, which have it")
		}
		t.Skip("no dpkg-deb on this machine (a Debian machine has it)")
	}
	p := filepath.Join(t.TempDir(), "p.deb")
	if err := os.WriteFile(p, makeDeb(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("dpkg-deb", "-f", p, "Package").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "paddock-hello" {
		t.Fatalf("dpkg-deb -f: %v %s", err, out)
	}
	out, err = exec.Command("dpkg-deb", "-c", p).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "./usr/bin/paddock-hello") {
		t.Fatalf("dpkg-deb -c: %v %s", err, out)
	}
}
