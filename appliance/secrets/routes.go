package secrets

import (
	"io"
	"net/http"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers the secrets' API routes.
func (sc *Secrets) Routes(a route.API) {
	p := "/" + api.Version
	a.Handle("GET "+p+"/secrets", sc.secretsRoute)
	a.Handle("PUT "+p+"/secrets/{name}", sc.setSecretRoute)
	a.Handle("PUT "+p+"/secrets/{name}/broker", sc.setSecretBrokerRoute)
	a.Handle("DELETE "+p+"/secrets/{name}", sc.removeSecretRoute)
}

func (sc *Secrets) secretsRoute(w http.ResponseWriter, r *http.Request) error {
	out, err := sc.List(r.Context())
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, out)
}

// setSecret takes the value as the raw body; ?shared=true shares an
// owner's secret with every user's boxes.
func (sc *Secrets) setSecretRoute(w http.ResponseWriter, r *http.Request) error {
	v, err := io.ReadAll(io.LimitReader(r.Body, 64<<10+1))
	if err != nil {
		return err
	}
	q := r.URL.Query()
	var brk *api.SecretBroker
	if q.Has("broker") || q.Has("header") || q.Has("limit") {
		brk = &api.SecretBroker{Hosts: q["broker"], Header: q.Get("header"), Limit: q.Get("limit")}
	}
	if err := sc.Set(r.Context(), r.PathValue("name"), v, q.Get("shared") == "true", brk); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// setSecretBroker changes how a secret is brokered, keeping its value.
func (sc *Secrets) setSecretBrokerRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.SecretBroker
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	if err := sc.SetBroker(r.Context(), r.PathValue("name"), &p); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (sc *Secrets) removeSecretRoute(w http.ResponseWriter, r *http.Request) error {
	if err := sc.Remove(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
