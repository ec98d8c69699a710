// Package buckets mounts buckets of users' own, in S3-compatible stores,
// into their boxes: a box's mount "s3://BUCKET/PREFIX" { to, secret }.
//
// The server mounts each one itself, with rclone (`rclone mount`, its VFS
// cache in "writes" mode: a file written is kept on the server's disk
// and sent once closed, so a build in the box is not a round trip per
// write; reads go to the store, with listings cached 10 s), on a folder
// of its own (the engine's binds folder, driver.Bind), which the box's
// container binds at the path asked for. The keys are the box owner's
// Paddock secret: they are in rclone's environment on the host, never in
// the box, its environment, its processes (another PID namespace) or the
// mount's files (rclone names none).
//
// The binds folder is a shared mount point and the box binds it rslave,
// so a mount made there after the box started (or made again after
// rclone went) reaches the box without a restart. rclone runs in the
// host's mount namespace (that of PID 1, where the engine is: paddockd's
// own may be a private one under systemd), through nsenter.
//
// A box whose buckets cannot be mounted (no such secret, keys refused, no
// such bucket) is not made or started: its error says why, and the next
// reconcile pass tries again. The mounts of a box that stops are
// unmounted; those of a running box that went (rclone killed) are made
// again by the next pass; at paddockd's start the ones a previous run
// left are let go (the boxes see the bucket again once the first pass
// mounts it). What a box wrote that rclone had not sent yet is in the
// mount's cache folder on the server, and is sent when the mount is made
// again.
package buckets

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/capped"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// BindName is the name of a box's i-th bucket mount in the binds folder.
func BindName(b store.Box, i int) string {
	id := b.UID
	if id == "" {
		id = b.Key()
	}
	return fmt.Sprintf("%s-%d", id, i)
}

// Binds are a box's buckets as its container binds them.
func Binds(b store.Box) []driver.Bind {
	var out []driver.Bind
	for i, m := range b.Buckets {
		out = append(out, driver.Bind{Name: BindName(b, i), Path: m.To, ReadOnly: m.ReadOnly})
	}
	return out
}

// Mounter keeps boxes' buckets mounted.
type Mounter struct {
	// Dir is the engine's binds folder (docker.Config.BindsDir); Cache
	// holds the mounts' VFS caches.
	Dir, Cache string
	// Keys is the value of the secret a box of owner has under name.
	Keys func(owner int64, name string) ([]byte, error)
	// UID and GID own the mounts' files as the box sees them (the box's
	// user).
	UID, GID int
	Log      *slog.Logger
	// Rclone is the rclone binary (empty: looked up on PATH).
	Rclone string

	mu       sync.Mutex
	live     map[string]*mounted // by bind name
	draining map[string]*mounted // mounts whose box stopped, being drained
	shared   bool                // the binds folder is a shared mount point
}

// mounted is one rclone mount process.
type mounted struct {
	sum    string // what it was made for
	box    string
	cmd    *exec.Cmd
	done   chan struct{} // closed once rclone exited
	stderr *capped.Buffer
}

func (m *mounted) exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// hostNS runs a command in the host's mount namespace: through nsenter
// where paddockd's own is another (under systemd, PrivateTmp), at once
// where it is the host's or the host's cannot be looked at (paddockd in
// a container, or without the right to: then the engine is in its).
func hostNS(name string, args ...string) *exec.Cmd {
	if !otherNS() {
		return exec.Command(name, args...)
	}
	return exec.Command("nsenter", append([]string{"--mount=/proc/1/ns/mnt", "--", name}, args...)...)
}

// otherNS says whether paddockd's mount namespace is not PID 1's.
var otherNS = sync.OnceValue(func() bool {
	host, err := os.Stat("/proc/1/ns/mnt")
	if err != nil {
		return false
	}
	own, err := os.Stat("/proc/self/ns/mnt")
	return err == nil && !os.SameFile(host, own)
})

// mountInfo is where the host's mount table is read.
func mountInfo() string {
	if otherNS() {
		return "/proc/1/mountinfo"
	}
	return "/proc/self/mountinfo"
}

// Prepare makes the binds folder a shared mount point (in the host's
// mount namespace), and lets go of the mounts a previous run left there.
func (mt *Mounter) Prepare() error {
	for _, d := range []string{mt.Dir, mt.Cache} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	mps, err := mountPoints()
	if err != nil {
		return err
	}
	for mp := range mps {
		if strings.HasPrefix(mp, mt.Dir+"/") {
			mt.unmount(mp)
		}
	}
	for _, tool := range []string{mt.rclone(), "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("bucket mounts need %s: %w", tool, err)
		}
	}
	mt.live = map[string]*mounted{}
	return nil
}

// share makes the binds folder a shared mount point, once (the first
// bucket mounted): until then paddockd leaves the host's mount table as
// it is.
func (mt *Mounter) share() error {
	if mt.shared {
		return nil
	}
	mps, err := mountPoints()
	if err != nil {
		return err
	}
	if !mps[mt.Dir] {
		if out, err := hostNS("mount", "--bind", mt.Dir, mt.Dir).CombinedOutput(); err != nil {
			return fmt.Errorf("making %s a mount point: %v: %s", mt.Dir, err, out)
		}
	}
	if out, err := hostNS("mount", "--make-shared", mt.Dir).CombinedOutput(); err != nil {
		return fmt.Errorf("making %s a shared mount point: %v: %s", mt.Dir, err, out)
	}
	mt.shared = true
	return nil
}

// mountPoints are the host's mount points.
func mountPoints() (map[string]bool, error) {
	f, err := os.Open(mountInfo())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) > 4 {
			out[unescape(fs[4])] = true
		}
	}
	return out, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmount lets go of a mount point at once (lazily: a box's process in it
// keeps what it has open).
func (mt *Mounter) unmount(mp string) {
	if out, err := hostNS("umount", "-l", mp).CombinedOutput(); err != nil && !strings.Contains(string(out), "not mounted") {
		mt.Log.Warn("bucket mount: unmounting", "path", mp, "err", err, "out", strings.TrimSpace(string(out)))
	}
}

// keysOf reads ACCESS_KEY_ID:SECRET_ACCESS_KEY.
func keysOf(v []byte) (id, secret string, ok bool) {
	id, secret, ok = strings.Cut(strings.TrimSpace(string(v)), ":")
	return id, secret, ok && id != "" && secret != "" && !strings.ContainsAny(id+secret, "\n\r\x00")
}

// rcloneEnv is rclone's whole environment for a mount: the remote "bkt"
// from the bucket's store and keys, and nothing of paddockd's.
func rcloneEnv(m store.BucketMount, id, secret, config string) []string {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/nonexistent", "RCLONE_CONFIG=" + config,
		"RCLONE_CONFIG_BKT_TYPE=s3", "RCLONE_CONFIG_BKT_ENV_AUTH=false",
		"RCLONE_CONFIG_BKT_ACCESS_KEY_ID=" + id, "RCLONE_CONFIG_BKT_SECRET_ACCESS_KEY=" + secret}
	if m.Endpoint != "" {
		env = append(env, "RCLONE_CONFIG_BKT_PROVIDER=Other", "RCLONE_CONFIG_BKT_ENDPOINT="+m.Endpoint, "RCLONE_CONFIG_BKT_FORCE_PATH_STYLE=true")
	} else {
		env = append(env, "RCLONE_CONFIG_BKT_PROVIDER=AWS")
	}
	if m.Region != "" {
		env = append(env, "RCLONE_CONFIG_BKT_REGION="+m.Region)
	}
	return env
}

func remoteOf(m store.BucketMount) string {
	bucket, prefix, _ := api.BucketOf(m.URL)
	if prefix != "" {
		return "bkt:" + bucket + "/" + prefix
	}
	return "bkt:" + bucket
}

func (mt *Mounter) rclone() string {
	if mt.Rclone != "" {
		return mt.Rclone
	}
	return "rclone"
}

// Serve mounts a box's buckets, those not mounted yet or that went, and
// waits until each is there; its error names the bucket and why. Its
// container runs (Ready came before it was made or started).
func (mt *Mounter) Serve(ctx context.Context, b store.Box) error {
	return mt.each(ctx, b, mt.serve)
}

// each does one of a box's buckets after the other, their errors named.
func (mt *Mounter) each(ctx context.Context, b store.Box, do func(context.Context, store.Box, int, store.BucketMount) error) error {
	if len(b.Buckets) == 0 {
		return nil
	}
	mt.mu.Lock()
	defer mt.mu.Unlock()
	var errs []error
	for i, m := range b.Buckets {
		if err := do(ctx, b, i, m); err != nil {
			errs = append(errs, fmt.Errorf("bucket %s at %s: %w", m.URL, m.To, err))
		}
	}
	return errors.Join(errs...)
}

// keys are a mount's keys, from its box owner's secret: rclone's
// environment, and a digest of what the mount is made for.
func (mt *Mounter) keys(b store.Box, m store.BucketMount) (env []string, sum string, err error) {
	if mt.live == nil {
		return nil, "", errors.New("bucket mounts are not set up on this server")
	}
	v, err := mt.Keys(b.Owner, m.Secret)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", fmt.Errorf("no secret %s: set its keys with 'paddock secret set %s' (ACCESS_KEY_ID:SECRET_ACCESS_KEY)", m.Secret, m.Secret)
	}
	if err != nil {
		return nil, "", fmt.Errorf("secret %s: %w", m.Secret, err)
	}
	id, secret, ok := keysOf(v)
	if !ok {
		return nil, "", fmt.Errorf("secret %s is not ACCESS_KEY_ID:SECRET_ACCESS_KEY", m.Secret)
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%s|%v|%s|%s", m.URL, m.Endpoint, m.Region, m.ReadOnly, id, secret)))
	return rcloneEnv(m, id, secret, filepath.Join(mt.Cache, "rclone.conf")), hex.EncodeToString(h[:]), nil
}

// Ready readies a box's buckets before its container is made or
// started: the keys are tried against the store (an error says why
// plainly), and each mount's folder is there with nothing mounted on it.
// The container binds the folder as it is, so that what is mounted there
// after it started (Serve, and again after it went) reaches it; a
// container started over a mount would hold that one mount, and lose it
// for good when it went.
func (mt *Mounter) Ready(ctx context.Context, b store.Box) error {
	return mt.each(ctx, b, mt.ready)
}

func (mt *Mounter) ready(ctx context.Context, b store.Box, i int, m store.BucketMount) error {
	env, _, err := mt.keys(b, m)
	if err != nil {
		return err
	}
	if err := mt.folders(BindName(b, i)); err != nil {
		return err
	}
	name := BindName(b, i)
	mt.settle(name)
	if cur := mt.live[name]; cur != nil {
		mt.stop(name, cur)
	} else if mps, err := mountPoints(); err == nil && mps[filepath.Join(mt.Dir, name)] {
		mt.unmount(filepath.Join(mt.Dir, name))
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	check := exec.CommandContext(cctx, mt.rclone(), "lsf", "--max-depth", "1", "--low-level-retries", "2", "--retries", "1", "--contimeout", "10s", remoteOf(m))
	check.Env = env
	if out, err := check.CombinedOutput(); err != nil {
		return fmt.Errorf("the store refused it: %s", lastLines(out, err))
	}
	return nil
}

// folders makes a mount's folder and cache, and the binds folder a
// shared mount point.
func (mt *Mounter) folders(name string) error {
	// Only root's: without its mount the box finds the folder shut, and
	// writes nothing to the server's disk.
	if err := os.MkdirAll(filepath.Join(mt.Dir, name), 0o700); err != nil {
		return err
	}
	if err := mt.share(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(mt.Cache, name), 0o700); err != nil {
		return err
	}
	// Empty: every setting is in rclone's environment.
	return os.WriteFile(filepath.Join(mt.Cache, "rclone.conf"), nil, 0o600)
}

func (mt *Mounter) serve(ctx context.Context, b store.Box, i int, m store.BucketMount) error {
	env, sum, err := mt.keys(b, m)
	if err != nil {
		return err
	}
	name := BindName(b, i)
	mp := filepath.Join(mt.Dir, name)
	mt.settle(name)
	if cur := mt.live[name]; cur != nil {
		mps, err := mountPoints()
		if err != nil {
			return err
		}
		if cur.sum == sum && !cur.exited() && mps[mp] {
			return nil
		}
		mt.stop(name, cur)
	} else if mps, err := mountPoints(); err == nil && mps[mp] {
		mt.unmount(mp) // one that went (rclone killed), still in the table
	}
	if err := mt.folders(name); err != nil {
		return err
	}
	cache := filepath.Join(mt.Cache, name)
	args := []string{"mount", remoteOf(m), mp, "--allow-other", "--vfs-cache-mode", "writes", "--cache-dir", cache,
		"--dir-cache-time", "10s", "--uid", strconv.Itoa(mt.UID), "--gid", strconv.Itoa(mt.GID), "--umask", "002",
		"--log-level", "NOTICE", "--contimeout", "10s"}
	if m.ReadOnly {
		args = append(args, "--read-only")
	}
	cmd := hostNS(mt.rclone(), args...)
	cmd.Env = env
	errb := &capped.Buffer{Max: 16 << 10}
	cmd.Stdout, cmd.Stderr = errb, errb
	// rclone unmounts when told to stop, and is told so when paddockd
	// goes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting rclone: %w", err)
	}
	mo := &mounted{sum: sum, box: b.Name, cmd: cmd, done: make(chan struct{}), stderr: errb}
	go func() {
		cmd.Wait()
		close(mo.done)
	}()
	// Until the mount is there, rclone exits, or a while.
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		mps, err := mountPoints()
		if err != nil {
			mt.stop(name, mo)
			return err
		}
		if mps[mp] {
			break
		}
		if mo.exited() {
			return fmt.Errorf("rclone mount ended: %s", lastLines(errb.Bytes(), cmd.ProcessState))
		}
		if time.Since(start) > 30*time.Second || ctx.Err() != nil {
			mt.stop(name, mo)
			return fmt.Errorf("rclone mount did not mount it within 30 s: %s", lastLines(errb.Bytes(), nil))
		}
	}
	mt.live[name] = mo
	mt.Log.Info("bucket mounted", "box", b.Name, "bucket", m.URL, "to", m.To, "read_only", m.ReadOnly)
	return nil
}

// lastLines is the end of a command's output, for an error.
func lastLines(out []byte, err any) string {
	s := strings.TrimSpace(string(out))
	lines := strings.Split(s, "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	s = strings.Join(lines, "; ")
	if s == "" && err != nil {
		return fmt.Sprint(err)
	}
	return s
}

// stop ends a mount: rclone is told to stop (it unmounts, and what it has
// not sent stays in its cache folder), then killed if it does not within
// 30 s, and the mount point let go.
func (mt *Mounter) stop(name string, mo *mounted) {
	if !mo.exited() {
		mo.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-mo.done:
		case <-time.After(30 * time.Second):
			mo.cmd.Process.Kill()
			<-mo.done
		}
	}
	if mps, err := mountPoints(); err == nil && mps[filepath.Join(mt.Dir, name)] {
		mt.unmount(filepath.Join(mt.Dir, name))
	}
	delete(mt.live, name)
}

// Keep heals and lets go: the buckets of each box that runs (running,
// by engine name) are mounted again where they went; the mounts no
// running box has are drained and ended (their box stopped, or went);
// the folders and caches of boxes no longer declared are removed.
func (mt *Mounter) Keep(ctx context.Context, boxes []store.Box, running map[string]bool) {
	want, declared := map[string]bool{}, map[string]bool{}
	for _, b := range boxes {
		for i := range b.Buckets {
			declared[BindName(b, i)] = true
		}
		if len(b.Buckets) == 0 || !running[b.Key()] || b.Node != "" {
			continue
		}
		for i := range b.Buckets {
			want[BindName(b, i)] = true
		}
		if err := mt.Serve(ctx, b); err != nil {
			mt.Log.Warn("bucket mounts of a running box", "box", b.Name, "err", err)
		}
	}
	mt.mu.Lock()
	defer mt.mu.Unlock()
	for name, mo := range mt.live {
		if !want[name] {
			mt.drain(name, mo)
		}
	}
	// What is kept of mounts whose box is gone (drained first, above).
	var mps map[string]bool // read once, if anything is to go
	for _, dir := range []string{mt.Dir, mt.Cache} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			name := e.Name()
			if !e.IsDir() || declared[name] || mt.live[name] != nil || mt.draining[name] != nil {
				continue
			}
			if mps == nil {
				var err error
				if mps, err = mountPoints(); err != nil {
					return
				}
			}
			if mps[filepath.Join(mt.Dir, name)] {
				continue
			}
			os.RemoveAll(filepath.Join(dir, name))
		}
	}
}

// drainFor bounds how long a mount whose box stopped is kept for what
// the box wrote to be sent.
const drainFor = 30 * time.Minute

// drain ends a mount whose box no longer runs once what the box wrote is
// in the store (rclone's cache says no file is dirty), or drainFor
// passed (what is left stays in the cache folder, sent when the mount is
// next made). Under mu.
func (mt *Mounter) drain(name string, mo *mounted) {
	delete(mt.live, name)
	if mt.draining == nil {
		mt.draining = map[string]*mounted{}
	}
	mt.draining[name] = mo
	go func() {
		for deadline := time.Now().Add(drainFor); time.Now().Before(deadline) && !mo.exited() && mt.dirty(name); {
			time.Sleep(500 * time.Millisecond)
		}
		mt.mu.Lock()
		defer mt.mu.Unlock()
		if mt.draining[name] == mo {
			delete(mt.draining, name)
			mt.stop(name, mo)
			mt.Log.Info("bucket unmounted", "box", mo.box, "mount", name)
		}
	}()
}

// dirty says whether rclone's cache of a mount holds a file not yet
// sent (its vfsMeta entry says "Dirty").
func (mt *Mounter) dirty(name string) bool {
	found := false
	filepath.WalkDir(filepath.Join(mt.Cache, name, "vfsMeta"), func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || found {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		var meta struct{ Dirty bool }
		if json.Unmarshal(b, &meta) == nil && meta.Dirty {
			found = true
		}
		return nil
	})
	return found
}

// settle ends a mount being drained before its box's mounts are readied
// or served again (one rclone per cache folder: what it had not sent
// stays there for the next).
func (mt *Mounter) settle(name string) {
	if mo := mt.draining[name]; mo != nil {
		delete(mt.draining, name)
		mt.stop(name, mo)
	}
}

// Close ends every mount, and lets go of the binds folder's.
func (mt *Mounter) Close() {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	for name, mo := range mt.live {
		mt.stop(name, mo)
	}
	for name := range mt.draining {
		mt.settle(name)
	}
	if mt.shared {
		mt.unmount(mt.Dir)
		mt.shared = false
	}
}
