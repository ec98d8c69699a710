package e2b

import (
	"net/http"
	"strconv"
)

// E2B's own host names (E2B_DOMAIN): with the server's host name as the
// domain, the control API is at api.DOMAIN, a sandbox's envd at
// 49983-ID.DOMAIN and its interpreter at 49999-ID.DOMAIN, names the front
// door serves already (a box's previews are PORT-BOX.DOMAIN; these two
// ports of every box are paddockd's, not the box's). A request to one is
// the request under Prefix or Prefix+EnvdPath, with the sandbox and port
// in E2B's headers taken from the name, whatever the request said.

// EnvdPort is envd's port in a sandbox's host name.
const EnvdPort = 49983

// APIHost is the control API's host name under domain.
func APIHost(domain string) string { return "api." + domain }

// ServedPort says whether port is one paddockd answers itself at every
// sandbox's host names (envd's, the interpreter's).
func ServedPort(port int) bool {
	return port == EnvdPort || strconv.Itoa(port) == JupyterPort
}

// AtSandboxHost is r, made to port of sandbox box's host name, as the
// routes under Prefix+EnvdPath take it.
func AtSandboxHost(r *http.Request, port int, box string) *http.Request {
	r2 := r.Clone(r.Context())
	r2.Header.Set("E2b-Sandbox-Id", box)
	r2.Header.Set("E2b-Sandbox-Port", strconv.Itoa(port))
	r2.URL.Path, r2.URL.RawPath = Prefix+EnvdPath+r.URL.Path, ""
	return r2
}

// AtAPIHost is r, made to the control API's host name, as the routes
// under Prefix take it.
func AtAPIHost(r *http.Request) *http.Request {
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = Prefix+r.URL.Path, ""
	return r2
}
