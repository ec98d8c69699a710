package project

import (
	"net/http"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers the projects' API routes.
func (pr *Projects) Routes(a route.API) {
	p := "/" + api.Version
	a.Handle("POST "+p+"/plan", pr.planRoute)
	a.Handle("POST "+p+"/apply", pr.applyRoute)
	a.Handle("GET "+p+"/projects", pr.projectsRoute)
	a.Handle("POST "+p+"/boxes/{name}/setup", pr.setupDoneRoute)
}

func (pr *Projects) planRoute(w http.ResponseWriter, r *http.Request) error {
	var req api.PlanRequest
	if err := route.Decode(r, &req); err != nil {
		return err
	}
	p, err := pr.MakePlan(r.Context(), req)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, p)
}

func (pr *Projects) applyRoute(w http.ResponseWriter, r *http.Request) error {
	var req api.ApplyRequest
	if err := route.Decode(r, &req); err != nil {
		return err
	}
	audit.From(r.Context()).Note("project", req.Spec.Project)
	res, err := pr.Apply(r.Context(), req)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, res)
}

func (pr *Projects) setupDoneRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.SetupPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	if err := pr.SetupDone(r.PathValue("name"), p); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (pr *Projects) projectsRoute(w http.ResponseWriter, r *http.Request) error {
	ps, err := pr.List(r.Context())
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, ps)
}
