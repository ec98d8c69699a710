package drives

import (
	"net/http"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers the drives' API routes.
func (dv *Drives) Routes(a route.API) {
	p := "/" + api.Version
	a.Handle("GET "+p+"/drives", dv.listRoute)
	a.Handle("POST "+p+"/drives", dv.createRoute)
	a.Handle("DELETE "+p+"/drives/{name}", dv.removeRoute)
	a.Handle("GET "+p+"/drives/{name}/archive", dv.backupRoute)
	a.Handle("PUT "+p+"/drives/{name}/archive", dv.restoreRoute)
}

func (dv *Drives) listRoute(w http.ResponseWriter, r *http.Request) error {
	ds, err := dv.core.ListDrives(r.Context())
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, ds)
}

func (dv *Drives) createRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.DrivePost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	audit.From(r.Context()).Object("drives", p.Name)
	d, err := dv.Create(r.Context(), p)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusCreated, d)
}

func (dv *Drives) removeRoute(w http.ResponseWriter, r *http.Request) error {
	if err := dv.Remove(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (dv *Drives) backupRoute(w http.ResponseWriter, r *http.Request) error {
	rc, err := dv.Backup(r.Context(), r.PathValue("name"))
	return route.SendTar(w, r, rc, err, dv.log, "drive backup", r.PathValue("name"))
}

func (dv *Drives) restoreRoute(w http.ResponseWriter, r *http.Request) error {
	if err := dv.Restore(r.Context(), r.PathValue("name"), r.Body); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
