package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/paddock-dev/paddock/appliance/mcpserver"
	"github.com/paddock-dev/paddock/appliance/version"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// cmdMCP serves the Model Context Protocol on stdin and stdout as the
// logged-in user ('paddock mcp'), or adds that server to an agent's
// configuration ('paddock mcp install --agent A').
func cmdMCP(e *cmdenv.Env, args []string) error {
	if len(args) > 0 && args[0] == "install" {
		return mcpInstall(e, args[1:])
	}
	fs := cmdenv.Flags("mcp")
	root := fs.String("root", ".", "the folder on this computer that push and pull may read and write (links out of it are refused)")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return cmdenv.Usagef("mcp takes no arguments (or: mcp install --agent A)")
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	srv, err := mcpserver.New(c, version.Version, *root)
	if err != nil {
		return err
	}
	return srv.Run(e.Ctx, &mcp.StdioTransport{})
}

// mcpInstall writes the server into an agent's MCP configuration, keeping
// what else is there: Claude Code's project file .mcp.json, OpenCode's
// opencode.json (both in --dir, default the current folder), Codex's
// ~/.codex/config.toml.
func mcpInstall(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("mcp install")
	agent := fs.String("agent", "", "claude, codex or opencode")
	dir := fs.String("dir", ".", "the project folder (claude, opencode)")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if e.HelpOnly {
		return cmdenv.ErrHelpOnly
	}
	exe := "paddock"
	switch *agent {
	case "claude":
		p := filepath.Join(*dir, ".mcp.json")
		err := mergeJSON(p, func(m map[string]any) {
			servers, _ := m["mcpServers"].(map[string]any)
			if servers == nil {
				servers = map[string]any{}
			}
			servers["paddock"] = map[string]any{"command": exe, "args": []string{"mcp"}}
			m["mcpServers"] = servers
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "added the paddock MCP server to %s (Claude Code asks to trust it once)\n", p)
	case "opencode":
		p := filepath.Join(*dir, "opencode.json")
		err := mergeJSON(p, func(m map[string]any) {
			if _, ok := m["$schema"]; !ok {
				m["$schema"] = "https://opencode.ai/config.json"
			}
			servers, _ := m["mcp"].(map[string]any)
			if servers == nil {
				servers = map[string]any{}
			}
			servers["paddock"] = map[string]any{"type": "local", "command": []string{exe, "mcp"}, "enabled": true}
			m["mcp"] = servers
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "added the paddock MCP server to %s\n", p)
	case "codex":
		home := e.Getenv("CODEX_HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return err
			}
			home = filepath.Join(h, ".codex")
		}
		p := filepath.Join(home, "config.toml")
		old, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if strings.Contains(string(old), "[mcp_servers.paddock]") {
			fmt.Fprintf(e.Stdout, "%s already has the paddock MCP server\n", p)
			return nil
		}
		if err := os.MkdirAll(home, 0o700); err != nil {
			return err
		}
		add := fmt.Sprintf("\n[mcp_servers.paddock]\ncommand = %q\nargs = [\"mcp\"]\n", exe)
		if err := os.WriteFile(p, append(old, add...), 0o600); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "added the paddock MCP server to %s\n", p)
	default:
		return cmdenv.Usagef("give --agent claude, codex or opencode")
	}
	return nil
}

// mergeJSON changes a JSON object file in place (making it if missing),
// refusing one that is not a JSON object rather than losing it.
func mergeJSON(p string, change func(map[string]any)) error {
	m := map[string]any{}
	b, err := os.ReadFile(p)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("%s is not a JSON object (%v); left as it was", p, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	change(m)
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(p, append(out, '\n'), 0o644)
}
