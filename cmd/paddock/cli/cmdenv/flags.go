package cmdenv

import (
	"errors"
	"io"
	"sort"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/spf13/pflag"
)

// helpFlags is what parse returns for --help: the flags to show.
type HelpFlags struct {
	Usages string
	Names  []string // --name and -n of every flag
}

func (HelpFlags) Error() string { return "help" }

// Flags makes a flag set for a command; errors are returned, not printed.
func Flags(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func Parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			hf := HelpFlags{Usages: fs.FlagUsages()}
			fs.VisitAll(func(f *pflag.Flag) {
				if f.Hidden {
					return
				}
				hf.Names = append(hf.Names, "--"+f.Name)
				if f.Shorthand != "" {
					hf.Names = append(hf.Names, "-"+f.Shorthand)
				}
			})
			return hf
		}
		return Usagef("%v", err)
	}
	return nil
}

// JSONFlag parses a listing's arguments: --json and nothing else.
func JSONFlag(name string, args []string) (bool, error) {
	fs := Flags(name)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := Parse(fs, args); err != nil {
		return false, err
	}
	if fs.NArg() != 0 {
		return false, Usagef("%s takes no arguments but --json", name)
	}
	return *asJSON, nil
}

func ParseEnv(pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, Invalidf("bad --env %q: use KEY=VALUE", p)
		}
		if err := api.ValidEnvName(k); err != nil {
			return nil, Invalidf("%v", err)
		}
		m[k] = v
	}
	return m, nil
}

func SortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// ParseLabels reads KEY=VALUE server labels.
func ParseLabels(kvs []string) (map[string]string, error) {
	labels := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, Invalidf("label %q: give KEY=VALUE", kv)
		}
		if err := api.ValidNodeLabel(k, v); err != nil {
			return nil, Invalidf("%v", err)
		}
		labels[k] = v
	}
	return labels, nil
}
