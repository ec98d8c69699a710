package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/minio/minio-go/v7"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/backup"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/appliance/driver/docker"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// Snapshots are shipped to a real S3 server once taken, and outlive the
// engine's copy of them: with the box's container and every snapshot
// image gone from the engine (a disk lost), the box is made again from
// its newest shipped snapshot, fetched from the store, with the files it
// had then; what it wrote after is said to be lost, on the box. A fork
// and a restore of a snapshot the engine lost work the same way. A store
// cut off while a snapshot ships leaves it local with the error, and it
// ships once the store is back; a fork whose snapshot cannot be fetched
// says why, and is made once the store is back.
func TestSnapshotsInObjectStore(t *testing.T) {
	s3 := harness.StartS3(t)
	d := newDaemon(t, t.TempDir())
	// The server's own state goes to the store too, every 5 s, the two
	// newest kept, encrypted to an age key (ScheduledBackups, at the end).
	ident, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	d.Config = fmt.Sprintf("backup_to = \"object_store\"\nbackup_every = \"5s\"\nbackup_keep = 2\nbackup_recipients = [%q]\n", ident.Recipient()) +
		harness.TestConfig + "\n" + s3.Config()
	d.Env = append(d.Env, "PADDOCK_SHIP_INTERVAL=2s")
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Cleanup)
	t.Cleanup(func() {
		// What the shipping and fetching said, with their figures.
		b, _ := os.ReadFile(d.LogPath())
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "shipped") || strings.Contains(l, "fetched") || strings.Contains(l, "lost its container") {
				t.Log(l)
			}
		}
	})
	ctx := context.Background()
	c := d.Client()
	inBox := func(box, script string) string {
		t.Helper()
		var out, errb strings.Builder
		code, err := c.Exec(ctx, box, api.ExecPost{Cmd: []string{"sh", "-c", script}}, client.ExecIO{Stdout: &out, Stderr: &errb})
		if err != nil || code != 0 {
			t.Fatalf("%s in %s: exit %d, %v: %s", script, box, code, err, errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	shipped := func(box, id string) func() bool {
		return func() bool {
			sns, err := c.Snapshots(ctx, box)
			if err != nil {
				t.Fatal(err)
			}
			for _, sn := range sns {
				if sn.ID == id {
					return sn.Shipped == "shipped"
				}
			}
			t.Fatalf("snapshot %s is gone", id)
			return false
		}
	}

	if _, err := c.CreateBox(ctx, api.BoxPost{Name: "kept"}); err != nil {
		t.Fatal(err)
	}
	inBox("kept", "echo before > ~/before.txt && head -c 5000000 /dev/urandom > ~/blob && sha256sum ~/blob > ~/blob.sum")
	first, err := c.Snapshot(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "the first snapshot to ship", shipped("kept", first.ID))

	// The store's keys are paddockd's: nothing of them is in the box's
	// environment, its processes' or its files, and the store's address
	// (this machine's) is closed to it like any of the host's services.
	t.Run("AttackStoreKeysFromBox", func(t *testing.T) {
		out := inBox("kept", "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; "+
			"grep -rIho -e '"+s3.SecretKey+"' -e '"+s3.AccessKey+"' /etc /home /root /run /tmp /opt /var /mnt 2>/dev/null; "+
			"gw=$(ip route | awk '/default/ {print $3}'); port="+s3.Endpoint[strings.LastIndexByte(s3.Endpoint, ':')+1:]+"; "+
			"timeout 10 bash -c \"exec 3<>/dev/tcp/$gw/$port\" 2>/dev/null && echo store at gateway: open || echo store at gateway: closed; "+
			// The same probe sees a port of the host's that boxes may reach
			// (10 s: long enough for a busy machine's connect).
			"b=${PADDOCK_BROKER#http://}; timeout 10 bash -c \"exec 3<>/dev/tcp/${b%:*}/${b#*:}\" 2>/dev/null && echo broker: open")
		if strings.Contains(out, s3.SecretKey) || strings.Contains(out, s3.AccessKey) {
			t.Fatalf("the box sees the store's keys:\n%s", out)
		}
		if !strings.Contains(out, "store at gateway: closed") || !strings.Contains(out, "broker: open") {
			t.Fatalf("the box reaches the store's port on the host, or cannot reach the broker's (the probe is blind): %s", out)
		}
	})

	// Cut off: the next snapshot cannot ship, and says why.
	s3.Stop()
	inBox("kept", "echo second > ~/second.txt")
	second, err := c.Snapshot(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the snapshot's shipping to fail", func() bool {
		sns, _ := c.Snapshots(ctx, "kept")
		for _, sn := range sns {
			if sn.ID == second.ID {
				return sn.Shipped == "local" && sn.ShipError != ""
			}
		}
		return false
	})
	if err := s3.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "the second snapshot to ship once the store is back", shipped("kept", second.ID))
	// Shipped layer by layer: the box image's layers went with the first,
	// and the second sends what changed (a few small files; the 5 MB blob
	// is in chunks the first sent).
	if n := sentBytes(t, d, second.ID); n > 8<<20 {
		t.Fatalf("the second snapshot sent %d bytes, want what changed (a few small files)", n)
	}
	inBox("kept", "echo after > ~/after.txt")

	// The engine loses the box's container and every snapshot image,
	// while paddockd is down (else it would make the box again at once,
	// from the image still there).
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "-c", "docker rm -f $(docker ps -aq --filter label="+docker.LabelInstance+"="+d.Instance+
		" --filter label="+docker.LabelBox+"=kept) && docker rmi -f $(docker images -q --filter label="+docker.LabelInstance+"="+d.Instance+
		" --filter label="+docker.LabelKind+"=snapshot)").CombinedOutput()
	if err != nil {
		t.Fatalf("removing the box and its snapshots from the engine: %v\n%s", err, out)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	var b api.Box
	waitFor(t, 5*time.Minute, "the box to run again", func() bool {
		b, err = c.Box(ctx, "kept")
		if err != nil || !strings.Contains(b.Note, second.ID) {
			return false
		}
		code, err := c.Exec(ctx, "kept", api.ExecPost{Cmd: []string{"true"}}, clientIO())
		return err == nil && code == 0
	})
	if !strings.Contains(b.Note, "what it wrote after that is lost") {
		t.Fatalf("the box's note does not say what was lost: %q", b.Note)
	}
	// Fetched layer by layer: the box image's layers, which the engine
	// has, are not read from the store; what the box wrote is (a 5 MB
	// blob and small files).
	if size, read := fetchedBytes(t, d, second.ID); read > 32<<20 || read == 0 || size < 4*read {
		t.Fatalf("fetching the snapshot (%d bytes) read %d from the store, want only what the box wrote", size, read)
	}
	if got := inBox("kept", "cat ~/before.txt ~/second.txt; sha256sum -c ~/blob.sum >/dev/null && echo blob-ok; ls ~/after.txt 2>/dev/null || echo no-after"); got != "before\nsecond\nblob-ok\nno-after" {
		t.Fatalf("the box made again from its shipped snapshot holds %q", got)
	}

	// A fork of the first snapshot, whose image the engine lost too.
	exec.Command("sh", "-c", "docker rmi -f $(docker images -q --filter label="+docker.LabelInstance+"="+d.Instance+
		" --filter label="+docker.LabelKind+"=snapshot)").Run()
	// The store cut off: the fork says why it is not made yet, and is
	// made once the store is back.
	s3.Stop()
	if _, err := c.Fork(ctx, "kept", api.ForkPost{Name: "forked", Snapshot: first.ID}); err == nil || !strings.Contains(err.Error(), "object store") {
		t.Fatalf("a fork of a snapshot in the store only, the store cut off: %v", err)
	}
	if err := s3.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Minute, "the fork to be made once the store is back", func() bool {
		code, err := c.Exec(ctx, "forked", api.ExecPost{Cmd: []string{"true"}}, clientIO())
		return err == nil && code == 0
	})
	if got := inBox("forked", "cat ~/before.txt; ls ~/second.txt 2>/dev/null || echo no-second"); got != "before\nno-second" {
		t.Fatalf("the fork holds %q", got)
	}
	// And a restore of it.
	if _, err := c.Restore(ctx, "kept", first.ID); err != nil {
		t.Fatalf("a restore of a snapshot in the store only: %v", err)
	}
	if got := inBox("kept", "cat ~/before.txt; ls ~/second.txt 2>/dev/null || echo no-second"); got != "before\nno-second" {
		t.Fatalf("the restored box holds %q", got)
	}

	// backup_to: the server's state is in the store, the two newest
	// backups and no more, and a fresh state directory is made from the
	// newest (with the passphrase only) holding the boxes declared now.
	t.Run("ScheduledBackups", func(t *testing.T) {
		mc, err := s3.Client()
		if err != nil {
			t.Fatal(err)
		}
		backups := func() []string {
			var out []string
			for o := range mc.ListObjects(ctx, s3.Bucket, minio.ListObjectsOptions{Recursive: true}) {
				if o.Err != nil {
					t.Fatal(o.Err)
				}
				if strings.Contains(o.Key, "/backups/") {
					out = append(out, o.Key)
				}
			}
			return out
		}
		// A backup written after the boxes above were declared, and the
		// older ones pruned to backup_keep (a listing between a put and
		// its pruning sees one more, so the two are waited for together:
		// with pruning broken the count only grows).
		since := time.Now()
		waitFor(t, time.Minute, "a backup written after the fork, and two kept", func() bool {
			bs := backups()
			return len(bs) == 2 && newestAfter(bs, since)
		})
		conf := filepath.Join(t.TempDir(), "paddock.toml")
		if err := os.WriteFile(conf, []byte(s3.Config()), 0o600); err != nil {
			t.Fatal(err)
		}
		fresh := filepath.Join(t.TempDir(), "state")
		restore := func(id *age.X25519Identity) (string, error) {
			f := filepath.Join(t.TempDir(), "identity")
			if err := os.WriteFile(f, []byte(id.String()+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bins.Paddockd, "restore", "--from", "object_store", "--instance", d.Instance, "--config", conf,
				"--state-dir", fresh, "--socket", filepath.Join(t.TempDir(), "none.sock"), "--identity", f).CombinedOutput()
			return string(out), err
		}
		other, err := age.GenerateX25519Identity()
		if err != nil {
			t.Fatal(err)
		}
		if out, err := restore(other); err == nil || !strings.Contains(out, "wrong passphrase or key") {
			t.Fatalf("a restore from the store with another key: %v %s", err, out)
		}
		if _, err := os.Stat(filepath.Join(fresh, "paddock.db")); !os.IsNotExist(err) {
			t.Fatalf("a refused restore wrote the database: %v", err)
		}
		out, err := restore(ident)
		if err != nil || !strings.Contains(out, "from the object store") {
			t.Fatalf("paddockd restore --from object_store: %v\n%s", err, out)
		}
		st, err := store.Open(fresh)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for _, name := range []string{"kept", "forked"} {
			if _, err := st.GetBox(name); err != nil {
				t.Fatalf("box %s in the state restored from the store: %v", name, err)
			}
		}
	})
}

// newestAfter says whether the newest of scheduled backups' object keys
// (…/paddock-20261207T195300Z.age) was written after t (to the second).
func newestAfter(keys []string, t time.Time) bool {
	newest := ""
	for _, k := range keys {
		newest = max(newest, k[strings.LastIndexByte(k, '/')+1:])
	}
	at, err := time.Parse("20060102T150405Z", strings.TrimSuffix(strings.TrimPrefix(newest, backup.Prefix), backup.Suffix))
	return err == nil && !at.Before(t.UTC().Truncate(time.Second))
}

// sentBytes is what paddockd's log says a snapshot's shipping sent to the
// store.
func sentBytes(t *testing.T, d *harness.Daemon, id string) int64 {
	t.Helper()
	b, err := os.ReadFile(d.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `msg="snapshot shipped"`) && strings.Contains(l, "snapshot="+id+" ") {
			if m := regexp.MustCompile(` sent=(\d+) `).FindStringSubmatch(l); m != nil {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				return n
			}
		}
	}
	t.Fatalf("the log does not say what snapshot %s sent", id)
	return 0
}

// fetchedBytes is what paddockd's log says of a snapshot's fetch: the
// image's bytes, and those read from the store.
func fetchedBytes(t *testing.T, d *harness.Daemon, id string) (size, read int64) {
	t.Helper()
	b, err := os.ReadFile(d.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(` bytes=(\d+) read=(\d+) `)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `msg="snapshot fetched from the object store"`) && strings.Contains(l, "snapshot="+id+" ") {
			if m := re.FindStringSubmatch(l); m != nil {
				size, _ = strconv.ParseInt(m[1], 10, 64)
				read, _ = strconv.ParseInt(m[2], 10, 64)
				return size, read
			}
		}
	}
	t.Fatalf("the log does not say what fetching snapshot %s read", id)
	return 0, 0
}
