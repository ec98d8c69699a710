package metrics

import (
	"net/http"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers the metrics' API routes: a box's samples, and the
// newest of each box the caller sees.
func (m *Sampler) Routes(a route.API) {
	a.Handle("GET /"+api.Version+"/boxes/{name}/metrics", m.boxMetrics)
	a.Handle("GET /"+api.Version+"/metrics", m.latestMetrics)
}

// boxMetrics is a box's samples since ?since= (a duration back, or a
// time; default the last 15 minutes).
func (m *Sampler) boxMetrics(w http.ResponseWriter, r *http.Request) error {
	since := time.Now().Add(-15 * time.Minute)
	if v := r.URL.Query().Get("since"); v != "" {
		t, err := api.ParseSince(v, time.Now())
		if err != nil {
			return err
		}
		since = t
	}
	h, err := m.History(r.PathValue("name"), since)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, h)
}

// latestMetrics is the newest sample of each running box the caller sees.
func (m *Sampler) latestMetrics(w http.ResponseWriter, r *http.Request) error {
	ms, err := m.LatestSeen(r.Context())
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, ms)
}
