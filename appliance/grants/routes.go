package grants

import (
	"net/http"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers the grants' API routes.
func (g *Grants) Routes(a route.API) {
	p := "/" + api.Version
	a.Handle("GET "+p+"/boxes/{name}/grants", g.listRoute)
	a.Handle("PUT "+p+"/boxes/{name}/grants/{user}", g.shareRoute)
	a.Handle("DELETE "+p+"/boxes/{name}/grants/{user}", g.unshareRoute)
}

// listRoute lists who a box is shared with.
func (g *Grants) listRoute(w http.ResponseWriter, r *http.Request) error {
	gs, err := g.List(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, gs)
}

// shareRoute shares a box with a user.
func (g *Grants) shareRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.GrantPut
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	rec := audit.From(r.Context())
	rec.Note("user", r.PathValue("user"))
	rec.Note("access", p.Access)
	gr, err := g.Share(r.Context(), r.PathValue("name"), r.PathValue("user"), p.Access)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, gr)
}

// unshareRoute stops sharing a box with a user.
func (g *Grants) unshareRoute(w http.ResponseWriter, r *http.Request) error {
	audit.From(r.Context()).Note("user", r.PathValue("user"))
	if err := g.Unshare(r.Context(), r.PathValue("name"), r.PathValue("user")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
