// Package server is paddockd's HTTP API: JSON over a unix socket and, in
// local mode, loopback TCP. Handlers return errors; one function (writeError)
// turns them into a status code and the JSON body {error, message, field}.
// Every route needs a bearer token, checked against the hashes in the store.
//
// Attached exec is an HTTP upgrade (Upgrade: paddock-exec/1) carrying the
// frames of package stream; files move as tar bodies; job logs stream as
// chunked text.
package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/desktop"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Server serves the API.
type Server struct {
	Svc   *service.Service
	Store *store.Store
	Log   *slog.Logger
	// Name is reported by whoami (the host name, or "local").
	Name string
	// SSHPort is reported by whoami.
	SSHPort int
	// Desktop serves box desktops to browsers (nil: none).
	Desktop *desktop.Proxy
}

type handler func(w http.ResponseWriter, r *http.Request) error

// Handler returns the API's routes behind token authentication.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	route := func(pattern string, h handler) {
		mux.Handle(pattern, s.authed(h))
	}
	p := "/" + api.Version
	route("GET "+p+"/whoami", s.whoami)
	route("GET "+p+"/boxes", s.listBoxes)
	route("POST "+p+"/boxes", s.createBox)
	route("GET "+p+"/boxes/{name}", s.getBox)
	route("DELETE "+p+"/boxes/{name}", s.removeBox)
	route("POST "+p+"/boxes/{name}/stop", s.stopBox)
	route("POST "+p+"/boxes/{name}/start", s.startBox)
	route("GET "+p+"/boxes/{name}/snapshots", s.listSnapshots)
	route("POST "+p+"/boxes/{name}/snapshots", s.snapshot)
	route("POST "+p+"/boxes/{name}/restore", s.restore)
	route("POST "+p+"/boxes/{name}/fork", s.fork)
	route("POST "+p+"/boxes/{name}/exec", s.exec)
	route("GET "+p+"/boxes/{name}/jobs", s.listJobs)
	route("POST "+p+"/boxes/{name}/jobs", s.startJob)
	route("GET "+p+"/boxes/{name}/jobs/{id}", s.getJob)
	route("GET "+p+"/boxes/{name}/jobs/{id}/log", s.jobLog)
	route("PUT "+p+"/boxes/{name}/files", s.push)
	route("GET "+p+"/boxes/{name}/files", s.pull)
	route("GET "+p+"/drives", s.listDrives)
	route("POST "+p+"/drives", s.createDrive)
	route("DELETE "+p+"/drives/{name}", s.removeDrive)
	route("POST "+p+"/reconcile", s.reconcile)
	route("POST "+p+"/plan", s.plan)
	route("POST "+p+"/apply", s.apply)
	route("POST "+p+"/boxes/{name}/setup", s.setupDone)
	route("PUT "+p+"/boxes/{name}/policy", s.setPolicy)
	route("GET "+p+"/boxes/{name}/screenshot", s.screenshot)
	route("POST "+p+"/boxes/{name}/prompt", s.prompt)
	route("GET "+p+"/agents", s.agents)
	route("GET "+p+"/secrets", s.secrets)
	route("PUT "+p+"/secrets/{name}", s.setSecret)
	route("DELETE "+p+"/secrets/{name}", s.removeSecret)
	route("GET "+p+"/tokens", s.tokens)
	route("POST "+p+"/tokens", s.createToken)
	route("DELETE "+p+"/tokens/{name}", s.revokeToken)
	route("GET "+p+"/keys", s.keys)
	route("POST "+p+"/keys", s.addKey)
	route("DELETE "+p+"/keys/{name}", s.removeKey)
	route("GET "+p+"/boxes/{name}/policy", s.policyReport)
	route("GET "+p+"/policies", s.listPolicies)
	route("POST "+p+"/policies", s.createPolicy)
	route("DELETE "+p+"/policies/{name}", s.removePolicy)
	if s.Desktop != nil {
		route("POST "+p+"/boxes/{name}/desktop", s.desktopTicket)
		s.Desktop.Routes(mux)
	}
	mux.Handle("/", s.authed(func(w http.ResponseWriter, r *http.Request) error {
		return &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)}
	}))
	return mux
}

type ctxKey struct{}

func (s *Server) authed(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, err := auth.FromHeader(r.Header.Get("Authorization"))
		if err == nil {
			if _, lerr := s.Store.TokenName(auth.Hash(tok)); lerr != nil {
				err = errors.New("invalid token: log in again with 'paddock login'")
				if !errors.Is(lerr, store.ErrNotFound) {
					err = lerr
				}
			}
		}
		if err != nil {
			s.writeError(w, r, &api.Error{Code: api.CodeUnauthorized, Message: err.Error()})
			return
		}
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// status maps an error to its HTTP status and body.
func status(err error) (int, api.Error) {
	var ae *api.Error
	switch {
	case errors.As(err, &ae):
		body := *ae
		if body.Message == "" {
			body.Message = err.Error()
		}
		switch ae.Code {
		case api.CodeNotFound:
			return http.StatusNotFound, body
		case api.CodeInvalid:
			return http.StatusBadRequest, body
		case api.CodeConflict:
			return http.StatusConflict, body
		case api.CodeUnauthorized:
			return http.StatusUnauthorized, body
		}
		return http.StatusInternalServerError, body
	case errors.Is(err, store.ErrNotFound), errors.Is(err, driver.ErrNotFound):
		return http.StatusNotFound, api.Error{Code: api.CodeNotFound, Message: err.Error()}
	case errors.Is(err, store.ErrConflict):
		return http.StatusConflict, api.Error{Code: api.CodeConflict, Message: err.Error()}
	}
	return http.StatusInternalServerError, api.Error{Code: api.CodeInternal, Message: err.Error()}
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, body := status(err)
	if code >= 500 {
		s.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, code, body)
}

func writeJSON(w http.ResponseWriter, code int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	return json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body strictly: unknown fields and wrong types are a
// 400 naming the field.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil || err == io.EOF {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &api.Error{Code: api.CodeInvalid, Field: te.Field, Message: fmt.Sprintf("field %q: expected %s", te.Field, te.Type)}
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		f = strings.Trim(f, `"`)
		return &api.Error{Code: api.CodeInvalid, Field: f, Message: fmt.Sprintf("unknown field %q", f)}
	}
	return &api.Error{Code: api.CodeInvalid, Message: "bad JSON body: " + err.Error()}
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) error {
	tok, _ := auth.FromHeader(r.Header.Get("Authorization"))
	name, err := s.Store.TokenName(auth.Hash(tok))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.Whoami{Token: name, Server: s.Name, SSHPort: s.SSHPort})
}

func (s *Server) listBoxes(w http.ResponseWriter, r *http.Request) error {
	bs, err := s.Svc.ListBoxes()
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, bs)
}

func (s *Server) createBox(w http.ResponseWriter, r *http.Request) error {
	var p api.BoxPost
	if err := decode(r, &p); err != nil {
		return err
	}
	b, err := s.Svc.CreateBox(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, b)
}

func (s *Server) getBox(w http.ResponseWriter, r *http.Request) error {
	b, err := s.Svc.GetBox(r.PathValue("name"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, b)
}

func (s *Server) removeBox(w http.ResponseWriter, r *http.Request) error {
	if err := s.Svc.RemoveBox(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) stopBox(w http.ResponseWriter, r *http.Request) error {
	b, err := s.Svc.StopBox(r.Context(), r.PathValue("name"), "stop")
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, b)
}

func (s *Server) startBox(w http.ResponseWriter, r *http.Request) error {
	b, err := s.Svc.StartBox(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, b)
}

func (s *Server) listSnapshots(w http.ResponseWriter, r *http.Request) error {
	sn, err := s.Svc.Snapshots(r.PathValue("name"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, sn)
}

func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) error {
	sn, err := s.Svc.Snapshot(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, sn)
}

func (s *Server) restore(w http.ResponseWriter, r *http.Request) error {
	var p api.RestorePost
	if err := decode(r, &p); err != nil {
		return err
	}
	b, err := s.Svc.Restore(r.Context(), r.PathValue("name"), p.Snapshot)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, b)
}

func (s *Server) fork(w http.ResponseWriter, r *http.Request) error {
	var p api.ForkPost
	if err := decode(r, &p); err != nil {
		return err
	}
	b, err := s.Svc.Fork(r.Context(), r.PathValue("name"), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, b)
}

func (s *Server) listDrives(w http.ResponseWriter, r *http.Request) error {
	ds, err := s.Svc.ListDrives()
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, ds)
}

func (s *Server) createDrive(w http.ResponseWriter, r *http.Request) error {
	var p api.DrivePost
	if err := decode(r, &p); err != nil {
		return err
	}
	d, err := s.Svc.CreateDrive(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, d)
}

func (s *Server) removeDrive(w http.ResponseWriter, r *http.Request) error {
	if err := s.Svc.RemoveDrive(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) reconcile(w http.ResponseWriter, r *http.Request) error {
	res, err := s.Svc.Reconcile(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		Changes []string          `json:"changes"`
		Errors  map[string]string `json:"errors,omitempty"`
	}{Changes: []string{}, Errors: map[string]string{}}
	for _, c := range res.Changes {
		out.Changes = append(out.Changes, c.String())
	}
	for a, e := range res.Errors {
		out.Errors[a] = e.Error()
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) plan(w http.ResponseWriter, r *http.Request) error {
	var req api.PlanRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	p, err := s.Svc.PlanProject(r.Context(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, p)
}

func (s *Server) apply(w http.ResponseWriter, r *http.Request) error {
	var req api.ApplyRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	res, err := s.Svc.ApplyProject(r.Context(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *Server) setupDone(w http.ResponseWriter, r *http.Request) error {
	var p api.SetupPost
	if err := decode(r, &p); err != nil {
		return err
	}
	if err := s.Svc.SetupDone(r.PathValue("name"), p); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) setPolicy(w http.ResponseWriter, r *http.Request) error {
	var p api.PolicyPut
	if err := decode(r, &p); err != nil {
		return err
	}
	b, err := s.Svc.SetPolicy(r.Context(), r.PathValue("name"), p.Policy)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, b)
}

func (s *Server) policyReport(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.Svc.PolicyReport(r.PathValue("name"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, rep)
}

func (s *Server) listPolicies(w http.ResponseWriter, r *http.Request) error {
	ps, err := s.Svc.ListPolicies()
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, ps)
}

func (s *Server) createPolicy(w http.ResponseWriter, r *http.Request) error {
	var p api.PolicyPost
	if err := decode(r, &p); err != nil {
		return err
	}
	out, err := s.Svc.CreatePolicy(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, out)
}

func (s *Server) removePolicy(w http.ResponseWriter, r *http.Request) error {
	if err := s.Svc.RemovePolicy(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) screenshot(w http.ResponseWriter, r *http.Request) error {
	png, err := s.Svc.Screenshot(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "image/png")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(png)
	return err
}

func (s *Server) prompt(w http.ResponseWriter, r *http.Request) error {
	var p api.PromptPost
	if err := decode(r, &p); err != nil {
		return err
	}
	j, err := s.Svc.Prompt(r.PathValue("name"), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, j)
}

func (s *Server) agents(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, s.Svc.Agents())
}

func (s *Server) secrets(w http.ResponseWriter, r *http.Request) error {
	out, err := s.Svc.Secrets()
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// setSecret takes the value as the raw body.
func (s *Server) setSecret(w http.ResponseWriter, r *http.Request) error {
	v, err := io.ReadAll(io.LimitReader(r.Body, 64<<10+1))
	if err != nil {
		return err
	}
	if err := s.Svc.SetSecret(r.PathValue("name"), v); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) removeSecret(w http.ResponseWriter, r *http.Request) error {
	if err := s.Svc.RemoveSecret(r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) keys(w http.ResponseWriter, r *http.Request) error {
	ks, err := s.Svc.Keys()
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, ks)
}

func (s *Server) addKey(w http.ResponseWriter, r *http.Request) error {
	var p api.KeyPost
	if err := decode(r, &p); err != nil {
		return err
	}
	k, err := s.Svc.AddKey(p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, k)
}

func (s *Server) removeKey(w http.ResponseWriter, r *http.Request) error {
	if err := s.Svc.RemoveKey(r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) desktopTicket(w http.ResponseWriter, r *http.Request) error {
	t, err := s.Desktop.Ticket(r.PathValue("name"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, t)
}

func (s *Server) tokens(w http.ResponseWriter, r *http.Request) error {
	ts, err := s.Svc.Tokens()
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, ts)
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) error {
	var p api.TokenPost
	if err := decode(r, &p); err != nil {
		return err
	}
	t, err := s.Svc.CreateToken(p.Name)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, t)
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) error {
	if err := s.Svc.RevokeToken(r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
