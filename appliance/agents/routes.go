package agents

import (
	"net/http"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers the agents' API routes.
func (ag *Agents) Routes(a route.API) {
	p := "/" + api.Version
	a.Handle("POST "+p+"/boxes/{name}/prompt", ag.promptRoute)
	a.Handle("GET "+p+"/agents", ag.agentsRoute)
	a.Handle("GET "+p+"/boxes/{name}/agents", ag.boxAgentsRoute)
}

func (ag *Agents) promptRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.PromptPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	rec := audit.From(r.Context())
	rec.Note("agent", p.Agent)
	rec.Note("task", p.Task)
	j, err := ag.Prompt(r.Context(), r.PathValue("name"), p)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusCreated, j)
}

func (ag *Agents) agentsRoute(w http.ResponseWriter, r *http.Request) error {
	return route.WriteJSON(w, http.StatusOK, ag.List())
}

func (ag *Agents) boxAgentsRoute(w http.ResponseWriter, r *http.Request) error {
	as, err := ag.InBox(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, as)
}
