// Package clients serves the paddock CLI of this server's own version to
// users' computers, so that client and server always match: the binaries
// (paddock-OS-ARCH, .exe for Windows) and their SHA256SUMS from a directory
// the installer fills (cli_dir), a page that lists them, and one-line
// installers for macOS and Linux (install.sh) and Windows (install.ps1)
// that check the checksum before installing anything.
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
	t.AddFunc("GET /cli/{file}", route.Public, h.file)
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

func (h *Handler) file(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	if name != "SHA256SUMS" && !binary.MatchString(name) {
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

// Sums reads the checksums of the binaries in dir, by name.
func Sums(dir string) (map[string]string, error) {
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 2 && binary.MatchString(strings.TrimPrefix(fs[1], "*")) {
			if _, err := os.Stat(filepath.Join(dir, strings.TrimPrefix(fs[1], "*"))); err == nil {
				out[strings.TrimPrefix(fs[1], "*")] = fs[0]
			}
		}
	}
	return out, sc.Err()
}

var page = template.Must(template.New("cli").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Paddock CLI</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#222}
h1{font-size:1.4rem}pre,code{background:#f3f3f3;padding:.1rem .3rem}
pre{padding:.5rem;white-space:pre-wrap;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3rem;border-bottom:1px solid #ddd;overflow-wrap:anywhere}
</style></head>
<body><h1>The paddock command line</h1>
<p>macOS and Linux:</p><pre>curl -fsSL {{.URL}}/cli/install.sh | sh</pre>
<p>Windows (PowerShell):</p><pre>irm {{.URL}}/cli/install.ps1 | iex</pre>
<p>Then: <code>paddock login {{.URL}}</code></p>
{{if .Files}}<table><tr><th>File</th><th>SHA-256</th></tr>
{{range .Files}}<tr><td><a href="{{.Name}}">{{.Name}}</a></td><td><code>{{.Sum}}</code></td></tr>
{{end}}</table>{{else}}<p>This server has no client binaries yet.</p>{{end}}
</body></html>`))

func (h *Handler) index(w http.ResponseWriter, r *http.Request) {
	sums, _ := Sums(h.Dir)
	type file struct{ Name, Sum string }
	var files []file
	for n, s := range sums {
		files = append(files, file{n, s})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	page.Execute(w, struct {
		URL   string
		Files []file
	}{h.base(r), files})
}
