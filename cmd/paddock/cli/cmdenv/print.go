package cmdenv

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/paddock-dev/paddock/appliance/client"
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

// BoxListing is a list command of one box's things ('paddock jobs BOX',
// 'snapshots BOX'): --json and the box, then what fetch gives for it,
// printed as Listing prints.
func BoxListing[T any](e *Env, cmd string, args []string, fetch func(c *client.Client, box string) ([]T, error), header string, row func(T) []string) error {
	fs := Flags(cmd)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return Usagef("give one box name (or 'current')")
	}
	name, c, err := e.Connect(fs.Arg(0))
	if err != nil {
		return err
	}
	items, err := fetch(c, name)
	if err != nil {
		return err
	}
	return Listing(e.Stdout, *asJSON, items, header, row)
}
