package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestLayers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "paddock.toml")
	os.WriteFile(file, []byte(`
instance = "from-file"
runtime = "from-file"
image = "from-file"
reconcile_interval = "3s"
[types.small]
cpus = 0.5
`), 0o644)
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	Flags(fs)
	if err := fs.Parse([]string{"--config", file, "--image", "from-flag"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(fs, []string{"PADDOCK_RUNTIME=runc", "PADDOCK_IMAGE=from-env", "PADDOCK_TYPES__LARGE__MEMORY_MIB=123"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Instance != "from-file" || c.Runtime != "runc" || c.Image != "from-flag" {
		t.Fatalf("layers: instance %q runtime %q image %q", c.Instance, c.Runtime, c.Image)
	}
	if c.Types["small"].CPUs != 0.5 || c.Types["small"].MemoryMiB != 2048 || c.Types["large"].MemoryMiB != 123 {
		t.Fatalf("types %+v", c.Types)
	}
	if c.ReconcileInterval != 3*time.Second || c.StateDir != "/var/lib/paddock" {
		t.Fatalf("interval %v state %q", c.ReconcileInterval, c.StateDir)
	}
}

func TestMissingDefaultFileIsFineButNamedIsNot(t *testing.T) {
	if _, err := Load(nil, []string{"PADDOCK_CONFIG=/nonexistent/paddock.toml"}); err == nil {
		t.Fatal("a named missing file was accepted")
	}
	if _, err := Load(nil, []string{"PADDOCK_TYPES__SMALL__CPUS=0", "PADDOCK_CONFIG=" + os.DevNull}); err == nil {
		t.Fatal("cpus = 0 accepted")
	}
}

func TestLocalModeDefaultsToLoopback(t *testing.T) {
	c, err := Load(nil, []string{"PADDOCK_LOCAL=true", "PADDOCK_CONFIG=" + os.DevNull})
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != LocalListen {
		t.Fatalf("listen %q", c.Listen)
	}
}

// The built-in agents stay when a file adds one.
func TestAgentsMerge(t *testing.T) {
	file := filepath.Join(t.TempDir(), "paddock.toml")
	os.WriteFile(file, []byte("[agents.echo]\ncommand = [\"sh\", \"-c\", \"echo\"]\nsecrets = [\"K\"]\n"), 0o644)
	c, err := Load(nil, []string{"PADDOCK_CONFIG=" + file})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Agents["claude"].Command) != 2 || c.Agents["claude"].Secrets[0] != "ANTHROPIC_API_KEY" || c.Agents["echo"].Secrets[0] != "K" || c.DefaultAgent != "claude" {
		t.Fatalf("agents %+v default %q", c.Agents, c.DefaultAgent)
	}
}

// The setting that lets runc boxes run Docker hands them the host: it is
// refused outside local mode.
func TestUnsafeDockerOnlyInLocalMode(t *testing.T) {
	base := []string{"PADDOCK_CONFIG=" + os.DevNull, "PADDOCK_STATE_DIR=" + t.TempDir(), "PADDOCK_UNSAFE_DOCKER_IN_RUNC_BOXES=true"}
	if _, err := Load(nil, base); err == nil || !strings.Contains(err.Error(), "local mode only") {
		t.Fatalf("outside local mode: %v", err)
	}
	if _, err := Load(nil, append(base, "PADDOCK_LOCAL=true")); err != nil {
		t.Fatalf("in local mode: %v", err)
	}
}

// docker_start takes its two values; anything else is refused, naming
// the setting, before paddockd makes a box with it.
func TestDockerStart(t *testing.T) {
	base := []string{"PADDOCK_CONFIG=" + os.DevNull, "PADDOCK_STATE_DIR=" + t.TempDir()}
	c, err := Load(nil, base)
	if err != nil || c.DockerStart != DockerFirstUse {
		t.Fatalf("default: %q %v", c.DockerStart, err)
	}
	if c, err := Load(nil, append(base, "PADDOCK_DOCKER_START=with-box")); err != nil || c.DockerStart != DockerWithBox {
		t.Fatalf("with-box: %q %v", c.DockerStart, err)
	}
	if _, err := Load(nil, append(base, "PADDOCK_DOCKER_START=always")); err == nil || !strings.Contains(err.Error(), `docker_start must be "first-use" or "with-box", not "always"`) {
		t.Fatalf("a bad value: %v", err)
	}
}

// backup_to is refused, naming what is missing, without a store to put
// backups in, a key to encrypt them to, or with a relative folder; File
// is the file the settings came from.
func TestBackupTo(t *testing.T) {
	dir := t.TempDir()
	load := func(toml string) (Config, error) {
		p := filepath.Join(dir, "paddock.toml")
		if err := os.WriteFile(p, []byte(toml), 0o600); err != nil {
			t.Fatal(err)
		}
		return Load(nil, []string{"PADDOCK_CONFIG=" + p, "PADDOCK_STATE_DIR=" + dir})
	}
	for toml, want := range map[string]string{
		`backup_to = "object_store"` + "\nbackup_passphrase_file = \"/p\"\n":        "needs an [object_store]",
		`backup_to = "/var/backups/paddock"` + "\n":                                 "always encrypted",
		`backup_to = "backups"` + "\nbackup_passphrase_file = \"/p\"\n":             `absolute folder, not "backups"`,
		`backup_to = "/b"` + "\nbackup_keep = 0\nbackup_passphrase_file = \"/p\"\n": "backup_keep",
	} {
		if _, err := load(toml); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", toml, err, want)
		}
	}
	c, err := load(`backup_to = "/b"` + "\nbackup_recipients = [\"age1x\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.BackupEvery != 24*time.Hour || c.BackupKeep != 7 || c.File != filepath.Join(dir, "paddock.toml") {
		t.Fatalf("backup_every %v, backup_keep %d, file %q", c.BackupEvery, c.BackupKeep, c.File)
	}
}
