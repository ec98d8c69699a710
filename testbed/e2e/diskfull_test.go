package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// The state directory's disk fills up (a 32 MiB tmpfs): writes fail with
// 507 and a message that says so, the CLI says it too, reads go on, no
// declaration that was answered is lost, SQLite is not corrupted, and
// writes work again once there is space.
func TestDiskFull(t *testing.T) {
	d := newDaemon(t, t.TempDir())
	if err := os.MkdirAll(d.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=32m,mode=0700", "tmpfs", d.StateDir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", d.StateDir).Run() })
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Cleanup)

	post := func(name string) (int, string) {
		req, _ := http.NewRequest("POST", "http://"+d.Listen+"/v1/policies", strings.NewReader(fmt.Sprintf(`{"name":%q,"allow_domains":["a.test"]}`, name)))
		req.Header.Set("Authorization", "Bearer "+d.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("roomy"); code != 201 {
		t.Fatalf("a write with room: %d %s", code, body)
	}

	// Fill the disk.
	filler := filepath.Join(d.StateDir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()

	// SQLite reuses its write-ahead log, so a few writes may still fit;
	// keep writing until one is refused. Every refusal must be a 507.
	var created []string
	full := ""
	for i := 0; i < 500 && full == ""; i++ {
		name := fmt.Sprintf("p%03d", i)
		switch code, body := post(name); code {
		case 201:
			created = append(created, name)
		case 507:
			var e struct{ Error, Message string }
			json.Unmarshal([]byte(body), &e)
			if e.Error != "disk_full" || !strings.Contains(e.Message, "disk is full") {
				t.Fatalf("the 507's body: %s", body)
			}
			full = name
		default:
			t.Fatalf("a write on a full disk: %d %s", code, body)
		}
	}
	if full == "" {
		t.Fatal("500 writes on a full disk all succeeded")
	}
	t.Logf("%d writes fit in the log after the disk filled; %s was refused with 507", len(created), full)

	cli := exec.Command(bins.Paddock, "policy", "new", "clipol", "--allow-domain", "a.test")
	cli.Env = append(os.Environ(), d.CLIEnv()...)
	cli.Env = append(cli.Env, "PADDOCK_CONFIG_DIR="+t.TempDir())
	out, err := cli.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "disk is full") {
		t.Fatalf("the CLI on a full disk: %v\n%s", err, out)
	}

	// Reads go on, and say exactly what was answered.
	ps, err := d.Client().Policies(t.Context())
	if err != nil {
		t.Fatalf("reading on a full disk: %v", err)
	}
	have := map[string]bool{}
	for _, p := range ps {
		have[p.Name] = true
	}
	for _, n := range append(created, "roomy") {
		if !have[n] {
			t.Errorf("policy %s was created (201) but is gone", n)
		}
	}
	if have[full] || have["clipol"] {
		t.Errorf("a refused write is there: %v", have)
	}

	// Space again: writes work.
	os.Remove(filler)
	if code, body := post("after"); code != 201 {
		t.Fatalf("a write once space is back: %d %s", code, body)
	}
	d.Stop()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(d.StateDir, "paddock.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q %v", check, err)
	}
}
