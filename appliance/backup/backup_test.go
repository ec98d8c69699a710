package backup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/store"
)

// A backup taken from a live store restores into an empty state directory
// with the same users and tokens and the same key files (modes kept);
// a directory that holds a database is refused unless forced; an archive
// with a name leaving its folder writes nothing.
func TestBackupAndRestore(t *testing.T) {
	src := t.TempDir()
	st, err := store.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CreateUser(store.User{Name: "olga", Role: store.RoleOwner, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "secret.key"), []byte("key"), 0o600)
	os.MkdirAll(filepath.Join(src, "caddy", "certificates"), 0o700)
	os.WriteFile(filepath.Join(src, "caddy", "certificates", "c.pem"), []byte("cert"), 0o600)
	os.MkdirAll(filepath.Join(src, "jobs"), 0o700)
	os.WriteFile(filepath.Join(src, "jobs", "j1.log"), []byte("big log"), 0o600)
	conf := filepath.Join(t.TempDir(), "paddock.toml")
	os.WriteFile(conf, []byte("image = \"x\"\n"), 0o644)
	var buf bytes.Buffer
	if err := Write(&buf, st, src, conf); err != nil {
		t.Fatal(err)
	}

	dst := filepath.Join(t.TempDir(), "state")
	conf2 := filepath.Join(t.TempDir(), "etc", "paddock.toml")
	if err := Restore(bytes.NewReader(buf.Bytes()), dst, conf2, false); err != nil {
		t.Fatal(err)
	}
	st2, err := store.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if u, err := st2.UserByName("olga"); err != nil || u.Role != store.RoleOwner {
		t.Fatalf("the restored store: %+v %v", u, err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "secret.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret.key: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "caddy", "certificates", "c.pem")); string(b) != "cert" {
		t.Fatalf("the certificates: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dst, "jobs")); err == nil {
		t.Fatal("job logs were backed up")
	}
	if b, _ := os.ReadFile(conf2); string(b) != "image = \"x\"\n" {
		t.Fatalf("the configuration: %q", b)
	}
	if err := Restore(bytes.NewReader(buf.Bytes()), dst, "", false); err == nil || !strings.Contains(err.Error(), "already holds a database") {
		t.Fatalf("a second restore: %v", err)
	}

	var evil bytes.Buffer
	gz := gzip.NewWriter(&evil)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: "state/paddock.db", Mode: 0o600, Size: 1})
	tw.Write([]byte("x"))
	tw.WriteHeader(&tar.Header{Name: "../escape", Mode: 0o600, Size: 1})
	tw.Write([]byte("x"))
	tw.Close()
	gz.Close()
	empty := filepath.Join(t.TempDir(), "s")
	if err := Restore(&evil, empty, "", false); err == nil {
		t.Fatal("an archive with ../ was restored")
	}
	if _, err := os.Stat(filepath.Join(empty, "paddock.db")); err == nil {
		t.Fatal("a refused archive wrote the database")
	}
}
