package boxes

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers the box routes.
func (bx *Boxes) Routes(a route.API) {
	p := "/" + api.Version
	a.Handle("GET "+p+"/boxes", bx.listRoute)
	a.Handle("POST "+p+"/boxes", bx.createRoute)
	a.Handle("GET "+p+"/boxes/{name}", bx.getRoute)
	a.Handle("DELETE "+p+"/boxes/{name}", bx.removeRoute)
	a.Handle("POST "+p+"/boxes/{name}/stop", bx.stopRoute)
	a.Handle("POST "+p+"/boxes/{name}/start", bx.startRoute)
	a.Handle("GET "+p+"/boxes/{name}/snapshots", bx.snapshotsRoute)
	a.Handle("POST "+p+"/boxes/{name}/snapshots", bx.snapshotRoute)
	a.Handle("POST "+p+"/boxes/{name}/restore", bx.restoreRoute)
	a.Handle("POST "+p+"/boxes/{name}/fork", bx.forkRoute)
	a.Handle("PUT "+p+"/boxes/{name}/ttl", bx.ttlRoute)
	a.Handle("GET "+p+"/boxes/{name}/ports", bx.portsRoute)
}

func (bx *Boxes) listRoute(w http.ResponseWriter, r *http.Request) error {
	want, err := labelQuery(r.URL.Query()["label"])
	if err != nil {
		return err
	}
	bs, err := bx.core.ListBoxes(r.Context())
	if err != nil {
		return err
	}
	out := bs[:0]
	for _, b := range bs {
		if api.HasLabels(b.Labels, want) {
			out = append(out, b)
		}
	}
	return route.WriteJSON(w, http.StatusOK, out)
}

// labelQuery reads label=KEY=VALUE parameters (a box must have all).
func labelQuery(vs []string) (map[string]string, error) {
	want := map[string]string{}
	for _, v := range vs {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, &api.Error{Code: api.CodeInvalid, Field: "label", Message: fmt.Sprintf("label %q: give KEY=VALUE", v)}
		}
		want[k] = val
	}
	return want, nil
}

func (bx *Boxes) createRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.BoxPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	rec := audit.From(r.Context())
	if u, ok := caller.From(r.Context()); ok {
		rec.About(p.Name, u.Name)
	}
	b, err := bx.core.CreateBox(r.Context(), p)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusCreated, b)
}

func (bx *Boxes) getRoute(w http.ResponseWriter, r *http.Request) error {
	b, err := bx.core.GetBox(r.PathValue("name"))
	if err != nil {
		return err
	}
	if b.Broker, err = bx.core.BrokerUses(b.Name); err != nil {
		return err
	}
	if r.URL.Query().Get("detail") == "1" {
		b.Docker = bx.core.BoxDocker(r.Context(), b) // a command in the box: asked for only
		b.DesktopState = bx.core.BoxDesktop(r.Context(), b)
	}
	return bx.boxJSON(w, r, b)
}

// boxJSON answers a box route with its box, saying how it is shared
// with the caller when it is not theirs (as boxRoute found).
func (bx *Boxes) boxJSON(w http.ResponseWriter, r *http.Request, b api.Box) error {
	if a, ok := caller.AccessIn(r.Context()); ok && a != caller.AccessAll {
		b.Access = a
	}
	return route.WriteJSON(w, http.StatusOK, b)
}

func (bx *Boxes) removeRoute(w http.ResponseWriter, r *http.Request) error {
	// What the box sent through the credential broker goes with it; its
	// removal's entry in the audit log keeps the counts.
	if uses, err := bx.core.BrokerUses(r.PathValue("name")); err == nil && len(uses) > 0 {
		audit.From(r.Context()).Note("broker", uses)
	}
	if err := bx.core.RemoveBox(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (bx *Boxes) stopRoute(w http.ResponseWriter, r *http.Request) error {
	b, err := bx.core.StopBox(r.Context(), r.PathValue("name"), "stop")
	if err != nil {
		return err
	}
	return bx.boxJSON(w, r, b)
}

func (bx *Boxes) startRoute(w http.ResponseWriter, r *http.Request) error {
	b, err := bx.core.StartBox(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return bx.boxJSON(w, r, b)
}

func (bx *Boxes) snapshotsRoute(w http.ResponseWriter, r *http.Request) error {
	sn, err := bx.core.Snapshots(r.PathValue("name"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, sn)
}

func (bx *Boxes) snapshotRoute(w http.ResponseWriter, r *http.Request) error {
	sn, err := bx.core.Snapshot(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusCreated, sn)
}

func (bx *Boxes) restoreRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.RestorePost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	b, err := bx.core.Restore(r.Context(), r.PathValue("name"), p.Snapshot)
	if err != nil {
		return err
	}
	return bx.boxJSON(w, r, b)
}

func (bx *Boxes) forkRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.ForkPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	b, err := bx.core.Fork(r.Context(), r.PathValue("name"), p)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusCreated, b)
}

// portsRoute lists what listens in a box, with each port's preview URL when
// this server serves previews.
func (bx *Boxes) portsRoute(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	ps, err := bx.core.BoxPorts(r.Context(), name)
	if err != nil {
		return err
	}
	for i := range ps {
		if bx.PreviewURL != nil && ps[i].Note == "" {
			ps[i].URL = bx.PreviewURL(name, ps[i].Port)
		}
	}
	return route.WriteJSON(w, http.StatusOK, ps)
}

func (bx *Boxes) ttlRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.TTLPut
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	b, err := bx.core.SetTTL(r.Context(), r.PathValue("name"), p.TTL)
	if err != nil {
		return err
	}
	return bx.boxJSON(w, r, b)
}
