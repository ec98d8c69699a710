package e2e

import (
	"context"
	"database/sql"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// poolScripts are the scripts of a box's life that run a second time with
// a warm pool: what is true of a box made cold must be true of one
// claimed from the pool. Its egress policy too: a claim changes the
// firewall by adding only (the pool box's rules stay a moment, shadowed).
var poolScripts = []string{"lifecycle", "exec", "ttl", "files", "lost", "ssh", "terminal", "policy"}

// poolSize is the warm pool of the scripts' daemons: two small boxes.
const poolSize = 2

// TestScriptsWithDesktopPool runs the script of a box with a desktop
// against a daemon whose pool boxes have desktops (desktop_default): the
// box claimed has the pool box's desktop, started under the pool's
// hostname.
func TestScriptsWithDesktopPool(t *testing.T) {
	testscript.Run(t, poolParams(1, []string{"current"}, "PADDOCK_DESKTOP_DEFAULT=true"))
}

// TestScriptsWithPool runs poolScripts against daemons with a warm pool
// that is ready before each script starts: the scripts' first boxes are
// claimed from it, later ones are claimed or made cold as the refill
// allows.
func TestScriptsWithPool(t *testing.T) {
	testscript.Run(t, poolParams(poolSize, poolScripts))
}

// poolParams runs scripts against daemons with a warm pool of size small
// boxes, ready before each script starts, and fails a script none of
// whose boxes was claimed from it.
func poolParams(size int, scripts []string, daemonEnv ...string) testscript.Params {
	p := scriptParams("", append(daemonEnv, fmt.Sprintf("PADDOCK_WARM_POOL__SMALL=%d", size))...)
	// [pool]: the script runs with a warm pool (whose boxes run, and are
	// not the script's to remove).
	p.Condition = func(cond string) (bool, error) {
		if cond == "pool" {
			return true, nil
		}
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	for _, name := range scripts {
		p.Files = append(p.Files, filepath.Join("testdata", name+".txtar"))
	}
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		if err := setup(env); err != nil {
			return err
		}
		d := env.Values["daemon"].(*harness.Daemon)
		if err := d.WaitPool(size, 2*time.Minute); err != nil {
			env.T().Fatal(err)
		}
		env.Defer(func() {
			b, _ := os.ReadFile(d.LogPath())
			if !strings.Contains(string(b), "box claimed from the warm pool") {
				env.T().Fatal("no box of the script was claimed from the warm pool")
			}
			if !strings.Contains(string(b), "the process that starts its commands started ahead") {
				env.T().Fatal("no pool box of the script had the process that starts its commands started ahead")
			}
		})
		return nil
	}
	return p
}

// stateDB opens the daemon's database read-only for the test.
func stateDB(t *testing.T, d *harness.Daemon) *sql.DB {
	t.Helper()
	db, err := d.StateDB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func count(t *testing.T, db *sql.DB, query string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// paddockd is killed (SIGKILL) while new boxes are being claimed from the
// warm pool, at a random moment in the first 60 ms, over several rounds.
// After each restart: every box whose claim was answered exists and runs;
// so does every box declared whose answer the kill cut off (a claim cut in
// its middle); each runs in a container of its own, says its own
// hostname, and has its policy (allow-all: it reaches the test internet,
// which no pool box does); no container is left that no box or pool box
// declares; and the pool is full and ready again.
func TestPoolClaimCrash(t *testing.T) {
	const size, rounds = 3, 4
	d, cli, _ := daemonReconcilingEvery(t, "3s", func(d *harness.Daemon) {
		d.Env = append(d.Env, fmt.Sprintf("PADDOCK_WARM_POOL__SMALL=%d", size))
	})
	db := stateDB(t, d)
	ready := func() {
		waitFor(t, 2*time.Minute, "a full, ready warm pool", func() bool {
			return count(t, db, `SELECT count(*) FROM pool WHERE ready=1`) == size
		})
	}
	answered, cut, lost := 0, 0, 0
	for r := range rounds {
		ready()
		type result struct {
			name string
			err  error
		}
		results := make(chan result, size)
		for i := range size {
			name := fmt.Sprintf("r%dc%d", r, i)
			go func() {
				_, err := d.Client().CreateBox(context.Background(), api.BoxPost{Name: name})
				results <- result{name, err}
			}()
		}
		time.Sleep(time.Duration(mrand.IntN(60)) * time.Millisecond)
		if err := d.Kill(); err != nil {
			t.Fatal(err)
		}
		got := map[string]error{}
		for range size {
			res := <-results
			got[res.name] = res.err
		}
		if err := d.Start(); err != nil {
			t.Fatal(err)
		}
		boxes, err := d.Client().Boxes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		for _, b := range boxes {
			listed[b.Name] = true
		}
		for name, err := range got {
			switch {
			case err == nil && !listed[name]:
				t.Fatalf("round %d: box %s was answered but is not declared after the restart", r, name)
			case err == nil:
				answered++
			case listed[name]:
				cut++
				t.Logf("round %d: %s was declared, its answer cut off (%v)", r, name, err)
			default:
				lost++ // never declared: the kill came first; nothing to find
			}
		}
		for _, b := range boxes {
			waitFor(t, time.Minute, "box "+b.Name+" to run", func() bool {
				got, err := d.Client().Box(context.Background(), b.Name)
				return err == nil && got.Status == "running"
			})
			if out, err := cli("exec", b.Name, "--", "hostname"); err != nil || strings.TrimSpace(out) != b.Name {
				t.Fatalf("box %s says its hostname is %q (%v)", b.Name, out, err)
			}
			if out, err := cli("exec", b.Name, "--", "curl", "-sS", "-m", "5", "http://198.18.2.2/"); err != nil {
				t.Fatalf("box %s (allow-all) does not reach the test internet: %v\n%s", b.Name, err, out)
			}
			// One claimed just before the kill still had its pool box's
			// small CPU share (its update waits for a lull): paddockd's
			// start gives it a box's.
			var key string
			if err := db.QueryRow(`SELECT CASE WHEN engine = '' THEN name ELSE engine END FROM boxes WHERE name=?`, b.Name).Scan(&key); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 30*time.Second, "box "+b.Name+" to have a box's CPU share (1024), not a pool box's", func() bool {
				out, _ := exec.Command("docker", "inspect", "-f", "{{.HostConfig.CpuShares}}", d.Instance+"-"+key).Output()
				return strings.TrimSpace(string(out)) == "1024"
			})
		}
	}
	ready()
	// Every container is a declared box's or a pool box's, one each.
	keys := map[string]bool{}
	rows, err := db.Query(`SELECT CASE WHEN engine = '' THEN name ELSE engine END FROM boxes UNION ALL SELECT key FROM pool`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		rows.Scan(&k)
		if keys[k] {
			t.Fatalf("engine name %s declared twice", k)
		}
		keys[k] = true
	}
	rows.Close()
	waitFor(t, time.Minute, "one container per declared box and pool box", func() bool {
		names, err := harness.Containers(d.Instance)
		if err != nil || len(names) != len(keys) {
			return false
		}
		for _, n := range names {
			if !keys[strings.TrimPrefix(n, d.Instance+"-")] {
				return false
			}
		}
		return true
	})
	// A pool box reaches nothing.
	pool, err := db.Query(`SELECT key FROM pool`)
	if err != nil {
		t.Fatal(err)
	}
	var poolKeys []string
	for pool.Next() {
		var k string
		pool.Scan(&k)
		poolKeys = append(poolKeys, k)
	}
	pool.Close()
	for _, k := range poolKeys {
		if out, err := exec.Command("docker", "exec", d.Instance+"-"+k, "curl", "-sS", "-m", "3", "http://198.18.2.2/").CombinedOutput(); err == nil {
			t.Fatalf("pool box %s reaches the test internet:\n%s", k, out)
		}
	}
	t.Logf("%d kills during claims: %d claims answered, %d declared with their answer cut off, %d never declared; %d boxes and %d pool boxes after, each in its own container",
		rounds, answered, cut, lost, len(keys)-len(poolKeys), len(poolKeys))
	if answered+cut == 0 {
		t.Fatal("no claim was declared before a kill: the test tried nothing")
	}
}
