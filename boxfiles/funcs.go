package boxfiles

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/agext/levenshtein"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions are the functions a Boxfile may call: the cty standard library
// and file() and env(). file() reads only inside the project directory
// root (no absolute paths, no "..", no symlinks out of it: os.Root keeps
// to it); env() reads only PADDOCK_VAR_* variables unless allowEnv.
func functions(root string, environ []string, allowEnv bool) map[string]function.Function {
	env := map[string]string{}
	for _, e := range environ {
		if k, v, ok := strings.Cut(e, "="); ok {
			env[k] = v
		}
	}
	return map[string]function.Function{
		"abs": stdlib.AbsoluteFunc, "ceil": stdlib.CeilFunc, "chomp": stdlib.ChompFunc,
		"coalesce": stdlib.CoalesceFunc, "compact": stdlib.CompactFunc, "concat": stdlib.ConcatFunc,
		"contains": stdlib.ContainsFunc, "distinct": stdlib.DistinctFunc, "element": stdlib.ElementFunc,
		"flatten": stdlib.FlattenFunc, "floor": stdlib.FloorFunc, "format": stdlib.FormatFunc,
		"formatlist": stdlib.FormatListFunc, "indent": stdlib.IndentFunc, "join": stdlib.JoinFunc,
		"jsondecode": stdlib.JSONDecodeFunc, "jsonencode": stdlib.JSONEncodeFunc, "keys": stdlib.KeysFunc,
		"length": stdlib.LengthFunc, "lookup": stdlib.LookupFunc, "lower": stdlib.LowerFunc,
		"max": stdlib.MaxFunc, "merge": stdlib.MergeFunc, "min": stdlib.MinFunc,
		"parseint": stdlib.ParseIntFunc, "range": stdlib.RangeFunc, "regex": stdlib.RegexFunc,
		"regexall": stdlib.RegexAllFunc, "replace": stdlib.ReplaceFunc, "reverse": stdlib.ReverseListFunc,
		"slice": stdlib.SliceFunc, "sort": stdlib.SortFunc, "split": stdlib.SplitFunc,
		"strlen": stdlib.StrlenFunc, "substr": stdlib.SubstrFunc, "title": stdlib.TitleFunc,
		"trim": stdlib.TrimFunc, "trimprefix": stdlib.TrimPrefixFunc, "trimspace": stdlib.TrimSpaceFunc,
		"trimsuffix": stdlib.TrimSuffixFunc, "upper": stdlib.UpperFunc, "values": stdlib.ValuesFunc,
		"zipmap": stdlib.ZipmapFunc,
		"file": function.New(&function.Spec{
			Params: []function.Parameter{{Name: "path", Type: cty.String}},
			Type:   function.StaticReturnType(cty.String),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				p := args[0].AsString()
				b, err := readInside(root, p)
				if err != nil {
					return cty.NilVal, err
				}
				if !utf8.Valid(b) {
					return cty.NilVal, fmt.Errorf("%s is not UTF-8 text", args[0].AsString())
				}
				return cty.StringVal(string(b)), nil
			},
		}),
		"env": function.New(&function.Spec{
			Params: []function.Parameter{{Name: "name", Type: cty.String}},
			Type:   function.StaticReturnType(cty.String),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				name := args[0].AsString()
				if !allowEnv && !strings.HasPrefix(name, "PADDOCK_VAR_") {
					return cty.NilVal, fmt.Errorf("a Boxfile reads only PADDOCK_VAR_* variables; %s is not one (pass --allow-env to let it read any)", name)
				}
				return cty.StringVal(env[name]), nil
			},
		}),
	}
}

// readInside reads the file at p, relative to root, without leaving root.
func readInside(root, p string) (b []byte, err error) {
	err = inside(root, p, func(r *os.Root) error {
		b, err = r.ReadFile(p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v (a Boxfile reads files inside its project directory only)", p, err)
	}
	return b, nil
}

// statInside is os.Stat of p, relative to root, without leaving root.
func statInside(root, p string) (fi os.FileInfo, err error) {
	err = inside(root, p, func(r *os.Root) error {
		fi, err = r.Stat(p)
		return err
	})
	return fi, err
}

// inside runs fn on an os.Root of root, for a relative p only.
func inside(root, p string, fn func(*os.Root) error) error {
	if filepath.IsAbs(p) {
		return fmt.Errorf("%s is an absolute path, not one inside the project directory", p)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	return fn(r)
}

// suggest returns the candidate closest to name, if it is close enough.
func suggest(name string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := levenshtein.Distance(name, c, nil); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}
