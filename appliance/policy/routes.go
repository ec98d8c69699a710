package policy

import (
	"net/http"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers the policies' API routes.
func (ps *Policies) Routes(a route.API) {
	p := "/" + api.Version
	a.Handle("PUT "+p+"/boxes/{name}/policy", ps.setRoute)
	a.Handle("GET "+p+"/boxes/{name}/policy", ps.reportRoute)
	a.Handle("GET "+p+"/policies", ps.listRoute)
	a.Handle("POST "+p+"/policies", ps.createRoute)
	a.Handle("PUT "+p+"/policies/{name}", ps.updateRoute)
	a.Handle("DELETE "+p+"/policies/{name}", ps.removeRoute)
}

func (ps *Policies) setRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.PolicyPut
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	b, err := ps.Set(r.Context(), r.PathValue("name"), p.Policy)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, b)
}

func (ps *Policies) reportRoute(w http.ResponseWriter, r *http.Request) error {
	rep, err := ps.Report(r.PathValue("name"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, rep)
}

func (ps *Policies) listRoute(w http.ResponseWriter, r *http.Request) error {
	out, err := ps.List(r.Context())
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, out)
}

func (ps *Policies) createRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.PolicyPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	audit.From(r.Context()).Object("policies", p.Name)
	out, err := ps.Create(r.Context(), p)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusCreated, out)
}

// updateRoute replaces a policy's lists; its name is the path's.
func (ps *Policies) updateRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.PolicySpec
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	if p.Name == "" {
		p.Name = r.PathValue("name")
	}
	if p.Name != r.PathValue("name") {
		return &api.Error{Code: api.CodeInvalid, Field: "name", Message: "a policy cannot be renamed; make a new one"}
	}
	out, err := ps.Update(r.Context(), p)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, out)
}

func (ps *Policies) removeRoute(w http.ResponseWriter, r *http.Request) error {
	if err := ps.Remove(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
