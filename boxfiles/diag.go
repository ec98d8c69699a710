package boxfiles

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// WriteDiagnostics prints diagnostics for a person: file:line:col, the
// source line with the problem underlined, and the detail wrapped to width.
//
//	Boxfile.hcl:7:10: Error: Unknown box type
//
//	    7 |   type = "smal"
//	      |          ^^^^^^
//
//	  unknown box type "smal": use one of small, medium, large.
func WriteDiagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics, width uint) error {
	if width < 40 {
		width = 40
	}
	var b strings.Builder
	for i, d := range diags {
		if i > 0 {
			b.WriteString("\n")
		}
		sev := "Error"
		if d.Severity == hcl.DiagWarning {
			sev = "Warning"
		}
		r := d.Subject
		if r != nil {
			fmt.Fprintf(&b, "%s:%d:%d: ", r.Filename, r.Start.Line, r.Start.Column)
		}
		fmt.Fprintf(&b, "%s: %s\n", sev, d.Summary)
		if r != nil {
			if f := files[r.Filename]; f != nil {
				src := line(f.Bytes, r.Start.Line)
				num := fmt.Sprint(r.Start.Line)
				pad := strings.Repeat(" ", len(num))
				fmt.Fprintf(&b, "\n  %s | %s\n", num, src)
				fmt.Fprintf(&b, "  %s | %s\n", pad, underline(src, r))
			}
		}
		if d.Detail != "" {
			b.WriteString("\n")
			for _, para := range strings.Split(d.Detail, "\n") {
				for _, l := range wrap(para, int(width)-2) {
					b.WriteString(strings.TrimRight("  "+l, " ") + "\n")
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// underline marks the range's part of its first line with carets, keeping
// the line's tabs so that the marks line up.
func underline(src string, r *hcl.Range) string {
	var b strings.Builder
	col := 1
	for _, c := range src {
		if col >= r.Start.Column {
			break
		}
		if c == '\t' {
			b.WriteRune('\t')
		} else {
			b.WriteByte(' ')
		}
		col++
	}
	n := 1
	if r.End.Line == r.Start.Line && r.End.Column > r.Start.Column {
		n = r.End.Column - r.Start.Column
	} else if r.End.Line > r.Start.Line {
		n = max(1, utf8.RuneCountInString(src)-r.Start.Column+1)
	}
	b.WriteString(strings.Repeat("^", n))
	return b.String()
}

func wrap(s string, width int) []string {
	words := strings.Fields(s)
	if len(words) == 0 {
		return []string{""}
	}
	var lines []string
	cur := words[0]
	for _, w := range words[1:] {
		if len(cur)+1+len(w) > width {
			lines = append(lines, cur)
			cur = w
			continue
		}
		cur += " " + w
	}
	return append(lines, cur)
}

// JSONPos is a position in a source file.
type JSONPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// JSONRange is a range in a source file.
type JSONRange struct {
	Filename string  `json:"filename"`
	Start    JSONPos `json:"start"`
	End      JSONPos `json:"end"`
}

// JSONDiagnostic is a diagnostic for tools and the SDKs.
type JSONDiagnostic struct {
	Severity string     `json:"severity"` // error, warning
	Summary  string     `json:"summary"`
	Detail   string     `json:"detail,omitempty"`
	Range    *JSONRange `json:"range,omitempty"`
	// Snippet is the source line the range starts on.
	Snippet string `json:"snippet,omitempty"`
}

// DiagnosticsJSON converts diagnostics, with their ranges and snippets.
func DiagnosticsJSON(files map[string]*hcl.File, diags hcl.Diagnostics) []JSONDiagnostic {
	out := []JSONDiagnostic{}
	for _, d := range diags {
		j := JSONDiagnostic{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			j.Severity = "warning"
		}
		if r := d.Subject; r != nil {
			j.Range = &JSONRange{
				Filename: r.Filename,
				Start:    JSONPos{r.Start.Line, r.Start.Column, r.Start.Byte},
				End:      JSONPos{r.End.Line, r.End.Column, r.End.Byte},
			}
			if f := files[r.Filename]; f != nil {
				j.Snippet = line(f.Bytes, r.Start.Line)
			}
		}
		out = append(out, j)
	}
	return out
}

func line(src []byte, n int) string {
	cur := 1
	start := 0
	for i, c := range src {
		if c == '\n' {
			if cur == n {
				return string(src[start:i])
			}
			cur++
			start = i + 1
		}
	}
	if cur == n {
		return string(src[start:])
	}
	return ""
}

// WriteDiagnosticsJSON writes diagnostics as a JSON array.
func WriteDiagnosticsJSON(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(DiagnosticsJSON(files, diags))
}

// Format returns src in canonical form.
func Format(src []byte) []byte { return hclwrite.Format(src) }
