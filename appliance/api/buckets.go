package api

import (
	"fmt"
	"net/url"
	"path"
	"strings"
)

// systemPaths are the folders of a box a bucket is never mounted on, nor
// under: its system's own.
var systemPaths = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin", "/sys", "/usr", "/var"}

// BucketOf splits s3://BUCKET[/PREFIX] into the bucket and the prefix
// (no slash at either end), checked: a bucket name as S3 takes it (3 to
// 63 lowercase letters, digits, '.' and '-', starting and ending with a
// letter or digit), a prefix of clean path segments.
func BucketOf(u string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(u, "s3://")
	if !ok {
		return "", "", fmt.Errorf("bucket %q: write s3://BUCKET or s3://BUCKET/PREFIX", u)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	prefix = strings.TrimSuffix(prefix, "/")
	if len(bucket) < 3 || len(bucket) > 63 || strings.Trim(bucket, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" ||
		strings.ContainsAny(bucket[:1]+bucket[len(bucket)-1:], ".-") {
		return "", "", fmt.Errorf("bucket %q: a bucket's name is 3 to 63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit", bucket)
	}
	if prefix != "" {
		for _, seg := range strings.Split(prefix, "/") {
			if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, "\x00\n\r\\") {
				return "", "", fmt.Errorf("bucket %q: its prefix %q must be clean path segments (no empty, '.' or '..' ones)", u, prefix)
			}
		}
	}
	return bucket, prefix, nil
}

// ValidBucketMount checks a bucket mount: its URL (BucketOf), where the
// box sees it (an absolute clean path, not / nor a system folder), its
// secret's name, and its endpoint and region if given.
func ValidBucketMount(m BucketMount) error {
	bad := func(format string, a ...any) error {
		return &Error{Code: CodeInvalid, Field: "buckets", Message: fmt.Sprintf(format, a...)}
	}
	if _, _, err := BucketOf(m.URL); err != nil {
		return bad("%v", err)
	}
	if m.To == "" {
		return bad("bucket %s: say where the box sees it (to = \"/data\")", m.URL)
	}
	if !path.IsAbs(m.To) || path.Clean(m.To) != m.To || m.To == "/" || strings.ContainsAny(m.To, ":,\x00\n") {
		return bad("bucket %s: %q is not where a bucket can be mounted: give a clean absolute path such as /data", m.URL, m.To)
	}
	for _, sys := range systemPaths {
		if m.To == sys || strings.HasPrefix(m.To, sys+"/") {
			return bad("bucket %s: %s is the box's system's own (%s): mount it elsewhere, such as /data", m.URL, m.To, sys)
		}
	}
	if m.Secret == "" {
		return bad("bucket %s: name the secret that holds its keys (secret = \"NAME\", the value ACCESS_KEY_ID:SECRET_ACCESS_KEY)", m.URL)
	}
	if !SecretName(m.Secret) {
		return bad("bucket %s: %q cannot name a secret (letters, digits and '_', not starting with a digit)", m.URL, m.Secret)
	}
	if m.Endpoint != "" {
		e, err := url.Parse(m.Endpoint)
		if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || e.User != nil || (e.Path != "" && e.Path != "/") || e.RawQuery != "" || e.Fragment != "" {
			return bad("bucket %s: endpoint %q: give the store's address as http(s)://HOST[:PORT]", m.URL, m.Endpoint)
		}
	}
	if len(m.Region) > 32 || strings.Trim(m.Region, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return bad("bucket %s: region %q: lowercase letters, digits and '-'", m.URL, m.Region)
	}
	return nil
}

// ValidBuckets checks a box's bucket mounts (ValidBucketMount), none
// where another mount is (paths: the drives' mount paths).
func ValidBuckets(bs []BucketMount, paths map[string]bool) error {
	taken := map[string]bool{}
	for p := range paths {
		taken[p] = true
	}
	for _, m := range bs {
		if err := ValidBucketMount(m); err != nil {
			return err
		}
		for p := range taken {
			if p == m.To || strings.HasPrefix(p, m.To+"/") || strings.HasPrefix(m.To, p+"/") {
				return &Error{Code: CodeInvalid, Field: "buckets", Message: fmt.Sprintf("bucket %s: %s is where another mount is (%s)", m.URL, m.To, p)}
			}
		}
		taken[m.To] = true
	}
	return nil
}

// ParseBucketMount reads the bucket form of 'new --mount':
// s3://BUCKET[/PREFIX],to=PATH,secret=NAME[,ro][,endpoint=URL][,region=R].
func ParseBucketMount(s string) (BucketMount, error) {
	parts := strings.Split(s, ",")
	m := BucketMount{URL: parts[0]}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "to":
			m.To = v
		case "secret":
			m.Secret = v
		case "endpoint":
			m.Endpoint = v
		case "region":
			m.Region = v
		case "ro", "read_only":
			m.ReadOnly = true
		default:
			return m, &Error{Code: CodeInvalid, Field: "mounts", Message: fmt.Sprintf("bucket mount %q: unknown %q: use s3://BUCKET[/PREFIX],to=PATH,secret=NAME[,ro][,endpoint=URL][,region=R]", s, p)}
		}
	}
	return m, ValidBucketMount(m)
}
