// Command testlog turns `go test -json` on stdin into what plain `go test`
// prints (each package's closing line, and the output of tests that fail),
// and the attacks' tally (isAttack: every package's attacks, by the tests'
// own results), then lists the tests that were skipped and
// the slowest tests (so that a CI run that grows says where). With
// -no-skips it fails when any was skipped: CI uses it so that a missing
// tool cannot turn into a green run. It exits non-zero when a test or
// package failed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64 // seconds, on pass and fail
}

// slowest is how many of the slowest tests the log lists (those of 5 s
// or more).
const slowest = 12

// stillRunning is how many of its last lines the log shows of a test that
// was still running when its package failed.
const stillRunning = 40

func main() {
	noSkips := flag.Bool("no-skips", false, "fail when a test was skipped")
	flag.Parse()
	os.Exit(run(os.Stdin, os.Stdout, *noSkips))
}

// run reads go test -json from in, writes the log to out and returns the
// exit code.
func run(in io.Reader, out io.Writer, noSkips bool) int {
	buf := map[string][]string{} // output of a running test, by package and test
	var skipped []string
	type took struct {
		name string
		secs float64
	}
	var times []took
	failed := false
	attacks := map[string]bool{} // held, by package and test
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(out, sc.Text()) // build errors and such come as plain text
			continue
		}
		if (e.Action == "pass" || e.Action == "fail") && e.Test != "" && e.Elapsed >= 5 {
			times = append(times, took{e.Package[strings.LastIndex(e.Package, "/")+1:] + "." + e.Test, e.Elapsed})
		}
		key := e.Package + " " + e.Test
		if (e.Action == "pass" || e.Action == "fail") && isAttack(e.Test) {
			attacks[key] = e.Action == "pass"
		}
		switch {
		case e.Action == "output" && e.Test == "":
			fmt.Fprint(out, e.Output)
		case e.Action == "output":
			buf[key] = append(buf[key], e.Output)
		case e.Action == "fail" && e.Test != "":
			failed = true
			fmt.Fprint(out, strings.Join(buf[key], ""))
			delete(buf, key)
		case e.Action == "fail":
			failed = true
			// A package that fails with tests still running (a timeout, a
			// panic, a killed binary): what they printed says where it
			// stood, and nothing else will.
			var running []string
			for k := range buf {
				if strings.HasPrefix(k, e.Package+" ") && k != e.Package+" " {
					running = append(running, k)
				}
			}
			sort.Strings(running)
			for _, k := range running {
				lines := buf[k]
				if len(lines) > stillRunning {
					lines = lines[len(lines)-stillRunning:]
				}
				fmt.Fprintf(out, "=== still running when %s failed: %s (its last %d lines)\n%s", e.Package, strings.TrimPrefix(k, e.Package+" "), len(lines), strings.Join(lines, ""))
				delete(buf, k)
			}
		case e.Action == "skip" && e.Test != "":
			skipped = append(skipped, e.Package+"."+e.Test+": "+lastLine(buf[key]))
			delete(buf, key)
		case e.Action == "pass":
			delete(buf, key)
		}
	}
	if len(attacks) > 0 {
		held, pkgs := 0, map[string]bool{}
		var lost []string
		for k, ok := range attacks {
			pkg, test, _ := strings.Cut(k, " ")
			pkgs[pkg] = true
			if ok {
				held++
			} else {
				lost = append(lost, pkg[strings.LastIndex(pkg, "/")+1:]+"."+test)
			}
		}
		sort.Strings(lost)
		fmt.Fprintf(out, "\nattacks: %d tried, %d held (in %d packages)\n", len(attacks), held, len(pkgs))
		for _, l := range lost {
			fmt.Fprintf(out, "  did not hold: %s\n", l)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i].secs > times[j].secs })
	if len(times) > slowest {
		times = times[:slowest]
	}
	if len(times) > 0 {
		fmt.Fprintf(out, "\nslowest tests and subtests (a parent whose subtests run in parallel shows only its own time):\n")
		for _, t := range times {
			fmt.Fprintf(out, "  %6.1fs  %s\n", t.secs, t.name)
		}
	}
	sort.Strings(skipped)
	if len(skipped) > 0 {
		fmt.Fprintf(out, "\n%d test(s) skipped:\n", len(skipped))
		for _, s := range skipped {
			fmt.Fprintln(out, "  "+s)
		}
	}
	switch {
	case failed:
		return 1
	case noSkips && len(skipped) > 0:
		fmt.Fprintln(out, "testlog: tests were skipped, and this run may skip none")
		return 1
	}
	return 0
}

// isAttack says whether a test is an attack of the suite: a script of
// e2e's TestAttacks (TestAttacks/NAME), or a test or subtest whose own
// name begins with TestAttack or Attack (TestAttackLoadTags,
// TestCluster/AttackNodeLies). Each counts once in the tally.
func isAttack(test string) bool {
	if rest, ok := strings.CutPrefix(test, "TestAttacks/"); ok {
		return !strings.Contains(rest, "/")
	}
	last := test[strings.LastIndex(test, "/")+1:]
	return last != "TestAttacks" && (strings.HasPrefix(last, "TestAttack") || strings.HasPrefix(last, "Attack"))
}

// lastLine is the last line a test printed that says why it skipped.
func lastLine(out []string) string {
	for i := len(out) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(out[i]); l != "" && !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "===") {
			return l
		}
	}
	return ""
}
