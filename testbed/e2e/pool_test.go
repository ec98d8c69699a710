package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/paddock-dev/paddock/testbed/harness"
)

// poolScripts are the scripts of a box's life that run a second time with
// a warm pool: what is true of a box made cold must be true of one
// claimed from the pool.
var poolScripts = []string{"lifecycle", "exec", "ttl", "files", "lost", "ssh", "terminal"}

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
		})
		return nil
	}
	return p
}
