package backup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver/fake"
	"github.com/paddock-dev/paddock/appliance/node"
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
	const sealKey, localToken = "SEALING-KEY-MATERIAL-0123", "pdk_local_TOKENVALUE"
	os.WriteFile(filepath.Join(src, "secret.key"), []byte(sealKey), 0o600)
	os.WriteFile(filepath.Join(src, "local.token"), []byte(localToken), 0o600)
	os.MkdirAll(filepath.Join(src, "caddy", "certificates"), 0o700)
	os.WriteFile(filepath.Join(src, "caddy", "certificates", "c.pem"), []byte("cert"), 0o600)
	os.MkdirAll(filepath.Join(src, "jobs"), 0o700)
	os.WriteFile(filepath.Join(src, "jobs", "j1.log"), []byte("big log"), 0o600)
	conf := filepath.Join(t.TempDir(), "paddock.toml")
	os.WriteFile(conf, []byte("image = \"x\"\n"), 0o644)
	key, err := Passphrase("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(&bytes.Buffer{}, Key{}, st, src, conf); err == nil {
		t.Fatal("a backup was written with no key to encrypt it to")
	}
	var buf bytes.Buffer
	if err := Write(&buf, key, st, src, conf); err != nil {
		t.Fatal(err)
	}
	// Without the passphrase the file says nothing: not the sealing key,
	// not the token, not even the database's or the archive's own marks;
	// and a wrong passphrase opens nothing and writes nothing.
	for _, secret := range []string{sealKey, localToken, "SQLite format", "olga", "secret.key"} {
		if bytes.Contains(buf.Bytes(), []byte(secret)) {
			t.Fatalf("the backup shows %q without its passphrase", secret)
		}
	}
	if _, err := gzip.NewReader(bytes.NewReader(buf.Bytes())); err == nil {
		t.Fatal("the backup reads as a plain gzip")
	}
	wrong, _ := Passphrase("not the right passphrase")
	nowhere := filepath.Join(t.TempDir(), "state")
	if err := Restore(bytes.NewReader(buf.Bytes()), wrong, nowhere, "", false); err == nil || !strings.Contains(err.Error(), "wrong passphrase") {
		t.Fatalf("a restore with the wrong passphrase: %v", err)
	}
	if _, err := os.Stat(nowhere); err == nil {
		t.Fatal("a restore with the wrong passphrase wrote the state directory")
	}

	dst := filepath.Join(t.TempDir(), "state")
	conf2 := filepath.Join(t.TempDir(), "etc", "paddock.toml")
	if err := Restore(bytes.NewReader(buf.Bytes()), key, dst, conf2, false); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"paddock.db", "secret.key", "local.token"} {
		if fi, err := os.Stat(filepath.Join(dst, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s restored: %v %v", f, fi, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "secret.key")); string(b) != sealKey {
		t.Fatalf("secret.key restored: %q", b)
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
	if err := Restore(bytes.NewReader(buf.Bytes()), key, dst, "", false); err == nil || !strings.Contains(err.Error(), "already holds a database") {
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
	if err := Restore(&evil, key, empty, "", false); err == nil {
		t.Fatal("an archive with ../ was restored")
	}
	if _, err := os.Stat(filepath.Join(empty, "paddock.db")); err == nil {
		t.Fatal("a refused archive wrote the database")
	}
}

// A control plane restored from a backup still reaches a node that
// joined before it (the node kept running, with its certificate and the
// authority it trusts): the authority is in the backup, so the restored
// server's caller certificate is one the node takes, and the node's
// certificate, pinned at its join, chains to the restored authority.
func TestRestoreKeepsTheClusterAuthority(t *testing.T) {
	src := t.TempDir()
	st, err := store.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ca, err := node.LoadCA(filepath.Join(src, "cluster"))
	if err != nil {
		t.Fatal(err)
	}
	nodeCert, err := ca.Issue("n2")
	if err != nil {
		t.Fatal(err)
	}
	// The node, attached: its agent trusts the authority as it was.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	trust, err := node.Trusting(ca.PEM)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&node.Agent{Driver: fake.New("base:1")}).Serve(ctx, l, trust.ServerConfig(nodeCert)) }()
	defer func() { cancel(); <-done }()

	key, err := Passphrase("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, key, st, src, ""); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := Restore(&buf, key, dst, filepath.Join(t.TempDir(), "paddock.toml"), false); err != nil {
		t.Fatal(err)
	}
	restored, err := node.LoadCA(filepath.Join(dst, "cluster"))
	if err != nil {
		t.Fatal(err)
	}
	if restored.Fingerprint() != ca.Fingerprint() {
		t.Fatalf("the restored server made a new authority (%s, was %s)", restored.Fingerprint(), ca.Fingerprint())
	}
	caller, err := restored.Issue(node.ControlPlane)
	if err != nil {
		t.Fatal(err)
	}
	pin, _ := node.PinOf(string(node.CertPEM(nodeCert)))
	if _, err := node.NewRemote("n2", l.Addr().String(), restored.ClientConfig(caller, "n2", pin)).Boxes(context.Background()); err != nil {
		t.Fatalf("the restored control plane calling the node that stayed attached: %v", err)
	}
}
