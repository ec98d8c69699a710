package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// A box mounts buckets of its user's own from a real S3 server (rclone
// on the server, FUSE): read-write and read-only, with the keys in a
// Paddock secret that the box never sees. Without the secret the box is
// not made, and says why; a mount that went (rclone killed) comes back
// under the running box; a stopped box's mounts are ended; a bad mount
// is refused with nothing declared.
func TestBucketMounts(t *testing.T) {
	harness.Tool(t, "rclone")
	s3 := harness.StartS3(t)
	ctx := context.Background()
	mc, err := s3.Client()
	if err != nil {
		t.Fatal(err)
	}
	put := func(key, body string) {
		t.Helper()
		if _, err := mc.PutObject(ctx, s3.Bucket, key, strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(key string) (string, error) {
		o, err := mc.GetObject(ctx, s3.Bucket, key, minio.GetObjectOptions{})
		if err != nil {
			return "", err
		}
		defer o.Close()
		b, err := io.ReadAll(o)
		return string(b), err
	}
	put("work/hello.txt", "hello from the bucket\n")
	put("refs/ro.txt", "read me only\n")
	put("elsewhere/secret.txt", "not under the prefix\n")

	d := newDaemon(t, t.TempDir())
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Cleanup)
	c := d.Client()
	inBox := func(box, script string) (string, int) {
		t.Helper()
		var out bytes.Buffer
		code, err := c.Exec(ctx, box, api.ExecPost{Cmd: []string{"sh", "-c", script}}, client.ExecIO{Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatalf("%s in %s: %v", script, box, err)
		}
		return strings.TrimSpace(out.String()), code
	}
	mounts := []api.BucketMount{
		{URL: "s3://" + s3.Bucket + "/work", To: "/data", Secret: "BUCKET_KEYS", Endpoint: s3.Endpoint},
		{URL: "s3://" + s3.Bucket + "/refs", To: "/mnt/refs", ReadOnly: true, Secret: "BUCKET_KEYS", Endpoint: s3.Endpoint},
	}

	// Bad mounts: refused, nothing declared.
	for _, bad := range []struct {
		m    api.BucketMount
		want string
	}{
		{api.BucketMount{URL: "s3://" + s3.Bucket, To: "/etc/x", Secret: "K"}, "system's own"},
		{api.BucketMount{URL: "s3://Bad_Bucket", To: "/data", Secret: "K"}, "a bucket's name"},
		{api.BucketMount{URL: "s3://" + s3.Bucket + "/../x", To: "/data", Secret: "K"}, "clean path segments"},
		{api.BucketMount{URL: "s3://" + s3.Bucket, To: "/data", Secret: "K", Endpoint: "file:///tmp"}, "http(s)://HOST"},
	} {
		if _, err := c.CreateBox(ctx, api.BoxPost{Name: "bad", Buckets: []api.BucketMount{bad.m}}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("a box mounting %+v: %v, want %q", bad.m, err, bad.want)
		}
		if _, err := c.Box(ctx, "bad"); err == nil {
			t.Fatalf("a refused box mounting %+v was declared", bad.m)
		}
	}

	// No secret of that name yet: the box is not made, and says why.
	_, err = c.CreateBox(ctx, api.BoxPost{Name: "bk", Buckets: mounts})
	b, _ := c.Box(ctx, "bk")
	if why := b.Error + " " + errText(err); !strings.Contains(why, "no secret BUCKET_KEYS") {
		t.Fatalf("a box mounting a bucket with no such secret: %v / %+v", err, b)
	}
	if err := c.SetSecret(ctx, "BUCKET_KEYS", []byte(s3.AccessKey+":"+s3.SecretKey), false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the box to run once its keys are set", func() bool {
		code, err := c.Exec(ctx, "bk", api.ExecPost{Cmd: []string{"cat", "/data/hello.txt"}}, clientIO())
		return err == nil && code == 0
	})
	if b, err = c.Box(ctx, "bk"); err != nil || len(b.Buckets) != 2 || b.Buckets[1].To != "/mnt/refs" || !b.Buckets[1].ReadOnly {
		t.Fatalf("the box as the API shows it: %+v %v", b, err)
	}

	// Read-write: what the box reads is the bucket's; what it writes
	// reaches the bucket, byte for byte.
	if got, _ := inBox("bk", "cat /data/hello.txt; ls /data"); got != "hello from the bucket\nhello.txt" {
		t.Fatalf("the bucket as the box sees it: %q", got)
	}
	if got, code := inBox("bk", "head -c 3000000 /dev/urandom > /data/blob && sha256sum /data/blob | cut -d' ' -f1 && mkdir -p /data/dir && echo deep > /data/dir/f.txt && id -un && stat -c %U /data/blob"); code != 0 {
		t.Fatalf("writing to the bucket: %s", got)
	} else if lines := strings.Split(got, "\n"); len(lines) != 3 || lines[1] != lines[2] {
		t.Fatalf("the box's files in the bucket are not its user's: %q", got)
	} else {
		sum := lines[0]
		waitFor(t, time.Minute, "the box's writes to reach the bucket", func() bool {
			blob, err1 := get("work/blob")
			deep, err2 := get("work/dir/f.txt")
			return err1 == nil && err2 == nil && sha256Hex([]byte(blob)) == sum && deep == "deep\n"
		})
	}
	// Read-only: readable, not writable; the prefix bounds what it sees.
	if got, _ := inBox("bk", "cat /mnt/refs/ro.txt; ls /mnt/refs"); got != "read me only\nro.txt" {
		t.Fatalf("the read-only bucket: %q", got)
	}
	if got, code := inBox("bk", "echo x > /mnt/refs/new.txt"); code == 0 || !strings.Contains(got, "Read-only file system") {
		t.Fatalf("a write to a read-only bucket: exit %d %q", code, got)
	}
	if _, err := get("refs/new.txt"); err == nil {
		t.Fatal("a write to a read-only bucket reached it")
	}

	// The keys are the server's: nothing of them in the box's environment,
	// its processes', the mounts' files or the mount table, nor in what
	// the API shows of the box.
	t.Run("AttackBucketKeysFromBox", func(t *testing.T) {
		out, _ := inBox("bk", "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; cat /proc/mounts /proc/self/mountinfo; "+
			"ls -la /data /mnt/refs; ps auxww")
		if strings.Contains(out, s3.SecretKey) || strings.Contains(out, s3.AccessKey) {
			t.Fatalf("the box sees the bucket's keys:\n%s", out)
		}
		// Its files, searched for the keys given on the search's input (so
		// that they are in no command line the box could list).
		search := func(patterns string) string {
			var found bytes.Buffer
			_, err := c.Exec(ctx, "bk", api.ExecPost{Cmd: []string{"sh", "-c", "grep -rIl -F -f - /data /mnt/refs /etc /home /root /run /tmp /opt /var/lib 2>/dev/null"}},
				client.ExecIO{Stdin: strings.NewReader(patterns), Stdout: &found, Stderr: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			return found.String()
		}
		if found := search(s3.SecretKey + "\n" + s3.AccessKey + "\n"); found != "" {
			t.Fatalf("the box's files hold the bucket's keys: %s", found)
		}
		if found := search("hello from the bucket\n"); !strings.Contains(found, "/data/hello.txt") {
			t.Fatalf("the search is blind: %q", found)
		}
		if !strings.Contains(out, "/data") || !strings.Contains(out, "fuse") {
			t.Fatalf("the probe did not see the mounts (it is blind):\n%s", out)
		}
		b, err := c.Box(ctx, "bk")
		raw, _ := json.Marshal(b)
		if err != nil || strings.Contains(string(raw), s3.SecretKey) || strings.Contains(string(raw), s3.AccessKey) {
			t.Fatalf("the API shows the keys: %v %s", err, raw)
		}
	})

	// rclone killed: the running box's mount goes, and the next pass
	// mounts it again, under the same container (its /tmp file stays).
	inBox("bk", "echo same > /tmp/mark")
	mnt := filepath.Join(d.StateDir, "buckets", "mnt")
	if out, err := exec.Command("pkill", "-KILL", "-f", "rclone mount bkt:"+s3.Bucket+"/work "+mnt).CombinedOutput(); err != nil {
		t.Fatalf("killing the bucket's rclone: %v %s", err, out)
	}
	waitFor(t, 2*time.Minute, "the bucket to be mounted again in the running box", func() bool {
		got, _ := inBox("bk", "cat /data/hello.txt /tmp/mark 2>&1")
		return got == "hello from the bucket\nsame"
	})

	// The store cut off while the box writes: what the box wrote and
	// closed (acknowledged) is kept in the mount's write cache, and
	// reaches the bucket, byte for byte, once the store is back (rclone
	// tries its uploads again).
	s3.Stop()
	cutSum, code := inBox("bk", "head -c 2000000 /dev/urandom > /data/cut.bin && sha256sum /data/cut.bin | cut -d' ' -f1")
	if code != 0 {
		t.Fatalf("a write with the store cut off (the mount's cache takes it): %s", cutSum)
	}
	if err := s3.Start(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	waitFor(t, 3*time.Minute, "a file written while the store was cut off to reach the bucket", func() bool {
		b, err := get("work/cut.bin")
		return err == nil && sha256Hex([]byte(b)) == cutSum
	})
	t.Logf("a 2 MB file written with the store cut off was in the bucket %s after it came back", time.Since(back).Round(100*time.Millisecond))

	// Stopped: what it wrote just before reaches the bucket (rclone sends
	// a file some seconds after it is closed: the mount is drained before
	// it ends), and its mounts are ended; started: mounted again.
	if got, code := inBox("bk", "head -c 1000000 /dev/urandom > /data/last && sha256sum /data/last | cut -d' ' -f1"); code != 0 {
		t.Fatalf("writing before the stop: %s", got)
	} else {
		if _, err := c.StopBox(ctx, "bk"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Minute, "the stopped box's mounts to end", func() bool {
			b, _ := os.ReadFile("/proc/self/mountinfo")
			return !strings.Contains(string(b), mnt+"/")
		})
		if last, err := get("work/last"); err != nil || sha256Hex([]byte(last)) != got {
			t.Fatalf("a file written just before the stop is not in the bucket once its mount ended (%d bytes, %v)", len(last), err)
		}
	}
	if _, err := c.StartBox(ctx, "bk"); err != nil {
		t.Fatal(err)
	}
	if got, _ := inBox("bk", "cat /data/dir/f.txt /mnt/refs/ro.txt"); got != "deep\nread me only" {
		t.Fatalf("after a stop and a start: %q", got)
	}

	// The CLI's --mount: a second box, the same bucket read-only.
	cli := exec.Command(bins.Paddock, "new", "--name", "bk2", "--mount", "s3://"+s3.Bucket+"/work,to=/srv/work,ro,secret=BUCKET_KEYS,endpoint="+s3.Endpoint)
	cli.Env = append(os.Environ(), d.CLIEnv()...)
	if out, err := cli.CombinedOutput(); err != nil {
		t.Fatalf("paddock new --mount: %v\n%s", err, out)
	}
	if got, _ := inBox("bk2", "cat /srv/work/dir/f.txt; touch /srv/work/x 2>&1"); !strings.HasPrefix(got, "deep\n") || !strings.Contains(got, "Read-only file system") {
		t.Fatalf("a box made with paddock new --mount: %q", got)
	}
	// A Boxfile's mount "s3://…" block; one that mounts on a system
	// folder is refused at its line, with nothing declared.
	dir := t.TempDir()
	boxfile := func(to string) string {
		f := filepath.Join(dir, "Boxfile.hcl")
		body := "project = \"bk\"\nbox \"bkf\" {\n  mount \"s3://" + s3.Bucket + "/refs\" {\n    to        = \"" + to + "\"\n    read_only = true\n" +
			"    secret    = \"BUCKET_KEYS\"\n    endpoint  = \"" + s3.Endpoint + "\"\n  }\n}\n"
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	apply := exec.Command(bins.Paddock, "apply", "--auto-approve", "-f", boxfile("/usr/share/refs"))
	apply.Env = cli.Env
	if out, err := apply.CombinedOutput(); err == nil || !strings.Contains(string(out), "Boxfile.hcl:4:17") || !strings.Contains(string(out), "system's own") {
		t.Fatalf("a Boxfile mounting a bucket on /usr: %v\n%s", err, out)
	}
	if _, err := c.Box(ctx, "bkf"); err == nil {
		t.Fatal("a refused Boxfile declared its box")
	}
	apply = exec.Command(bins.Paddock, "apply", "--auto-approve", "-f", boxfile("/refs"))
	apply.Env = cli.Env
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("paddock apply of a box mounting a bucket: %v\n%s", err, out)
	}
	if got, _ := inBox("bkf", "cat /refs/ro.txt"); got != "read me only" {
		t.Fatalf("a Boxfile's box, its bucket: %q", got)
	}

	bad := exec.Command(bins.Paddock, "new", "--name", "bk3", "--mount", "s3://"+s3.Bucket+",to=/data")
	bad.Env = cli.Env
	if out, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(out), "name the secret") {
		t.Fatalf("paddock new --mount without a secret: %v %s", err, out)
	}
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
