package api

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/images/imagefmt"
)

// isLabel says whether s is a DNS label: 1 to 63 lowercase letters,
// digits and '-', not starting or ending with '-'. (A regular expression
// for it, with its {0,61}, took 2 ms to compile at every start of the
// CLI.)
func isLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ValidName checks a box or drive name: a DNS label (lowercase letters,
// digits and '-', 1 to 63 characters, not starting or ending with '-'), so
// it can name a container, a volume and a preview host name.
func ValidName(kind, name string) error {
	if name == "" {
		return &Error{Code: CodeInvalid, Field: "name", Message: kind + " name is empty"}
	}
	if name == "current" {
		return &Error{Code: CodeInvalid, Field: "name", Message: fmt.Sprintf("%s name %q is reserved (it means the current box)", kind, name)}
	}
	for _, p := range ReservedPrefixes {
		if strings.HasPrefix(name, p) {
			return &Error{Code: CodeInvalid, Field: "name", Message: fmt.Sprintf("%s name %q is reserved: names beginning with %q are Paddock's own", kind, name, p)}
		}
	}
	if !isLabel(name) {
		return &Error{Code: CodeInvalid, Field: "name", Message: fmt.Sprintf(
			"invalid %s name %q: use 1-63 lowercase letters, digits and '-', starting and ending with a letter or digit", kind, name)}
	}
	return nil
}

// ReservedPrefixes begin the names Paddock gives its own objects (the
// engine names of warm pool boxes): no user's object may take one.
var ReservedPrefixes = []string{"pool-"}

// BoxTypes are the sizes a box may have; server configuration maps each to
// CPU and memory limits.
var BoxTypes = []string{"small", "medium", "large"}

// ValidType checks a box type.
func ValidType(t string) error {
	for _, k := range BoxTypes {
		if t == k {
			return nil
		}
	}
	return &Error{Code: CodeInvalid, Field: "type", Message: fmt.Sprintf("unknown box type %q: use one of %s", t, strings.Join(BoxTypes, ", "))}
}

// ParseTTL reads a TTL given as whole seconds ("3600") or a Go duration
// ("1h", "90m", "5s"). Zero or empty means no TTL.
func ParseTTL(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, &Error{Code: CodeInvalid, Field: "ttl", Message: fmt.Sprintf("bad ttl %q: must not be negative", s)}
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, &Error{Code: CodeInvalid, Field: "ttl", Message: fmt.Sprintf("bad ttl %q: give seconds (3600) or a duration (1h, 90m, 5s)", s)}
	}
	if d%time.Second != 0 {
		return 0, &Error{Code: CodeInvalid, Field: "ttl", Message: fmt.Sprintf("bad ttl %q: whole seconds only", s)}
	}
	return d, nil
}

// IdleStopOff is a box's idle stop when it has none, whatever its type.
const IdleStopOff = -time.Second

// ParseIdleStop reads a box's idle stop: "" (its type's: 0), "off"
// (never: IdleStopOff) or a duration of whole seconds, at least one.
func ParseIdleStop(s string) (time.Duration, error) {
	switch s {
	case "":
		return 0, nil
	case "off", "0":
		return IdleStopOff, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second || d%time.Second != 0 {
		return 0, &Error{Code: CodeInvalid, Field: "idle_stop", Message: fmt.Sprintf("bad idle_stop %q: give a duration of whole seconds (30m, 2h), or off", s)}
	}
	return d, nil
}

// IdleStopText is how an idle stop reads: "" for none, else a duration.
func IdleStopText(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return d.String()
}

// ValidMount checks a drive mount: the drive name and a path under /mnt.
func ValidMount(m Mount) error {
	if err := ValidName("drive", m.Drive); err != nil {
		return err
	}
	p := path.Clean(m.Path)
	if !strings.HasPrefix(m.Path, "/mnt/") || p != m.Path || p == "/mnt" || strings.Contains(p, "..") {
		return &Error{Code: CodeInvalid, Field: "mounts", Message: fmt.Sprintf("mount path %q for drive %q must be a clean path under /mnt/", m.Path, m.Drive)}
	}
	return nil
}

// ParseMount reads NAME or NAME:/mnt/PATH (the path defaults to /mnt/NAME),
// with an optional ":ro" suffix.
func ParseMount(s string) (Mount, error) {
	m := Mount{}
	parts := strings.Split(s, ":")
	if len(parts) == 3 && parts[2] == "ro" {
		m.ReadOnly = true
		parts = parts[:2]
	}
	switch len(parts) {
	case 1:
		m.Drive, m.Path = parts[0], "/mnt/"+parts[0]
	case 2:
		m.Drive, m.Path = parts[0], parts[1]
	default:
		return m, &Error{Code: CodeInvalid, Field: "mounts", Message: fmt.Sprintf("bad drive mount %q: use NAME:/mnt/PATH", s)}
	}
	return m, ValidMount(m)
}

// ValidEnvName checks an environment variable name.
func ValidEnvName(k string) error {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return &Error{Code: CodeInvalid, Field: "env", Message: fmt.Sprintf("bad environment variable name %q", k)}
	}
	return nil
}

// ValidDomainPattern checks an allowlist entry: a domain name
// ("example.com", matching exactly) or "*." and a domain (its subdomains).
func ValidDomainPattern(p string) error {
	name := strings.TrimPrefix(p, "*.")
	bad := func(why string) error {
		return &Error{Code: CodeInvalid, Field: "allow_domains", Message: fmt.Sprintf("bad domain pattern %q: %s", p, why)}
	}
	if name == "" || len(name) > 253 {
		return bad("empty or too long")
	}
	if strings.Contains(name, "*") {
		return bad(`a wildcard may only be the whole first label, as in "*.example.com"`)
	}
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	if len(labels) < 2 && strings.HasPrefix(p, "*.") {
		return bad("a wildcard needs a domain under it")
	}
	for _, l := range labels {
		if !isLabel(l) {
			return bad("use lowercase letters, digits, '-' and dots")
		}
	}
	return nil
}

// ValidCIDR checks an IPv4 CIDR in canonical form ("10.1.0.0/16").
func ValidCIDR(c string) error {
	p, err := netip.ParsePrefix(c)
	if err != nil || !p.Addr().Is4() {
		return &Error{Code: CodeInvalid, Field: "allow_cidrs", Message: fmt.Sprintf("bad CIDR %q: give an IPv4 prefix such as 10.1.0.0/16", c)}
	}
	if p.Masked() != p {
		return &Error{Code: CodeInvalid, Field: "allow_cidrs", Message: fmt.Sprintf("bad CIDR %q: host bits are set; did you mean %s?", c, p.Masked())}
	}
	return nil
}

// ValidateProject checks a whole project spec, naming the object and field
// of the first problem (e.g. "box.web.ttl").
func ValidateProject(s ProjectSpec) error {
	at := func(addr string, err error) error {
		var e *Error
		if errors.As(err, &e) {
			f := addr
			if e.Field != "" {
				f += "." + e.Field
			}
			return &Error{Code: e.Code, Field: f, Message: addr + ": " + e.Message}
		}
		return err
	}
	if s.Project != "" && !isLabel(s.Project) {
		return &Error{Code: CodeInvalid, Field: "project", Message: fmt.Sprintf("invalid project name %q: use lowercase letters, digits and '-'", s.Project)}
	}
	seen := map[string]bool{}
	dup := func(addr string) error {
		if seen[addr] {
			return &Error{Code: CodeInvalid, Field: addr, Message: addr + " is declared twice"}
		}
		seen[addr] = true
		return nil
	}
	for _, im := range s.Images {
		addr := "image." + im.Name
		if err := ValidName("image", im.Name); err != nil {
			return at(addr, err)
		}
		if err := imagefmt.ValidTag(im.Tag); err != nil {
			return at(addr, &Error{Code: CodeInvalid, Field: "tag", Message: err.Error()})
		}
		if err := dup(addr); err != nil {
			return err
		}
	}
	for _, p := range s.Policies {
		addr := "policy." + p.Name
		if err := ValidName("policy", p.Name); err != nil {
			return at(addr, err)
		}
		if p.Name == PolicyAllowAll || p.Name == PolicyDenyAll {
			return at(addr, &Error{Code: CodeInvalid, Field: "name", Message: "policy name " + p.Name + " is built in"})
		}
		if err := dup(addr); err != nil {
			return err
		}
		for _, d := range p.AllowDomains {
			if err := ValidDomainPattern(d); err != nil {
				return at(addr, err)
			}
		}
		for _, c := range p.AllowCIDRs {
			if err := ValidCIDR(c); err != nil {
				return at(addr, err)
			}
		}
	}
	for _, d := range s.Drives {
		addr := "drive." + d.Name
		if err := ValidName("drive", d.Name); err != nil {
			return at(addr, err)
		}
		if err := dup(addr); err != nil {
			return err
		}
	}
	for _, b := range s.Boxes {
		addr := "box." + b.Name
		if err := ValidName("box", b.Name); err != nil {
			return at(addr, err)
		}
		if err := dup(addr); err != nil {
			return err
		}
		if b.Type != "" {
			if err := ValidType(b.Type); err != nil {
				return at(addr, err)
			}
		}
		if _, err := ParseTTL(b.TTL); err != nil {
			return at(addr, err)
		}
		if _, err := ParseIdleStop(b.IdleStop); err != nil {
			return at(addr, err)
		}
		switch b.Policy {
		case "", PolicyAllowAll, PolicyDenyAll:
		default:
			if !seen["policy."+b.Policy] {
				return at(addr, &Error{Code: CodeInvalid, Field: "policy", Message: fmt.Sprintf("policy %q is not declared", b.Policy)})
			}
		}
		paths := map[string]bool{}
		for _, m := range b.Mounts {
			if err := ValidMount(m); err != nil {
				return at(addr, err)
			}
			if !seen["drive."+m.Drive] {
				return at(addr, &Error{Code: CodeInvalid, Field: "mounts", Message: fmt.Sprintf("drive %q is not declared", m.Drive)})
			}
			if paths[m.Path] {
				return at(addr, &Error{Code: CodeInvalid, Field: "mounts", Message: "two drives are mounted at " + m.Path})
			}
			paths[m.Path] = true
		}
		if err := ValidBuckets(b.Buckets, paths); err != nil {
			return at(addr, err)
		}
		for k := range b.Env {
			if err := ValidEnvName(k); err != nil {
				return at(addr, err)
			}
		}
		for k, v := range b.NodeLabels {
			if err := ValidNodeLabel(k, v); err != nil {
				return at(addr, err)
			}
		}
		for k, v := range b.Labels {
			if err := ValidNodeLabel(k, v); err != nil {
				return at(addr, err)
			}
		}
		for _, p := range b.Push {
			if p.Local == "" {
				return at(addr, &Error{Code: CodeInvalid, Field: "push", Message: "a push needs a local path"})
			}
			if !path.IsAbs(p.To) {
				return at(addr, &Error{Code: CodeInvalid, Field: "push", Message: fmt.Sprintf("push %q: 'to' must be an absolute path in the box", p.Local)})
			}
		}
	}
	return nil
}

// ValidNodeLabel checks a server label: a key of lower-case letters,
// digits and '-' (a DNS label) and a value of at most 63 characters with
// no space, '=' or ','.
func ValidNodeLabel(k, v string) error {
	if !isLabel(k) || len(v) > 63 || strings.ContainsAny(v, " \t\n=,") {
		return &Error{Code: CodeInvalid, Field: "labels", Message: fmt.Sprintf("label %s=%s: give lower-case keys of letters, digits and '-', and values of at most 63 characters without spaces, '=' or ','", k, v)}
	}
	return nil
}

// LabelsText is labels as KEY=VALUE,… in key order.
func LabelsText(labels map[string]string) string {
	ks := make([]string, 0, len(labels))
	for k := range labels {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for i, k := range ks {
		ks[i] = k + "=" + labels[k]
	}
	return strings.Join(ks, ",")
}

// PoolText is a server's own warm pool as TYPE=COUNT, sorted and spaced
// ("" for none).
func PoolText(pool map[string]int) string {
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(pool)) {
		parts = append(parts, fmt.Sprintf("%s=%d", t, pool[t]))
	}
	return strings.Join(parts, " ")
}

// ParseSince reads how far back to look: a duration ("90m", "1h", "2d")
// before now, or a time (RFC 3339).
func ParseSince(s string, now time.Time) (time.Time, error) {
	bad := &Error{Code: CodeInvalid, Field: "since", Message: fmt.Sprintf("since %q: give a duration (90m, 1h, 2d) or a time (2026-01-02T15:04:05Z)", s)}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return time.Time{}, bad
		}
		return now.Add(-time.Duration(n) * 24 * time.Hour), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, bad
	}
	return now.Add(-d), nil
}

// HasLabels says whether labels hold every one of want.
func HasLabels(labels, want map[string]string) bool {
	for k, v := range want {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// ValidGroup checks a group's name (without its '@'): NAME, or a sign-in
// provider's PROVIDER/NAME.
func ValidGroup(g string) error {
	if p, n, ok := strings.Cut(g, "/"); ok {
		if err := ValidName("sign-in provider", p); err != nil {
			return err
		}
		return ValidName("group", n)
	}
	return ValidName("group", g)
}

var secretName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// SecretName says whether n may name a secret: an environment variable's
// name (letters, digits and _, not starting with a digit), at most 128
// characters.
func SecretName(n string) bool { return secretName.MatchString(n) }
