// Package config reads paddockd's configuration with koanf, in layers, each
// overriding the one before:
//
//  1. built-in defaults (Defaults),
//  2. the TOML file /etc/paddock/paddock.toml (or --config / PADDOCK_CONFIG),
//     which may be absent,
//  3. PADDOCK_* environment variables: the key in upper case, with "__"
//     between nested keys (PADDOCK_STATE_DIR, PADDOCK_TYPES__SMALL__CPUS),
//  4. command-line flags (--state-dir and so on).
package config

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

	"github.com/paddock-dev/paddock/appliance/objstore"
)

// DefaultPath is the configuration file read when none is named.
const DefaultPath = "/etc/paddock/paddock.toml"

// BoxType is the size of a box type.
type BoxType struct {
	CPUs      float64 `koanf:"cpus"`
	MemoryMiB int64   `koanf:"memory_mib"`
	// Pids bounds the processes (and threads) of a box: a fork bomb in one
	// box stops at it instead of taking the host's.
	Pids int64 `koanf:"pids"`
	// DiskGiB bounds what a box may write: its writable layer and its
	// /var/lib/docker volume together. paddockd measures them every
	// disk_check_interval and stops a box past the bound, saying why
	// (0: no bound). Drives are not counted.
	DiskGiB float64 `koanf:"disk_gib"`
	// IdleStop stops a box of this type that went unused that long (no
	// command, job, SSH session, terminal, desktop viewer, push, pull or
	// preview request, and its CPU under idle_cpu), with a snapshot, as
	// 'paddock stop' does; it starts again on its next use. 0: never. A
	// box's own idle_stop ('new --idle-stop', a Boxfile's) wins.
	IdleStop time.Duration `koanf:"idle_stop"`
}

// Agent says how a coding agent runs a task without a person: Command,
// then the task as one more argument, run as the box user; Secrets name
// the secrets ('paddock secret set') put into its environment when set;
// Required are those it cannot run without (a prompt is refused before
// anything starts). An agent whose user may log in inside the box instead
// (a subscription) needs none: Logins are the files, under the box user's
// home, that its own login leaves.
type Agent struct {
	Command  []string `koanf:"command"`
	Secrets  []string `koanf:"secrets"`
	Required []string `koanf:"required"`
	Logins   []string `koanf:"logins"`
	// NoTask, when set, says why the agent takes no task without a
	// person: it is installed and listed, and prompt refuses it with this.
	NoTask string `koanf:"no_task"`
	// BaseURLs are variables the agent reads its API's address from,
	// set when one of its secrets is brokered: the value is a template in
	// which ${SECRET} (os.Expand's form) is the broker's address for that secret's first
	// host (ANTHROPIC_BASE_URL = "${ANTHROPIC_API_KEY}").
	BaseURLs map[string]string `koanf:"base_urls"`
}

// Limits are counts a member may not pass.
type Limits struct {
	Boxes int `koanf:"boxes"`
	// Running counts a member's boxes meant to run (0: no bound).
	Running int `koanf:"running"`
	Drives  int `koanf:"drives"`
	// Types are the box types a member may make (empty: every one).
	Types []string `koanf:"types"`
	// Jobs counts a member's running jobs and prompts.
	Jobs int `koanf:"jobs"`
	// DriveGiB bounds what a member's drives hold together, measured
	// with the boxes' disks (disk_check_interval); 0: no bound.
	DriveGiB float64 `koanf:"drive_gib"`
}

// Config is paddockd's configuration.
type Config struct {
	// StateDir holds the database, job logs and the local token.
	StateDir string `koanf:"state_dir"`
	// Socket is the unix socket the API is served on.
	Socket string `koanf:"socket"`
	// Listen is a TCP address for the API; in local mode it defaults to
	// loopback and must stay on it.
	Listen string `koanf:"listen"`
	// Local mode: serve on loopback, make an owner token on first start and
	// print it.
	Local bool `koanf:"local"`
	// Instance names every engine object this daemon makes.
	Instance string `koanf:"instance"`
	// Runtime is the OCI runtime of boxes: sysbox-runc, or runc where Sysbox
	// cannot be installed (then Docker inside boxes does not work).
	Runtime string `koanf:"runtime"`
	// Image is the default box image.
	Image string `koanf:"image"`
	// UnsafeDockerInRuncBoxes lets boxes on runc run their own Docker
	// engine by giving them every capability, no seccomp or AppArmor
	// profile and the host's cgroups, writable: root in such a box owns the
	// host. It exists for the test of Docker in a box on machines where
	// Sysbox cannot be installed, and is refused outside local mode.
	UnsafeDockerInRuncBoxes bool `koanf:"unsafe_docker_in_runc_boxes"`
	// DockerStart says when a box's own Docker engine starts: "first-use"
	// (the first connection to its socket starts it, so a box that never
	// runs docker holds no engine; the first command waits for its start,
	// 0.3–1.3 s measured) or "with-box" (it starts with the box, holding some 40 MiB
	// of the box's memory whether used or not, and the first command finds
	// it up). An engine that has containers starts with the box either way.
	DockerStart string `koanf:"docker_start"`
	// Limits bound what each member may have at once (0: no bound); owners
	// have no bounds.
	Limits Limits `koanf:"limits"`
	// JobLogMaxMiB bounds what is kept of one job's output: its tail, with a
	// line that says how much was dropped.
	JobLogMaxMiB int64 `koanf:"job_log_max_mib"`
	// JobLogsPerUserMiB bounds the job logs kept for each user's boxes,
	// owners too: past it, the logs of their oldest ended jobs are
	// replaced by a line that says so (0: no bound).
	JobLogsPerUserMiB int64 `koanf:"job_logs_per_user_mib"`
	// AuditDays is how long audit log entries are kept (package audit);
	// 0 keeps them all.
	AuditDays int `koanf:"audit_days"`
	// AuditFile, when set, gets each audit entry as a JSON line as it is
	// recorded, for a log shipper to follow (and to witness the log:
	// package audit).
	AuditFile string `koanf:"audit_file"`
	// ArchiveMaxMiB bounds what one push or drive restore may hold
	// (sparse files are refused whatever their size).
	ArchiveMaxMiB int64 `koanf:"archive_max_mib"`
	// MoveMaxGiB bounds what a server takes in of a box's snapshots in a
	// move (their images' archive, and what its layers unpack to): the
	// archive comes from another server, which may have been taken over.
	MoveMaxGiB float64 `koanf:"move_max_gib"`
	// CLIDir holds the paddock CLI for users' computers, served at /cli/
	// (paddock-OS-ARCH and SHA256SUMS; the installer puts them there).
	CLIDir string `koanf:"cli_dir"`
	// Images are the other images boxes may be made from, by these exact
	// names. Nothing else on the engine is (not image IDs, digests, nor
	// other users' snapshot images): a box made from an image holds what
	// that image holds.
	Images []string `koanf:"images"`
	// Builds bound users' own image builds (package images).
	Builds Builds `koanf:"builds"`
	// ObjectStore is the S3-compatible store that boxes' snapshots are
	// shipped to, so that they outlive this server's disk (package
	// shipping); empty endpoint: none. Its keys stay in paddockd.
	ObjectStore objstore.Config `koanf:"object_store"`
	// ShipInterval is how often snapshots not yet in the object store are
	// looked for (each is shipped once it is taken, too).
	ShipInterval time.Duration `koanf:"ship_interval"`
	// BackupTo is where paddockd writes backups of its own state on a
	// schedule (package backup): "object_store" (the store above, under
	// backups/), or an absolute folder; empty: none. Every BackupEvery,
	// the newest BackupKeep kept, each encrypted to BackupRecipients (age
	// public keys) or to the passphrase on BackupPassphraseFile's first
	// line, as 'paddockd backup' encrypts.
	// File is the configuration file the settings were read from (""
	// when there was none), which backups keep.
	File                 string        `koanf:"-"`
	BackupTo             string        `koanf:"backup_to"`
	BackupEvery          time.Duration `koanf:"backup_every"`
	BackupKeep           int           `koanf:"backup_keep"`
	BackupRecipients     []string      `koanf:"backup_recipients"`
	BackupPassphraseFile string        `koanf:"backup_passphrase_file"`
	// BoxUser runs commands in boxes; BoxUID owns pushed files.
	BoxUser string `koanf:"box_user"`
	BoxUID  int    `koanf:"box_uid"`
	// Subnet of the box network. Boxes get fixed addresses in it; it must
	// not change while boxes exist.
	Subnet string `koanf:"subnet"`
	// NodeSubnets is where the box networks of the servers that join
	// (nodes) are carved out, a /24 each; it must not overlap Subnet nor
	// any network of the nodes.
	NodeSubnets string `koanf:"node_subnets"`
	// ClusterListen is where the control plane takes joining servers
	// (IP:PORT on its private network, the address printed in join
	// commands); empty: this server takes no nodes.
	ClusterListen string `koanf:"cluster_listen"`
	// NodeListen is where a node's agent answers the control plane
	// (paddockd node): host:port; the host defaults to the address the
	// node reaches the control plane from.
	NodeListen string `koanf:"node_listen"`
	// DNSUpstream is where the boxes' resolver forwards allowed names
	// (host:port); empty takes the first nameserver of /etc/resolv.conf.
	DNSUpstream string `koanf:"dns_upstream"`
	// BrokerPort is where the credential broker listens, on the box
	// network's gateway (plain HTTP, reachable from boxes only); 0 turns
	// brokered secrets off.
	BrokerPort int `koanf:"broker_port"`
	// BrokerCAFile adds authorities (PEM) that the broker trusts, beside
	// the system's, for the APIs it forwards to; nothing else trusts them.
	BrokerCAFile string `koanf:"broker_ca_file"`
	// DockerHost overrides DOCKER_HOST.
	DockerHost string `koanf:"docker_host"`
	// Types maps small, medium and large to limits.
	Types map[string]BoxType `koanf:"types"`
	// ReconcileInterval is how often the reconciler runs with no trigger.
	ReconcileInterval time.Duration `koanf:"reconcile_interval"`
	// DiskCheckInterval is how often boxes' disk use is measured (0: never).
	DiskCheckInterval time.Duration `koanf:"disk_check_interval"`
	// DiskGrace is the least time a box started again after being stopped
	// for its disk has to free space before it is measured again (five
	// checks, if that is longer).
	DiskGrace time.Duration `koanf:"disk_grace"`
	// IdleCheckInterval is how often boxes with an idle stop are looked
	// at (their use, their CPU).
	IdleCheckInterval time.Duration `koanf:"idle_check_interval"`
	// IdleCPU is the CPU use, in CPUs (0.05: 5% of one), under which a box
	// counts as unused between two looks.
	IdleCPU float64 `koanf:"idle_cpu"`
	// MetricsInterval is how often each running box's use (CPU, memory,
	// processes, network) is sampled (0: never).
	MetricsInterval time.Duration `koanf:"metrics_interval"`
	// MetricsDiskInterval is how often the disk of a running box whose
	// type has no disk bound is measured for its metrics (a bounded
	// one's is measured every disk_check_interval): measuring walks its
	// files.
	MetricsDiskInterval time.Duration `koanf:"metrics_disk_interval"`
	// MetricsKeep is how long samples are kept; after an hour, one a
	// minute.
	MetricsKeep time.Duration `koanf:"metrics_keep"`
	// LogLevel: debug, info, warn, error.
	LogLevel string `koanf:"log_level"`
	// Agents is the agent table: name → how it runs a task.
	Agents map[string]Agent `koanf:"agents"`
	// DefaultAgent is used when a box names none and a prompt gives none.
	DefaultAgent string `koanf:"default_agent"`
	// SSHListen is the SSH gateway's address ("" turns it off).
	SSHListen string `koanf:"ssh_listen"`
	// Hostname is the server's public name. With it set, the embedded
	// Caddy serves HTTPS for it (and preview URLs under it) on
	// HTTPSListen, redirecting HTTPListen; without it there is no front
	// door (local mode, or the API socket only).
	Hostname    string `koanf:"hostname"`
	HTTPSListen string `koanf:"https_listen"`
	HTTPListen  string `koanf:"http_listen"`
	// TLS is "acme" (certificates from a public CA; production) or
	// "internal" (Caddy's own CA; test machines, private networks).
	TLS string `koanf:"tls"`
	// ACMEEmail is given to the CA for expiry notices (optional).
	ACMEEmail string `koanf:"acme_email"`
	// DesktopDefault gives new boxes a desktop unless they say otherwise.
	DesktopDefault bool `koanf:"desktop_default"`
	// LinkTTL bounds the owner setup link and invitations.
	LinkTTL time.Duration `koanf:"link_ttl"`
	// WarmPool is how many ready boxes of each type paddockd keeps for new
	// boxes to claim (e.g. {small = 2}; none: no pool). They are made
	// from the default image, with a desktop if DesktopDefault says so.
	WarmPool map[string]int `koanf:"warm_pool"`
	// WarmExec keeps, in each box that has run a command, a process
	// started ahead that starts its commands (a waiting python3, about
	// 4 MiB of the box's memory), so that commands do not wait for the
	// runtime. Off, only pool boxes have one, made before their claim.
	WarmExec bool `koanf:"warm_exec"`
	// SSO are the OpenID Connect providers people may sign in with, by
	// id (the id is in the sign-in URLs: /sso/ID/start, /sso/ID/callback).
	SSO map[string]SSOProvider `koanf:"sso"`
	// PasswordLogin lets people sign in with a password. Off (with a
	// provider set), only the owner may: the way in when the provider
	// is not.
	PasswordLogin bool `koanf:"password_login"`
	// SSORecheck is how often each single sign-on user's standing at
	// their provider is checked (a refresh of their tokens there): one
	// the provider refuses loses their API tokens and sessions.
	SSORecheck time.Duration `koanf:"sso_recheck"`
	// SSOMaxAge bounds the API tokens and sessions of a single sign-on
	// user whose provider gave no refresh token: they go this long after
	// the user's last sign-in.
	SSOMaxAge time.Duration `koanf:"sso_max_age"`
	// SnapshotKeep is how many snapshots of each box are kept (0: all).
	// Older ones go as new ones are taken, except those a box is made from.
	SnapshotKeep int `koanf:"snapshot_keep"`
}

// SSOProvider is an OpenID Connect provider (an identity provider:
// Google Workspace, Microsoft Entra, Okta, Keycloak, Authentik...).
type SSOProvider struct {
	// Name is shown on the login page: "Sign in with NAME".
	Name string `koanf:"name"`
	// Issuer is the provider's issuer URL (its discovery document is
	// ISSUER/.well-known/openid-configuration): https, or http on a
	// loopback address.
	Issuer       string `koanf:"issuer"`
	ClientID     string `koanf:"client_id"`
	ClientSecret string `koanf:"client_secret"`
	// Domains are the email domains let in (the provider must say the
	// address is verified); Groups the groups (any one). A person must
	// pass both that are set; at least one must be.
	Domains []string `koanf:"domains"`
	Groups  []string `koanf:"groups"`
	// GroupsClaim names the ID token's claim that lists the person's
	// groups (default "groups").
	GroupsClaim string `koanf:"groups_claim"`
	// Roles gives people in a group a role: admin, member (the default)
	// or viewer. One in several groups with roles gets the highest.
	Roles map[string]string `koanf:"roles"`
	// CAFile is a PEM file of certificates to trust for the provider,
	// besides the system's (a provider with a private CA).
	CAFile string `koanf:"ca_file"`
}

// Builds bound users' image builds. Owners have the same bounds: a build
// runs in a box on the server either way.
type Builds struct {
	// ImageGiB bounds one built image (its layers, bases included).
	ImageGiB float64 `koanf:"image_gib"`
	// PerUser bounds the images (name and tag) each user may keep.
	PerUser int `koanf:"per_user"`
	// Timeout bounds one build's steps.
	Timeout time.Duration `koanf:"timeout"`
	// CacheGiB bounds a user's build cache (their builder boxes'
	// /var/lib/docker): past it after a build, the cache is emptied.
	CacheGiB float64 `koanf:"cache_gib"`
	// Type is the box type of builder boxes.
	Type string `koanf:"type"`
}

// Defaults are the built-in values.
func Defaults() map[string]any {
	return map[string]any{
		"state_dir":                   "/var/lib/paddock",
		"socket":                      "/run/paddock/paddock.sock",
		"listen":                      "",
		"local":                       false,
		"instance":                    "paddock",
		"runtime":                     "sysbox-runc",
		"image":                       "paddock/box:latest",
		"images":                      []string{},
		"builds.image_gib":            10.0,
		"builds.per_user":             20,
		"builds.timeout":              "30m",
		"builds.cache_gib":            20.0,
		"builds.type":                 "medium",
		"job_log_max_mib":             64,
		"job_logs_per_user_mib":       1024,
		"limits.boxes":                20,
		"limits.drives":               20,
		"limits.jobs":                 50,
		"limits.running":              0,
		"limits.types":                []string{},
		"limits.drive_gib":            100,
		"archive_max_mib":             16384,
		"move_max_gib":                64.0,
		"audit_days":                  90,
		"audit_file":                  "",
		"cli_dir":                     "/usr/local/lib/paddock/cli",
		"unsafe_docker_in_runc_boxes": false,
		"docker_start":                "first-use",
		"box_user":                    "paddock",
		"box_uid":                     1000,
		"subnet":                      "10.213.0.0/16",
		"node_subnets":                "10.214.0.0/16",
		"node_listen":                 ":7443",
		"cluster_listen":              "",
		"dns_upstream":                "",
		"broker_port":                 4480,
		"broker_ca_file":              "",
		"docker_host":                 "",
		"types.small.cpus":            1.0,
		"types.small.memory_mib":      2048,
		"types.small.pids":            2048,
		"types.medium.pids":           4096,
		"types.large.pids":            8192,
		"types.small.disk_gib":        20,
		"types.medium.disk_gib":       40,
		"types.large.disk_gib":        80,
		"disk_check_interval":         "2m",
		"disk_grace":                  "1m",
		"idle_check_interval":         "30s",
		"idle_cpu":                    0.05,
		"password_login":              true,
		"sso_recheck":                 "15m",
		"sso_max_age":                 "24h",
		"metrics_interval":            "5s",
		"metrics_disk_interval":       "1m",
		"metrics_keep":                "24h",
		"types.medium.cpus":           2.0,
		"types.medium.memory_mib":     4096,
		"types.large.cpus":            4.0,
		"types.large.memory_mib":      8192,
		"reconcile_interval":          "10s",
		"warm_pool.small":             1,
		"warm_exec":                   true,
		"log_level":                   "info",
		"default_agent":               "claude",
		"ssh_listen":                  ":2222",
		"hostname":                    "",
		"https_listen":                ":443",
		"http_listen":                 ":80",
		"tls":                         "acme",
		"acme_email":                  "",
		"link_ttl":                    "24h",
		"desktop_default":             true,
		"snapshot_keep":               5,
		"ship_interval":               "1m",
		"backup_every":                "24h",
		"backup_keep":                 7,
		"agents.claude.command":       []string{"claude", "-p"},
		"agents.claude.secrets":       []string{"ANTHROPIC_API_KEY"},
		"agents.claude.logins":        []string{".claude/.credentials.json"},
		"agents.claude.base_urls":     map[string]any{"ANTHROPIC_BASE_URL": "${ANTHROPIC_API_KEY}"},
		"agents.codex.command":        []string{"codex", "exec"},
		"agents.codex.secrets":        []string{"OPENAI_API_KEY"},
		"agents.codex.logins":         []string{".codex/auth.json"},
		"agents.codex.base_urls":      map[string]any{"OPENAI_BASE_URL": "${OPENAI_API_KEY}/v1"},
		"agents.opencode.command":     []string{"opencode", "run"},
		"agents.opencode.secrets":     []string{},
		"agents.opencode.logins":      []string{".local/share/opencode/auth.json"},
		"agents.pi.command":           []string{"pi", "-p"},
		"agents.pi.secrets":           []string{},
		"agents.pi.logins":            []string{".pi/agent/auth.json"},
		"agents.kimi.command":         []string{"kimi", "--print", "-p"},
		"agents.kimi.secrets":         []string{},
		"agents.prime.command":        []string{"prime"},
		"agents.prime.no_task":        "prime is Prime Intellect's command line (compute, environments, evaluations); it has no way to run a task without a person: use it with 'paddock exec BOX -- prime ...'",
	}
}

// LocalListen is the loopback address of local mode.
const LocalListen = "127.0.0.1:8760"

// Flags declares the flags that override configuration keys.
func Flags(fs *pflag.FlagSet) {
	fs.String("config", "", "configuration file (default "+DefaultPath+")")
	fs.String("state-dir", "", "state directory")
	fs.String("socket", "", "unix socket for the API")
	fs.String("listen", "", "TCP address for the API")
	fs.Bool("local", false, "local mode: serve on "+LocalListen+" and print an owner token")
	fs.String("instance", "", "name prefix of every engine object")
	fs.String("runtime", "", "OCI runtime for boxes (sysbox-runc, runc)")
	fs.String("image", "", "default box image")
	fs.String("cli-dir", "", "directory of the CLI binaries served at /cli/")
	fs.String("log-level", "", "debug, info, warn or error")
	fs.String("ssh-listen", "", "SSH gateway address (default :2222)")
	fs.String("hostname", "", "public host name: serve HTTPS for it with the embedded Caddy")
}

// Path is the configuration file Load reads, and whether it was named
// (by --config or PADDOCK_CONFIG) rather than the default.
func Path(fs *pflag.FlagSet, environ []string) (string, bool) {
	path := DefaultPath
	explicit := false
	for _, e := range environ {
		if v, ok := strings.CutPrefix(e, "PADDOCK_CONFIG="); ok && v != "" {
			path, explicit = v, true
		}
	}
	if fs != nil {
		if f := fs.Lookup("config"); f != nil && f.Changed {
			path, explicit = f.Value.String(), true
		}
	}
	return path, explicit
}

// Load reads the layers. environ is the environment (os.Environ()).
func Load(fs *pflag.FlagSet, environ []string) (Config, error) {
	k := koanf.New(".")
	if err := k.Load(confmap.Provider(Defaults(), "."), nil); err != nil {
		return Config{}, err
	}
	path, explicit := Path(fs, environ)
	read := path
	if err := k.Load(file.Provider(path), toml.Parser()); err != nil {
		if !errors.Is(err, errNotExist) || explicit {
			return Config{}, fmt.Errorf("reading %s: %w", path, err)
		}
		read = ""
	}
	err := k.Load(env.Provider(".", env.Opt{
		Prefix: "PADDOCK_",
		TransformFunc: func(key, v string) (string, any) {
			key = strings.TrimPrefix(key, "PADDOCK_")
			if key == "CONFIG" || strings.HasPrefix(key, "VAR_") || key == "HOST" || key == "TOKEN" {
				return "", nil // not daemon settings
			}
			return strings.ToLower(strings.ReplaceAll(key, "__", ".")), v
		},
		EnvironFunc: func() []string { return environ },
	}), nil)
	if err != nil {
		return Config{}, err
	}
	if fs != nil {
		err := k.Load(posflag.ProviderWithFlag(fs, ".", k, func(f *pflag.Flag) (string, any) {
			if f.Name == "config" || !f.Changed {
				return "", nil
			}
			return strings.ReplaceAll(f.Name, "-", "_"), posflag.FlagVal(fs, f)
		}), nil)
		if err != nil {
			return Config{}, err
		}
	}
	var c Config
	if err := k.UnmarshalWithConf("", &c, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		return Config{}, err
	}
	c.File = read
	if c.Local && c.Listen == "" {
		c.Listen = LocalListen
	}
	if c.Local && c.SSHListen == ":2222" {
		c.SSHListen = "127.0.0.1:2222" // local mode stays on loopback
	}
	return c, c.Validate()
}

var errNotExist = iofs.ErrNotExist

func validHostname(h string) bool {
	if len(h) > 253 || !strings.Contains(h, ".") {
		return false
	}
	for _, l := range strings.Split(h, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// The values of docker_start.
const (
	DockerFirstUse = "first-use"
	DockerWithBox  = "with-box"
)

// MaxWarmPool bounds warm_pool's count of each type.
const MaxWarmPool = 20

// Validate checks values that would otherwise fail later and far away.
func (c Config) Validate() error {
	if c.StateDir == "" {
		return errors.New("config: state_dir is empty")
	}
	if c.AuditDays < 0 {
		return errors.New("config: audit_days must be 0 (keep every entry) or more")
	}
	if c.JobLogMaxMiB < 0 || c.ArchiveMaxMiB < 0 || c.JobLogsPerUserMiB < 0 {
		return errors.New("config: job_log_max_mib, job_logs_per_user_mib and archive_max_mib must be 0 (no bound) or more")
	}
	if c.MoveMaxGiB <= 0 {
		return errors.New("config: move_max_gib must be more than 0")
	}
	if c.UnsafeDockerInRuncBoxes && !c.Local {
		return errors.New("config: unsafe_docker_in_runc_boxes gives boxes the host: it is for tests in local mode only (use the sysbox-runc runtime for Docker in boxes)")
	}
	if c.DockerStart != DockerFirstUse && c.DockerStart != DockerWithBox {
		return fmt.Errorf("config: docker_start must be %q or %q, not %q", DockerFirstUse, DockerWithBox, c.DockerStart)
	}
	if c.Instance == "" || strings.ContainsAny(c.Instance, " /:") || strings.ToLower(c.Instance) != c.Instance {
		return fmt.Errorf("config: instance %q must be lowercase letters, digits and '-'", c.Instance)
	}
	for _, t := range []string{"small", "medium", "large"} {
		bt, ok := c.Types[t]
		if !ok || bt.CPUs <= 0 || bt.MemoryMiB <= 0 || bt.Pids <= 0 {
			return fmt.Errorf("config: types.%s needs cpus > 0, memory_mib > 0 and pids > 0", t)
		}
		if bt.IdleStop < 0 {
			return fmt.Errorf("config: types.%s.idle_stop must be 0 (never) or a duration", t)
		}
	}
	for name, a := range c.Agents {
		if len(a.Command) == 0 {
			return fmt.Errorf("config: agents.%s.command is empty", name)
		}
	}
	if c.ReconcileInterval <= 0 {
		return errors.New("config: reconcile_interval must be positive")
	}
	if c.TLS != "acme" && c.TLS != "internal" {
		return fmt.Errorf("config: tls must be \"acme\" or \"internal\", not %q", c.TLS)
	}
	if c.Hostname != "" && !validHostname(c.Hostname) {
		return fmt.Errorf("config: hostname %q is not a DNS name (letters, digits, '-' and dots)", c.Hostname)
	}
	if c.LinkTTL <= 0 {
		return errors.New("config: link_ttl must be positive")
	}
	for t, n := range c.WarmPool {
		if _, ok := c.Types[t]; !ok || n < 0 || n > MaxWarmPool {
			return fmt.Errorf("config: warm_pool.%s: give a box type (small, medium, large) a count from 0 to %d", t, MaxWarmPool)
		}
	}
	if c.IdleCheckInterval <= 0 || c.IdleCPU < 0 {
		return errors.New("config: idle_check_interval must be positive and idle_cpu 0 or more")
	}
	if c.MetricsInterval < 0 || c.MetricsDiskInterval <= 0 || c.MetricsKeep < time.Hour {
		return errors.New("config: metrics_interval must be 0 (off) or a duration, metrics_disk_interval positive, and metrics_keep an hour or more")
	}
	if err := c.checkSSO(); err != nil {
		return err
	}
	if c.SnapshotKeep < 0 {
		return errors.New("config: snapshot_keep must be 0 (keep all) or more")
	}
	if err := c.ObjectStore.Check(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if c.ObjectStore.Enabled() && c.ShipInterval <= 0 {
		return errors.New("config: ship_interval must be positive")
	}
	return c.checkBackup()
}

// checkBackup checks the scheduled backups' settings.
func (c Config) checkBackup() error {
	switch {
	case c.BackupTo == "":
		return nil
	case c.BackupTo == "object_store":
		if !c.ObjectStore.Enabled() {
			return errors.New(`config: backup_to = "object_store" needs an [object_store] with an endpoint`)
		}
	case !filepath.IsAbs(c.BackupTo):
		return fmt.Errorf(`config: backup_to must be "object_store" or an absolute folder, not %q`, c.BackupTo)
	}
	if c.BackupEvery < time.Second {
		return errors.New("config: backup_every must be a second or more")
	}
	if c.BackupKeep < 1 {
		return errors.New("config: backup_keep must be 1 or more")
	}
	if len(c.BackupRecipients) == 0 && c.BackupPassphraseFile == "" {
		return errors.New("config: backup_to needs backup_recipients (age public keys) or backup_passphrase_file: a backup holds the keys to the server, and is always encrypted")
	}
	return nil
}

// EnsureDirs makes the state directory (0700) and the socket's directory.
func (c Config) EnsureDirs() error {
	if err := os.MkdirAll(c.StateDir, 0o700); err != nil {
		return err
	}
	if c.Socket != "" {
		if i := strings.LastIndexByte(c.Socket, '/'); i > 0 {
			if err := os.MkdirAll(c.Socket[:i], 0o755); err != nil {
				return err
			}
		}
	}
	return nil
}

var ssoID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// checkSSO checks the single sign-on providers.
func (c *Config) checkSSO() error {
	if c.SSORecheck <= 0 || c.SSOMaxAge <= 0 {
		return errors.New("config: sso_recheck and sso_max_age must be positive")
	}
	if !c.PasswordLogin && len(c.SSO) == 0 {
		return errors.New("config: password_login = false needs a single sign-on provider ([sso.ID]): no one could sign in")
	}
	for id, p := range c.SSO {
		at := "config: sso." + id
		if !ssoID.MatchString(id) {
			return fmt.Errorf("%s: an id is lower-case letters, digits and '-' (it is in the sign-in URLs)", at)
		}
		u, err := url.Parse(p.Issuer)
		if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname()))) {
			return fmt.Errorf("%s.issuer %q: give the provider's https URL (http only on a loopback address)", at, p.Issuer)
		}
		if p.ClientID == "" {
			return fmt.Errorf("%s.client_id is empty: give the client id the provider made for this server", at)
		}
		if len(p.Domains) == 0 && len(p.Groups) == 0 {
			return fmt.Errorf("%s: say who may sign in with domains = [...] or groups = [...] (or both)", at)
		}
		for g, r := range p.Roles {
			if r != "admin" && r != "member" && r != "viewer" {
				return fmt.Errorf("%s.roles.%s = %q: a group's role is admin, member or viewer", at, g, r)
			}
		}
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
