package jobs

import (
	"fmt"
	"net/http"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers the jobs' API routes.
func (jb *Jobs) Routes(a route.API) {
	p := "/" + api.Version
	a.Handle("GET "+p+"/boxes/{name}/jobs", jb.listJobsRoute)
	a.Handle("POST "+p+"/boxes/{name}/jobs", jb.startJobRoute)
	a.Handle("GET "+p+"/boxes/{name}/jobs/{id}", jb.getJobRoute)
	a.Handle("GET "+p+"/boxes/{name}/jobs/{id}/log", jb.jobLogRoute)
	a.Handle("POST "+p+"/boxes/{name}/jobs/{id}/signal", jb.signalJobRoute)
	a.Handle("POST "+p+"/boxes/{name}/jobs/{id}/input", jb.jobInputRoute)
}

func (jb *Jobs) startJobRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.ExecPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	audit.From(r.Context()).Note("argv", p.Cmd)
	j, err := jb.Start(r.PathValue("name"), p)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusCreated, j)
}

func (jb *Jobs) listJobsRoute(w http.ResponseWriter, r *http.Request) error {
	js, err := jb.List(r.PathValue("name"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, js)
}

func (jb *Jobs) getJobRoute(w http.ResponseWriter, r *http.Request) error {
	j, err := jb.Get(r.PathValue("name"), r.PathValue("id"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, j)
}

func (jb *Jobs) signalJobRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.SignalPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	audit.From(r.Context()).Note("signal", p.Signal)
	j, err := jb.Signal(r.Context(), r.PathValue("name"), r.PathValue("id"), p.Signal)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, j)
}

func (jb *Jobs) jobInputRoute(w http.ResponseWriter, r *http.Request) error {
	eof := r.URL.Query().Get("eof")
	if eof != "" && eof != "0" && eof != "1" {
		return &api.Error{Code: api.CodeInvalid, Field: "eof", Message: fmt.Sprintf("eof=%q: give 1 (end the job's input after this send) or 0", eof)}
	}
	in, err := jb.Input(r.Context(), r.PathValue("name"), r.PathValue("id"), r.Body, eof == "1")
	audit.From(r.Context()).Note("bytes", in.Bytes)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, in)
}

func (jb *Jobs) jobLogRoute(w http.ResponseWriter, r *http.Request) error {
	name, id := r.PathValue("name"), r.PathValue("id")
	if _, err := jb.Get(name, id); err != nil {
		return err
	}
	follow := r.URL.Query().Get("follow") == "1"
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	return jb.Log(r.Context(), name, id, follow, w, func() { rc.Flush() })
}
