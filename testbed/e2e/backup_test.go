package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/appliance/driver/docker"
)

// paddockd backs up its own state while it runs; restored onto a fresh
// state directory, a stopped server comes back with its users, tokens,
// boxes, drives and policies, and reconciles without touching any of
// them (the box's container is the same one, and a reconcile changes
// nothing).
func TestBackupRestore(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	ctx := context.Background()
	c := d.Client()
	if _, err := c.CreateDrive(ctx, "keepdrive"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreatePolicy(ctx, api.PolicyPost{Name: "keeppol", AllowDomains: []string{"example.test"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateBox(ctx, api.BoxPost{Name: "keepbox", Policy: "keeppol", Mounts: []api.Mount{{Drive: "keepdrive", Path: "/mnt/keepdrive"}}}); err != nil {
		t.Fatal(err)
	}
	mtok := memberToken(t, d, "keepmember")
	container := func() string {
		out, err := exec.Command("docker", "ps", "-q", "--no-trunc", "--filter", "label="+docker.LabelInstance+"="+d.Instance,
			"--filter", "label="+docker.LabelBox+"=keepbox").Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	before := container()
	if before == "" {
		t.Fatal("no container for keepbox")
	}

	file := filepath.Join(t.TempDir(), "paddock-backup.age")
	conf := filepath.Join(filepath.Dir(d.StateDir), d.Instance+".toml")
	pass := filepath.Join(t.TempDir(), "pass")
	os.WriteFile(pass, []byte("a passphrase for the backup\n"), 0o600)
	// Never in clear: no backup without a passphrase or a key.
	if out, err := exec.Command(bins.Paddockd, "backup", "--to", file, "--state-dir", d.StateDir, "--config", conf).CombinedOutput(); err == nil || !strings.Contains(string(out), "always encrypted") {
		t.Fatalf("a backup without a key: %v %s", err, out)
	}
	if out, err := exec.Command(bins.Paddockd, "backup", "--to", file, "--state-dir", d.StateDir, "--config", conf, "--passphrase-file", pass).CombinedOutput(); err != nil {
		t.Fatalf("paddockd backup: %v\n%s", err, out)
	}
	raw, _ := os.ReadFile(file)
	if tok, _ := os.ReadFile(filepath.Join(d.StateDir, "local.token")); len(tok) == 0 || strings.Contains(string(raw), strings.TrimSpace(string(tok))) {
		t.Fatalf("the backup shows the local token (%d bytes of it)", len(tok))
	}
	// A running server is not restored over.
	if out, err := exec.Command(bins.Paddockd, "restore", file, "--state-dir", t.TempDir(), "--socket", d.Socket, "--passphrase-file", pass).CombinedOutput(); err == nil || !strings.Contains(string(out), "paddockd is running") {
		t.Fatalf("restore while it runs: %v %s", err, out)
	}
	d.Stop()

	fresh := filepath.Join(t.TempDir(), "state")
	restoredConf := filepath.Join(t.TempDir(), "paddock.toml")
	wrong := filepath.Join(t.TempDir(), "wrong")
	os.WriteFile(wrong, []byte("not the passphrase at all\n"), 0o600)
	if out, err := exec.Command(bins.Paddockd, "restore", file, "--state-dir", fresh, "--config", restoredConf, "--socket", d.Socket, "--passphrase-file", wrong).CombinedOutput(); err == nil || !strings.Contains(string(out), "wrong passphrase") {
		t.Fatalf("a restore with the wrong passphrase: %v %s", err, out)
	}
	if out, err := exec.Command(bins.Paddockd, "restore", file, "--state-dir", fresh, "--config", restoredConf, "--socket", d.Socket, "--passphrase-file", pass).CombinedOutput(); err != nil {
		t.Fatalf("paddockd restore: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(restoredConf); err != nil || !strings.Contains(string(b), "[agents.say]") {
		t.Fatalf("the restored configuration: %v %.100s", err, b)
	}
	d.StateDir = fresh
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	c = d.Client()
	if who, err := c.Whoami(ctx); err != nil || who.Role != "owner" {
		t.Fatalf("the owner's token after the restore: %+v %v", who, err)
	}
	mc, _ := client.New("http://"+d.Listen, mtok)
	if who, err := mc.Whoami(ctx); err != nil || who.User != "keepmember" {
		t.Fatalf("the member's token after the restore: %+v %v", who, err)
	}
	res, err := c.Reconcile(ctx)
	if err != nil || len(res.Changes) != 0 {
		t.Fatalf("a reconcile after the restore: %+v %v", res, err)
	}
	b, err := c.Box(ctx, "keepbox")
	if err != nil || b.Status != "running" || b.Policy != "keeppol" || len(b.Mounts) != 1 {
		t.Fatalf("keepbox after the restore: %+v %v", b, err)
	}
	// The restarted server's log shows no plan: it changed nothing.
	if log, _ := os.ReadFile(d.LogPath()); strings.Contains(string(log), "msg=reconcile plan=") {
		t.Fatalf("the restored server changed things:\n%s", log)
	}
	if after := container(); after != before {
		t.Fatalf("keepbox's container changed: %s, then %s", before, after)
	}
	if ds, err := c.Drives(ctx); err != nil || len(ds) != 1 || ds[0].Name != "keepdrive" {
		t.Fatalf("drives after the restore: %+v %v", ds, err)
	}
	if ps, err := c.Policies(ctx); err != nil || len(ps) != 1 || ps[0].Name != "keeppol" {
		t.Fatalf("policies after the restore: %+v %v", ps, err)
	}
}
