package files

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers the files' API routes.
func (f *Files) Routes(a route.API) {
	p := "/" + api.Version
	a.Handle("PUT "+p+"/boxes/{name}/files", f.pushRoute)
	a.Handle("GET "+p+"/boxes/{name}/files", f.pullRoute)
	a.Handle("GET "+p+"/boxes/{name}/dir", f.listDirRoute)
	a.Handle("GET "+p+"/boxes/{name}/download", f.download)
}

func (f *Files) pushRoute(w http.ResponseWriter, r *http.Request) error {
	rec := audit.From(r.Context())
	rec.Note("path", r.URL.Query().Get("path"))
	body := &route.Counted{R: r.Body}
	defer func() { rec.Note("bytes", body.N) }()
	if err := f.Push(r.Context(), r.PathValue("name"), r.URL.Query().Get("path"), body); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (f *Files) pullRoute(w http.ResponseWriter, r *http.Request) error {
	audit.From(r.Context()).Note("path", r.URL.Query().Get("path"))
	rc, err := f.Pull(r.Context(), r.PathValue("name"), r.URL.Query().Get("path"))
	return route.SendTar(w, r, rc, err, f.log, "pull", r.PathValue("name"))
}

func (f *Files) listDirRoute(w http.ResponseWriter, r *http.Request) error {
	d, err := f.ListDir(r.Context(), r.PathValue("name"), r.URL.Query().Get("path"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, d)
}

// download sends one regular file of a box as itself, for a browser's
// download (a directory comes as a tar from GET .../files).
func (f *Files) download(w http.ResponseWriter, r *http.Request) error {
	name, p := r.PathValue("name"), r.URL.Query().Get("path")
	rc, err := f.Pull(r.Context(), name, p)
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil {
		return fmt.Errorf("reading %s from box %q: %w", p, name, err)
	}
	if h.Typeflag != tar.TypeReg {
		return &api.Error{Code: api.CodeInvalid, Field: "path", Message: fmt.Sprintf("%s in box %q is not a regular file; download a folder as a tar", p, name)}
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(h.Size, 10))
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, tr); err != nil && !errors.Is(err, context.Canceled) {
		f.log.Warn("download interrupted", "box", name, "path", p, "err", err)
	}
	return nil
}
