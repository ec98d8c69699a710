package version

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"
)

// The SDKs' versions follow the server's release.
func TestSDKVersionsFollowTheRelease(t *testing.T) {
	read := func(p string) []byte {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	m := regexp.MustCompile(`(?m)^__version__ = "([^"]+)"$`).FindSubmatch(read("../../sdk/python/paddock/__init__.py"))
	if m == nil || string(m[1]) != Release {
		t.Errorf("sdk/python/paddock/__init__.py: __version__ is %q, the release is %s", m, Release)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	for _, p := range []string{"../../sdk/typescript/package.json", "../../sdk/typescript/package-lock.json"} {
		if err := json.Unmarshal(read(p), &pkg); err != nil {
			t.Fatal(p, err)
		}
		if pkg.Version != Release {
			t.Errorf("%s: version %q, the release is %s", p, pkg.Version, Release)
		}
	}
}
