package api

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

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
	if !dnsLabel.MatchString(name) {
		return &Error{Code: CodeInvalid, Field: "name", Message: fmt.Sprintf(
			"invalid %s name %q: use 1-63 lowercase letters, digits and '-', starting and ending with a letter or digit", kind, name)}
	}
	return nil
}

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
