package version

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"
)

// The SDKs' versions follow the server's release, and so do the package
// names their READMEs tell users to install.
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
	// paddock-dev-sdk-X.tgz, paddock_sdk-X-py3-none-any.whl
	names := regexp.MustCompile(`paddock-dev-sdk-([0-9][^/\s]*)\.tgz|paddock_sdk-([0-9][^-/\s]*)-py3`)
	named := 0
	for _, p := range []string{"../../sdk/README.md", "../../sdk/python/README.md", "../../sdk/typescript/README.md", "../../README.md"} {
		for _, m := range names.FindAllSubmatch(read(p), -1) {
			named++
			if v := string(m[1]) + string(m[2]); v != Release {
				t.Errorf("%s names %s, the release is %s", p, m[0], Release)
			}
		}
	}
	if named < 4 {
		t.Errorf("the READMEs name the SDK packages %d times: is the pattern right?", named)
	}
}
