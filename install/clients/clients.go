// Package clients serves the paddock CLI of this server's own version to
// users' computers, so that client and server always match: the binaries
// (paddock-OS-ARCH, .exe for Windows) and their SHA256SUMS from a directory
// the installer fills (cli_dir), a page that lists them, and one-line
// installers for macOS and Linux (install.sh) and Windows (install.ps1)
// that check the checksum before installing anything. The SDKs of the
// same release are served from the same directory at /sdk/: the
// TypeScript package's tarball (paddock-dev-sdk-VERSION.tgz, for npm
// install URL) and the Python wheel (paddock_sdk-VERSION-py3-none-any.whl,
// for pip install URL), with a page that says how and their checksums.
package clients

import (
	"bufio"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/paddock-dev/paddock/appliance/route"
)

var (
	//go:embed install.sh
	installSh string
	//go:embed install.ps1
	installPs1 string
)

// binary is the name of a client binary this server may serve.
var binary = regexp.MustCompile(`^paddock-(linux|darwin|windows)-(amd64|arm64)(\.exe)?$`)

// sdkFile is the name of an SDK package this server may serve.
var sdkFile = regexp.MustCompile(`^(paddock-dev-sdk-[0-9]+\.[0-9]+\.[0-9]+\.tgz|paddock_sdk-[0-9]+\.[0-9]+\.[0-9]+-py3-none-any\.whl)$`)

// Handler serves /cli/.
type Handler struct {
	// Dir holds the binaries and SHA256SUMS.
	Dir string
	// URL is the server's public base URL; "" takes the request's host
	// (local mode).
	URL string
}

// Routes registers /cli/ (all public: a person installs the CLI before
// having a token).
func (h *Handler) Routes(t *route.Table) {
	t.AddFunc("GET /cli/{$}", route.Public, h.index)
	t.AddFunc("GET /cli/install.sh", route.Public, h.script(installSh, "text/x-shellscript"))
	t.AddFunc("GET /cli/install.ps1", route.Public, h.script(installPs1, "text/plain"))
	t.AddFunc("GET /cli/{file}", route.Public, h.file(binary))
	t.AddFunc("GET /sdk/{$}", route.Public, h.sdkIndex)
	t.AddFunc("GET /sdk/{file}", route.Public, h.file(sdkFile))
}

func (h *Handler) base(r *http.Request) string {
	if h.URL != "" {
		return strings.TrimSuffix(h.URL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// plainURL is what a URL may be to go into a script: nothing a shell or
// PowerShell would read as more than a word.
var plainURL = regexp.MustCompile(`^https?://[A-Za-z0-9.\-]+(:[0-9]+)?$|^https?://\[[0-9a-fA-F:]+\](:[0-9]+)?$`)

func (h *Handler) script(body, ctype string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		base := h.base(r)
		if !plainURL.MatchString(base) {
			http.Error(w, "this server's address cannot go into an installer: "+base, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", ctype+"; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(w, strings.ReplaceAll(body, "@URL@", base))
	}
}

// file serves SHA256SUMS and the files whose names match: nothing else of
// the directory, whatever the name asked for.
func (h *Handler) file(names *regexp.Regexp) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("file")
		if name != "SHA256SUMS" && !names.MatchString(name) {
			http.NotFound(w, r)
			return
		}
		p := filepath.Join(h.Dir, name)
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			http.Error(w, "this server has no "+name, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		http.ServeFile(w, r, p)
	}
}

// Sums reads the checksums of the binaries in dir, by name.
func Sums(dir string) (map[string]string, error) { return sums(dir, binary) }

// SDKSums reads the checksums of the SDK packages in dir, by name.
func SDKSums(dir string) (map[string]string, error) { return sums(dir, sdkFile) }

// sums reads the checksums of the files of dir whose names match, and
// that are there.
func sums(dir string, names *regexp.Regexp) (map[string]string, error) {
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 2 && names.MatchString(strings.TrimPrefix(fs[1], "*")) {
			if _, err := os.Stat(filepath.Join(dir, strings.TrimPrefix(fs[1], "*"))); err == nil {
				out[strings.TrimPrefix(fs[1], "*")] = fs[0]
			}
		}
	}
	return out, sc.Err()
}

// head is the start of the /cli/ and /sdk/ pages, up to their title.
const head = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#222}
h1{font-size:1.4rem}pre,code{background:#f3f3f3;padding:.1rem .3rem}
pre{padding:.5rem;white-space:pre-wrap;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3rem;border-bottom:1px solid #ddd;overflow-wrap:anywhere}
</style>
`

var page = template.Must(template.New("cli").Parse(head + `<title>Paddock CLI</title></head>
<body><h1>The paddock command line</h1>
<p>macOS and Linux:</p><pre>curl -fsSL {{.URL}}/cli/install.sh | sh</pre>
<p>Windows (PowerShell):</p><pre>irm {{.URL}}/cli/install.ps1 | iex</pre>
<p>Then: <code>paddock login {{.URL}}</code></p>
{{if .Files}}<table><tr><th>File</th><th>SHA-256</th></tr>
{{range .Files}}<tr><td><a href="{{.Name}}">{{.Name}}</a></td><td><code>{{.Sum}}</code></td></tr>
{{end}}</table>{{else}}<p>This server has no client binaries yet.</p>{{end}}
</body></html>`))

type file struct{ Name, Sum string }

// listed is the files of a sums map, by name.
func listed(sums map[string]string) []file {
	var files []file
	for n, s := range sums {
		files = append(files, file{n, s})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files
}

func (h *Handler) index(w http.ResponseWriter, r *http.Request) {
	sums, _ := Sums(h.Dir)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	page.Execute(w, struct {
		URL   string
		Files []file
	}{h.base(r), listed(sums)})
}

var sdkPage = template.Must(template.New("sdk").Parse(head + `<title>Paddock SDKs</title></head>
<body><h1>The Paddock SDKs</h1>
<p>Of this server's own release. In your project:</p>
{{range .Files}}{{if .TS}}<p>TypeScript (Node.js 20 or newer): <code>import { Client } from "@paddock-dev/sdk"</code></p><pre>npm install {{$.URL}}/sdk/{{.Name}}</pre>{{end}}{{end}}
{{range .Files}}{{if .Py}}<p>Python 3.9 or newer (it imports as <code>paddock</code>): <code>from paddock import Client</code></p><pre>pip install {{$.URL}}/sdk/{{.Name}}</pre>{{end}}{{end}}
{{if .Files}}<table><tr><th>File</th><th>SHA-256 (also in <a href="SHA256SUMS">SHA256SUMS</a>)</th></tr>
{{range .Files}}<tr><td><a href="{{.Name}}">{{.Name}}</a></td><td><code>{{.Sum}}</code></td></tr>
{{end}}</table>{{else}}<p>This server has no SDK packages: its installer puts those of its release here. Each SDK's README says how to build it from the repository.</p>{{end}}
</body></html>`))

func (h *Handler) sdkIndex(w http.ResponseWriter, r *http.Request) {
	sums, _ := SDKSums(h.Dir)
	type pkg struct {
		file
		TS, Py bool
	}
	var files []pkg
	for _, f := range listed(sums) {
		files = append(files, pkg{f, strings.HasSuffix(f.Name, ".tgz"), strings.HasSuffix(f.Name, ".whl")})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	sdkPage.Execute(w, struct {
		URL   string
		Files []pkg
	}{h.base(r), files})
}
