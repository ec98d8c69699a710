// Command testlog turns `go test -json` on stdin into what plain `go test`
// prints (each package's closing line, and the output of tests that fail),
// and the e2e attacks' tally, then lists the tests that were skipped. With -no-skips it fails when any
// was: CI uses it so that a missing tool cannot turn into a green run. It
// exits non-zero when a test or package failed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func main() {
	noSkips := flag.Bool("no-skips", false, "fail when a test was skipped")
	flag.Parse()
	buf := map[string][]string{} // output of a running test, by package and test
	var skipped []string
	failed := false
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Println(sc.Text()) // build errors and such come as plain text
			continue
		}
		key := e.Package + " " + e.Test
		switch {
		case e.Action == "output" && e.Test == "":
			fmt.Print(e.Output)
		case e.Action == "output":
			buf[key] = append(buf[key], e.Output)
			if strings.HasPrefix(e.Output, "attacks: ") {
				fmt.Print(e.Output) // the e2e attacks' tally belongs in the log
			}
		case e.Action == "fail" && e.Test != "":
			failed = true
			fmt.Print(strings.Join(buf[key], ""))
			delete(buf, key)
		case e.Action == "fail":
			failed = true
		case e.Action == "skip" && e.Test != "":
			skipped = append(skipped, e.Package+"."+e.Test+": "+lastLine(buf[key]))
			delete(buf, key)
		case e.Action == "pass":
			delete(buf, key)
		}
	}
	sort.Strings(skipped)
	if len(skipped) > 0 {
		fmt.Printf("\n%d test(s) skipped:\n", len(skipped))
		for _, s := range skipped {
			fmt.Println("  " + s)
		}
	}
	switch {
	case failed:
		os.Exit(1)
	case *noSkips && len(skipped) > 0:
		fmt.Println("testlog: tests were skipped, and this run may skip none")
		os.Exit(1)
	}
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
