package boxfiles

import (
	"encoding/json"
	"io"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// WriteDiagnostics prints diagnostics for a person: file:line:col, the
// source line and an underline.
func WriteDiagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics, width uint) error {
	return hcl.NewDiagnosticTextWriter(w, files, width, false).WriteDiagnostics(diags)
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
