// Package cmdenv is what every command of the paddock CLI stands on: the
// environment it runs in (Env: its streams, its variables, a context that
// ends on Ctrl-C), the stored settings (the server, the token, the
// current box) and the client made from them, its flags and their errors
// (usage errors exit 2, ExitError a command's own code), and the shapes
// its output takes (JSON, tables, sizes, plurals).
package cmdenv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/appliance/version"
)

// Env is what a command runs with; tests may replace its parts.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Ctx ends on Ctrl-C.
	Ctx context.Context
	// HelpOnly runs a command only to learn its flags (see the help): it
	// may not reach a server or write the configuration.
	HelpOnly bool
	// FlagsOnly: and it was given --help, which its flags' parse stops at.
	FlagsOnly bool
}

// Settings is the CLI's stored configuration.
type Settings struct {
	Server  string `json:"server,omitempty"`
	Token   string `json:"token,omitempty"`
	Current string `json:"current,omitempty"`
	// CACert is a CA certificate (PEM) trusted for the server.
	CACert string `json:"ca_cert,omitempty"`
}

func (e *Env) ConfigPath() (string, error) {
	if d := e.Getenv("PADDOCK_CONFIG_DIR"); d != "" {
		return filepath.Join(d, "config.json"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "paddock", "config.json"), nil
}

// currentPath is the file of the current box's name, beside config.json.
func (e *Env) CurrentPath() (string, error) {
	p, err := e.ConfigPath()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(p), "current"), nil
}

func (e *Env) Load() (Settings, error) {
	var s Settings
	p, err := e.ConfigPath()
	if err != nil {
		return s, err
	}
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return s, err
	}
	if err == nil {
		if err := json.Unmarshal(b, &s); err != nil {
			return s, fmt.Errorf("%s: %w", p, err)
		}
	}
	cp, _ := e.CurrentPath()
	c, err := os.ReadFile(cp)
	if err == nil {
		s.Current = strings.TrimSpace(string(c))
	} else if !errors.Is(err, os.ErrNotExist) {
		return s, err
	}
	return s, nil
}

// save writes the settings: config.json flushed to the disk, and the
// current box.
func (e *Env) Save(s Settings) error {
	if e.HelpOnly {
		return ErrHelpOnly
	}
	p, err := e.ConfigPath()
	if err != nil {
		return err
	}
	cur := s.Current
	s.Current = ""
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := WriteSetting(p, append(b, '\n'), true); err != nil {
		return err
	}
	return e.SetCurrent(cur)
}

// WriteSetting writes one of the CLI's files (mode 0600), making its
// folder if need be.
func WriteSetting(p string, b []byte, flush bool) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return WriteFileAtomic(p, b, 0o600, flush)
}

// WriteFileAtomic writes a file of the mode through a new file renamed
// over it, so that a reader sees the old content or the new; with flush,
// the new content is on the disk before the rename.
func WriteFileAtomic(p string, b []byte, mode os.FileMode, flush bool) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if flush {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), p)
}

// client returns an API client from the environment and stored settings.
func (e *Env) Client() (*client.Client, error) {
	if e.HelpOnly && e.FlagsOnly {
		// A command run with --help for its flags reads them after it
		// made its client: one that reaches nothing (a closed loopback
		// port), should anything be asked of it first.
		return client.New("http://127.0.0.1:1", "")
	}
	if e.HelpOnly {
		return nil, ErrHelpOnly
	}
	s, err := e.Load()
	if err != nil {
		return nil, err
	}
	server, token := e.Server(s), s.Token
	if v := e.Getenv("PADDOCK_TOKEN"); v != "" {
		token = v
	}
	if server == "" {
		return nil, errors.New("not logged in: run 'paddock login URL --token TOKEN' (paddockd prints both)")
	}
	if token == "" {
		return nil, errors.New("no token: run 'paddock login' or set PADDOCK_TOKEN")
	}
	return client.NewWithCA(server, token, []byte(s.CACert))
}

// server is the address of the server the CLI talks to.
func (e *Env) Server(s Settings) string {
	if v := e.Getenv("PADDOCK_HOST"); v != "" {
		return v
	}
	return s.Server
}

// boxName resolves "current" to the current box.
func (e *Env) BoxName(name string) (string, error) {
	if name != "current" {
		return name, nil
	}
	s, err := e.Load()
	if err != nil {
		return "", err
	}
	if s.Current == "" {
		return "", errors.New("no current box: create one with 'paddock new' or choose one with 'paddock use BOX'")
	}
	return s.Current, nil
}

// setCurrent writes the current box's name (none with ""), without
// flushing it to the disk (see the package doc).
func (e *Env) SetCurrent(name string) error {
	if e.HelpOnly {
		return ErrHelpOnly
	}
	p, err := e.CurrentPath()
	if err != nil {
		return err
	}
	// An empty file (not none) stands for no current box, over the
	// "current" of an older config.json.
	if name != "" {
		name += "\n"
	}
	return WriteSetting(p, []byte(name), false)
}

// connect resolves a box argument ("current" too) and returns a client.
func (e *Env) Connect(box string) (string, *client.Client, error) {
	name, err := e.BoxName(box)
	if err != nil {
		return "", nil, err
	}
	c, err := e.Client()
	return name, c, err
}

// confirm asks on the terminal and wants the exact answer. Without a
// terminal it refuses, naming skip, the flag that says yes beforehand.
func (e *Env) Confirm(prompt, want, skip string) error {
	if !IsTerminal(e.Stdin) {
		return Usagef("not asking for confirmation without a terminal: add %s", skip)
	}
	fmt.Fprint(e.Stdout, prompt)
	line, err := bufio.NewReader(e.Stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return err
	}
	if strings.TrimSpace(line) != want {
		return errors.New("cancelled; nothing was changed")
	}
	return nil
}

// BoxOrCurrent is the box of a command that takes at most one: the current box
// when none is given.
func BoxOrCurrent(args []string) (string, error) {
	switch len(args) {
	case 0:
		return "current", nil
	case 1:
		return args[0], nil
	}
	return "", Usagef("give one box (or none, for the current box)")
}

// canOpenBrowser says whether there is a desktop to open a URL on.
func CanOpenBrowser(e *Env) bool {
	switch runtime.GOOS {
	case "darwin", "windows":
		return true
	}
	return e.Getenv("DISPLAY") != "" || e.Getenv("WAYLAND_DISPLAY") != ""
}

// OpenBrowser opens url where there is a desktop to open it on.
func OpenBrowser(e *Env, url string) {
	if !CanOpenBrowser(e) {
		return
	}
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err == nil {
		go cmd.Wait()
	}
}

// Names asks the server for box or drive names, briefly: a shell waits
// for the answer.
func Names(e *Env, what string) []string {
	c, err := e.Client()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(e.Ctx, time.Second)
	defer cancel()
	var out []string
	switch what {
	case "boxes":
		bs, err := c.Boxes(ctx)
		if err != nil {
			return nil
		}
		for _, b := range bs {
			out = append(out, b.Name)
		}
	case "drives":
		ds, err := c.Drives(ctx)
		if err != nil {
			return nil
		}
		for _, d := range ds {
			out = append(out, d.Name)
		}
	case "policies":
		ps, err := c.Policies(ctx)
		if err != nil {
			return nil
		}
		for _, p := range ps {
			out = append(out, p.Name)
		}
	}
	return out
}

// warnVersion says how to update when the server runs another version.
func WarnVersion(e *Env, url, server string) {
	if server == "" || server == version.Version {
		return
	}
	fmt.Fprintf(e.Stderr, "paddock: this client is %s and the server is %s. Get the server's client with:\n  %s\n",
		version.Version, server, UpdateCommand(url))
}

// updateCommand is the one line that installs the server's own client.
func UpdateCommand(url string) string {
	if runtime.GOOS == "windows" {
		return "irm " + url + "/cli/install.ps1 | iex"
	}
	return "curl -fsSL " + url + "/cli/install.sh | sh"
}
