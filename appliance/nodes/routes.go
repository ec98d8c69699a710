package nodes

import (
	"net/http"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers the servers' API routes, and the moves'.
func (nd *Nodes) Routes(a route.API) {
	p := "/" + api.Version
	a.Handle("POST "+p+"/boxes/{name}/move", nd.moveBox)
	a.Handle("POST "+p+"/drives/{name}/move", nd.moveDrive)
	a.Handle("GET "+p+"/nodes", nd.listNodes)
	a.Handle("POST "+p+"/nodes/joins", nd.nodeJoinToken)
	a.Handle("PUT "+p+"/nodes/{name}/labels", nd.labelNode)
	a.Handle("PUT "+p+"/nodes/{name}/pool", nd.setNodePool)
	a.Handle("DELETE "+p+"/nodes/{name}", nd.removeNode)
	a.Handle("POST "+p+"/nodes/{name}/drain", nd.drainNode)
	a.Handle("DELETE "+p+"/nodes/{name}/drain", nd.undrainNode)
	a.Handle("POST "+p+"/nodes/{name}/lost", nd.lostNode)
}

func (nd *Nodes) listNodes(w http.ResponseWriter, r *http.Request) error {
	ns, err := nd.List(r.Context())
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, ns)
}

func (nd *Nodes) nodeJoinToken(w http.ResponseWriter, r *http.Request) error {
	j, err := nd.JoinToken(r.Context())
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusCreated, j)
}

func (nd *Nodes) labelNode(w http.ResponseWriter, r *http.Request) error {
	var p api.NodeLabels
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	n, err := nd.Label(r.Context(), r.PathValue("name"), p.Labels)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, n)
}

func (nd *Nodes) setNodePool(w http.ResponseWriter, r *http.Request) error {
	var p api.NodePool
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	n, err := nd.SetPool(r.Context(), r.PathValue("name"), p.Pool)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, n)
}

func (nd *Nodes) drainNode(w http.ResponseWriter, r *http.Request) error {
	d, err := nd.Drain(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, d)
}

func (nd *Nodes) undrainNode(w http.ResponseWriter, r *http.Request) error {
	if err := nd.Undrain(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (nd *Nodes) lostNode(w http.ResponseWriter, r *http.Request) error {
	l, err := nd.Lost(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, l)
}

func (nd *Nodes) removeNode(w http.ResponseWriter, r *http.Request) error {
	if err := nd.Remove(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (nd *Nodes) moveBox(w http.ResponseWriter, r *http.Request) error {
	var p api.MovePost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	if p.FromStore {
		if len(p.With) > 0 {
			return api.Invalid("with", "a box is made from the store alone")
		}
		b, err := nd.StartElsewhere(r.Context(), r.PathValue("name"), p.Node)
		if err != nil {
			return err
		}
		return route.WriteJSON(w, http.StatusOK, b)
	}
	bs, err := nd.MoveBoxes(r.Context(), append([]string{r.PathValue("name")}, p.With...), nil, p.Node)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, bs[0])
}

func (nd *Nodes) moveDrive(w http.ResponseWriter, r *http.Request) error {
	var p api.MovePost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	d, err := nd.MoveDrive(r.Context(), r.PathValue("name"), p.With, p.Node)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, d)
}
