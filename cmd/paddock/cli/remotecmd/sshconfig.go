package remotecmd

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// The SSH config block that ssh-config --install keeps: between these
// lines, at the top of the file (OpenSSH takes each option from the first
// Host entry that gives it, so a "Host *" above would win), replaced
// whole each time.
const (
	sshBlockBegin = "# >>> paddock: managed by 'paddock ssh-config --install'; what is between these lines is replaced"
	sshBlockEnd   = "# <<< paddock"
)

// sshHostSuffix ends each box's Host name: web.paddock.
const sshHostSuffix = ".paddock"

// gateway is what ssh needs to reach the server's SSH gateway: its host
// name, port, and the options that trust its pinned host key alone.
func gateway(e *cmdenv.Env, c *client.Client, ks sshKeys) (host string, port int, pin []string, err error) {
	who, err := c.Whoami(e.Ctx)
	if err != nil {
		return "", 0, nil, err
	}
	if who.SSHPort == 0 {
		return "", 0, nil, errors.New("the server has no SSH gateway (ssh_listen is off)")
	}
	s, _ := e.Load()
	server := s.Server
	if v := e.Getenv("PADDOCK_HOST"); v != "" {
		server = v
	}
	host = "127.0.0.1"
	if u, err := url.Parse(server); err == nil && u.Hostname() != "" && (u.Scheme == "http" || u.Scheme == "https") {
		host = u.Hostname()
	}
	pin, err = pinHostKey(e, host, who.SSHPort, who.SSHHostKey)
	if err != nil {
		return "", 0, nil, err
	}
	// The private key of a registered public key in ~/.ssh, whatever its
	// name: ssh itself offers only its default names (and an agent's).
	if ks.ok {
		var fps []string
		for _, k := range ks.keys {
			fps = append(fps, k.Fingerprint)
		}
		if home, err := os.UserHomeDir(); err == nil {
			if id := identityFor(filepath.Join(home, ".ssh"), fps); id != "" {
				pin = append(pin, "-o", "IdentityFile="+sshQuote(id))
			}
		}
	}
	return host, who.SSHPort, pin, nil
}

// identityFor is the private key file in dir whose public key (the same
// name with .pub) has one of the fingerprints, "" when none has.
func identityFor(dir string, fingerprints []string) string {
	pubs, _ := filepath.Glob(filepath.Join(dir, "*.pub"))
	sort.Strings(pubs)
	for _, p := range pubs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		pk, _, _, _, err := ssh.ParseAuthorizedKey(b)
		if err != nil || !slices.Contains(fingerprints, ssh.FingerprintSHA256(pk)) {
			continue
		}
		priv := strings.TrimSuffix(p, ".pub")
		if fi, err := os.Stat(priv); err == nil && fi.Mode().IsRegular() {
			return priv
		}
	}
	return ""
}

// sshQuote quotes a path for an ssh option or config line when it has a
// space.
func sshQuote(p string) string {
	if strings.ContainsAny(p, " \t") {
		return `"` + p + `"`
	}
	return p
}

// sshEntries is the Host entry of each box.
func sshEntries(boxes []string, host string, port int, pin []string) string {
	var b strings.Builder
	for _, name := range boxes {
		fmt.Fprintf(&b, "Host %s%s\n  HostName %s\n  Port %d\n  User %s\n", name, sshHostSuffix, host, port, name)
		for i := 0; i+1 < len(pin); i += 2 {
			if pin[i] == "-o" {
				k, v, _ := strings.Cut(pin[i+1], "=")
				fmt.Fprintf(&b, "  %s %s\n", k, v)
			}
		}
	}
	return b.String()
}

// withSSHBlock is config with the block holding entries at its top, in
// place of any block there was.
func withSSHBlock(config, entries string) string {
	rest := config
	if i := strings.Index(config, sshBlockBegin); i >= 0 {
		if j := strings.Index(config[i:], sshBlockEnd); j >= 0 {
			end := i + j + len(sshBlockEnd)
			if end < len(config) && config[end] == '\n' {
				end++
			}
			rest = config[:i] + config[end:]
		}
	}
	block := sshBlockBegin + "\n" + entries + sshBlockEnd + "\n"
	if strings.TrimSpace(rest) == "" {
		return block
	}
	return block + "\n" + strings.TrimLeft(rest, "\n")
}

func SSHConfig(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("ssh-config")
	install := fs.Bool("install", false, "write the entries into your SSH config, in a block of their own")
	file := fs.String("file", "", "the SSH config to write (default ~/.ssh/config)")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	ks := listKeys(e, c)
	if !*install {
		_, entries, err := sshEntriesOf(e, c, fs.Args(), ks)
		if err != nil {
			return err
		}
		_, err = io.WriteString(e.Stdout, entries)
		return err
	}
	path, names, err := installSSHConfig(e, c, fs.Args(), *file, ks)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "%s: %s, as BOX%s (ssh web%s); run this again for boxes made later\n", path, cmdenv.Plural(int64(len(names)), "box", "boxes"), sshHostSuffix, sshHostSuffix)
	if err := checkKeys(ks); err != nil {
		fmt.Fprintf(e.Stderr, "Note: %v\n", err)
	}
	return nil
}

// sshEntriesOf is the boxes named (all the user's when none) and their
// Host entries.
func sshEntriesOf(e *cmdenv.Env, c *client.Client, named []string, ks sshKeys) ([]string, string, error) {
	names, err := sshBoxes(e, c, named)
	if err != nil {
		return nil, "", err
	}
	host, port, pin, err := gateway(e, c, ks)
	if err != nil {
		return nil, "", err
	}
	return names, sshEntries(names, host, port, pin), nil
}

// installSSHConfig writes the entries of the boxes named (all when none)
// into the SSH config file (~/.ssh/config when ""), and says where and
// which boxes.
func installSSHConfig(e *cmdenv.Env, c *client.Client, named []string, file string, ks sshKeys) (string, []string, error) {
	names, entries, err := sshEntriesOf(e, c, named, ks)
	if err != nil {
		return "", nil, err
	}
	path, err := sshConfigPath(file)
	if err != nil {
		return "", nil, err
	}
	return path, names, installSSHBlock(path, entries)
}

// sshBoxes is the boxes named, checked, or every box the user sees.
func sshBoxes(e *cmdenv.Env, c *client.Client, named []string) ([]string, error) {
	var out []string
	for _, n := range named {
		name, err := e.BoxName(n)
		if err != nil {
			return nil, err
		}
		if _, err := c.Box(e.Ctx, name); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	if len(named) > 0 {
		return out, nil
	}
	bs, err := c.Boxes(e.Ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range bs {
		out = append(out, b.Name)
	}
	slices.Sort(out)
	return out, nil
}

func sshConfigPath(file string) (string, error) {
	if file != "" {
		return file, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".ssh", "config"), nil
}

// installSSHBlock writes entries into the SSH config at path, keeping
// everything else in it, and its mode (0600 for a new file).
func installSSHBlock(path, entries string) error {
	old, err := os.ReadFile(path)
	mode := os.FileMode(0o600)
	if fi, serr := os.Stat(path); serr == nil {
		mode = fi.Mode().Perm()
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".paddock-tmp"
	if err := os.WriteFile(tmp, []byte(withSSHBlock(string(old), entries)), mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Code opens VS Code on a box, over SSH (Remote-SSH): it writes the
// box's entry first, as ssh-config --install does.
func Code(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("code")
	file := fs.String("file", "", "the SSH config to write (default ~/.ssh/config)")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return cmdenv.Usagef("give a box, and a folder in it (default /config)")
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	name, err := e.BoxName(fs.Arg(0))
	if err != nil {
		return err
	}
	if b, err := c.Box(e.Ctx, name); err != nil {
		return err
	} else if b.Status != "running" {
		return fmt.Errorf("box %q is not running (status %s); start it with 'paddock start %s'", name, b.Status, name)
	}
	dir := "/config"
	if fs.NArg() == 2 {
		dir = fs.Arg(1)
	}
	code, err := exec.LookPath("code")
	if err != nil {
		return fmt.Errorf("VS Code's 'code' command is not on PATH (VS Code: Shell Command: Install 'code' command in PATH); or open %s%s from Remote-SSH after 'paddock ssh-config --install'", name, sshHostSuffix)
	}
	if _, _, err := installSSHConfig(e, c, nil, *file, listKeys(e, c)); err != nil {
		return err
	}
	cmd := exec.Command(code, "--remote", "ssh-remote+"+name+sshHostSuffix, dir)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.Stdin, e.Stdout, e.Stderr
	return cmd.Run()
}
