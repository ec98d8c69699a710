// Package skill is the Paddock skill for coding agents, in the Agent
// Skills format: SKILL.md (YAML front matter with name and description,
// then the instructions) and references/ one level deep. The command
// reference is not stored here: the CLI makes references/commands.md from
// its own help each time it writes or shows the skill, so it cannot go
// stale.
package skill

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed SKILL.md references/*.md
var files embed.FS

// Name is the skill's name (its folder's name, too).
const Name = "paddock"

// Files returns the skill's files by path inside the skill's folder, with
// references/commands.md made of commands (the CLI's help text).
func Files(commands string) map[string][]byte {
	out := map[string][]byte{}
	fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out[p], _ = files.ReadFile(p)
		}
		return nil
	})
	out["references/commands.md"] = []byte("# paddock commands\n\nMade from the CLI's own help: each section is what `paddock help new` prints for new.\n\n" + commands)
	return out
}

// Paths lists Files' paths in order.
func Paths(m map[string][]byte) []string {
	var ps []string
	for p := range m {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}
