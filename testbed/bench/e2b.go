package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// e2bRows are E2B's SDK (from npm, pinned in testbed/e2b) beside
// Paddock's own TypeScript SDK, both against d, timed in one node
// process by testbed/e2b/bench.mjs: create + first command, a command's
// round trip, 100 MB up and down. The TypeScript SDK is built from
// sdk/typescript first when it has no build.
func benchE2B(d *harness.Daemon, n int) []row {
	root, err := harness.Root()
	check(err)
	sdk := filepath.Join(root, "sdk", "typescript")
	e2bDir := filepath.Join(root, "testbed", "e2b")
	npm := func(dir string, args ...string) {
		cmd := exec.Command("npm", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			check(fmt.Errorf("npm %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out))
		}
	}
	if _, err := os.Stat(filepath.Join(sdk, "node_modules", ".bin", "tsc")); err != nil {
		npm(sdk, "ci", "--no-audit", "--no-fund")
	}
	npm(sdk, "run", "build")
	if _, err := os.Stat(filepath.Join(e2bDir, "node_modules", "e2b")); err != nil {
		npm(e2bDir, "ci", "--no-audit", "--no-fund")
	}
	c, err := client.New("http://"+d.Listen, d.Token)
	check(err)
	key, err := c.CreateE2BKey(context.Background(), "bench-e2b")
	check(err)
	cmd := exec.Command("node", "bench.mjs", fmt.Sprint(n))
	cmd.Dir = e2bDir
	cmd.Env = append(os.Environ(), "E2B_API_URL=http://"+d.Listen+"/e2b", "E2B_SANDBOX_URL=http://"+d.Listen+"/e2b/envd",
		"E2B_API_KEY="+key.Token, "E2B_DOMAIN=", "E2B_DEBUG=", "PADDOCK_URL=http://"+d.Listen, "PADDOCK_TOKEN="+d.Token,
		"PADDOCK_SDK="+filepath.Join(sdk, "dist", "index.js"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	check(err)
	var runs map[string]map[string][]float64
	check(json.Unmarshal(out, &runs))
	var rows []row
	for _, name := range []string{"create + first command", "a command's round trip", "100 MB up", "100 MB down"} {
		rows = append(rows, row{"e2b: " + name, msSample(runs[name]["e2b"]), msSample(runs[name]["paddock"])})
	}
	return rows
}

func msSample(ms []float64) sample {
	ds := make([]time.Duration, len(ms))
	for i, m := range ms {
		ds[i] = time.Duration(m * float64(time.Millisecond))
	}
	return summarize(ds)
}

// printE2B prints the rows of benchE2B: E2B's SDK, Paddock's SDK, their
// ratio at p50 and p95.
func printE2B(rows []row) {
	fmt.Println("E2B's SDK (e2b from npm) beside Paddock's TypeScript SDK, against one paddockd")
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tE2B SDK p50\tPaddock SDK p50\tratio\tE2B SDK p95\tPaddock SDK p95\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\t%s\t\n", strings.TrimPrefix(r.name, "e2b: "), shown(r.paddock.P50), shown(r.docker.P50),
			float64(r.paddock.P50)/float64(r.docker.P50), shown(r.paddock.P95), shown(r.docker.P95))
	}
	tw.Flush()
}
