package rules

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/testbed/harness"
)

// paddockd's start (package daemon: serve and the stages it calls, and
// the node agent's start) reads as a list of stages: no function in it
// is over startLines lines.
const startLines = 100

func TestStartUpFunctionsAreShort(t *testing.T) {
	root, err := harness.Root()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "appliance", "daemon", "*.go"))
	fset := token.NewFileSet()
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n++
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines > startLines {
				t.Errorf("%s: %s is %d lines; make it stages of its own", filepath.Base(f), fn.Name.Name, lines)
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d functions read in package daemon", n)
	}
}
