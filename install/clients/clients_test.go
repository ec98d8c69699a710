package clients

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/route"
)

// /sdk/ serves the SDK packages of the directory and their checksums,
// with a page that says how to install each from this server; nothing
// else of the directory (a binary is /cli/'s, other files no one's), and
// /cli/ none of the packages.
func TestSDKsAreServed(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"paddock-dev-sdk-0.1.0.tgz":            "a tarball",
		"paddock_sdk-0.1.0-py3-none-any.whl":   "a wheel",
		"paddock-linux-amd64":                  "a binary",
		"paddock.db":                           "not for anyone",
		"paddock-dev-sdk-0.1.0.tgz.unverified": "not listed",
	}
	var sums strings.Builder
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256([]byte(body))
		sums.WriteString(hex.EncodeToString(h[:]) + "  " + name + "\n")
	}
	os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(sums.String()), 0o644)
	tbl := route.New()
	(&Handler{Dir: dir, URL: "https://paddock.test"}).Routes(tbl)
	ts := httptest.NewServer(tbl)
	defer ts.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, page := get("/sdk/")
	tgz := sha256.Sum256([]byte("a tarball"))
	for _, want := range []string{"npm install https://paddock.test/sdk/paddock-dev-sdk-0.1.0.tgz", "pip install https://paddock.test/sdk/paddock_sdk-0.1.0-py3-none-any.whl",
		"it imports as <code>paddock</code>", hex.EncodeToString(tgz[:])} {
		if code != 200 || !strings.Contains(page, want) {
			t.Errorf("/sdk/: %d, without %q:\n%s", code, want, page)
		}
	}
	if strings.Contains(page, "paddock-linux-amd64") || strings.Contains(page, "unverified") {
		t.Errorf("/sdk/ lists what is not an SDK package:\n%s", page)
	}
	for path, want := range map[string]int{
		"/sdk/paddock-dev-sdk-0.1.0.tgz":            200,
		"/sdk/paddock_sdk-0.1.0-py3-none-any.whl":   200,
		"/sdk/SHA256SUMS":                           200,
		"/sdk/paddock-linux-amd64":                  404,
		"/sdk/paddock.db":                           404,
		"/sdk/..%2Fpaddock.db":                      404,
		"/sdk/paddock-dev-sdk-0.1.0.tgz.unverified": 404,
		"/cli/paddock-dev-sdk-0.1.0.tgz":            404,
		"/cli/paddock-linux-amd64":                  200,
	} {
		code, body := get(path)
		if code != want {
			t.Errorf("%s: %d, want %d", path, code, want)
		}
		if name := strings.TrimPrefix(strings.TrimPrefix(path, "/sdk/"), "/cli/"); code == 200 && name != "SHA256SUMS" && body != files[name] {
			t.Errorf("%s: %q, want %q", path, body, files[name])
		}
	}
	// A server without packages says so, and where they come from.
	empty := route.New()
	(&Handler{Dir: t.TempDir()}).Routes(empty)
	ts2 := httptest.NewServer(empty)
	defer ts2.Close()
	resp, err := http.Get(ts2.URL + "/sdk/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "This server has no SDK packages") {
		t.Errorf("/sdk/ of a server without packages:\n%s", b)
	}
}
