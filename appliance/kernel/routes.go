package kernel

import (
	"net/http"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers the interpreter's API routes.
func (k *Interpreter) Routes(a route.API) {
	p := "/" + api.Version
	a.Handle("POST "+p+"/boxes/{name}/run", k.runCode)
	a.Handle("GET "+p+"/boxes/{name}/contexts", k.contexts)
	a.Handle("POST "+p+"/boxes/{name}/contexts", k.createContext)
	a.Handle("POST "+p+"/boxes/{name}/contexts/{ctx}/restart", k.restartContext)
	a.Handle("DELETE "+p+"/boxes/{name}/contexts/{ctx}", k.removeContext)
}

func (k *Interpreter) runCode(w http.ResponseWriter, r *http.Request) error {
	var p api.RunPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	rec := audit.From(r.Context())
	rec.Note("lang", p.Lang)
	rec.Note("context", p.Context)
	rec.Note("code", p.Code)
	res, err := k.RunCode(r.Context(), r.PathValue("name"), p)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, res)
}

func (k *Interpreter) contexts(w http.ResponseWriter, r *http.Request) error {
	cs, err := k.Contexts(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, cs)
}

func (k *Interpreter) createContext(w http.ResponseWriter, r *http.Request) error {
	var p api.ContextPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	c, err := k.CreateContext(r.Context(), r.PathValue("name"), p)
	if err != nil {
		return err
	}
	audit.From(r.Context()).Note("context", c.Name)
	return route.WriteJSON(w, http.StatusCreated, c)
}

func (k *Interpreter) restartContext(w http.ResponseWriter, r *http.Request) error {
	c, err := k.RestartContext(r.Context(), r.PathValue("name"), r.PathValue("ctx"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, c)
}

func (k *Interpreter) removeContext(w http.ResponseWriter, r *http.Request) error {
	if err := k.RemoveContext(r.Context(), r.PathValue("name"), r.PathValue("ctx")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
