package cmdenv

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"
)

func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// PrintJSONLine prints v as one line of JSON.
func PrintJSONLine(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

// Listing prints a list command's items: as JSON (asJSON: the API's own
// shape), or as a table with header's tab-separated columns and a row of
// cells per item.
func Listing[T any](w io.Writer, asJSON bool, items []T, header string, row func(T) []string) error {
	if asJSON {
		return PrintJSON(w, items)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		fmt.Fprintln(tw, strings.Join(row(it), "\t"))
	}
	return tw.Flush()
}

func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Plural is "1 process", "2 processes".
func Plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func SizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// IsTerminal says whether a stream of the CLI (stdin, stdout, stderr) is
// a terminal.
func IsTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func OrDash(ok bool, s string) string {
	if !ok {
		return "-"
	}
	return s
}

func GiB(n int64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }
