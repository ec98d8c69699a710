package watch

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers file watch's API route.
func (wr *Watcher) Routes(a route.API) {
	a.Handle("GET /"+api.Version+"/boxes/{name}/watch", wr.watch)
}

// keepAlive is how often a quiet stream says it is still there.
const keepAlive = 15 * time.Second

// watch streams a file watch's events as server-sent events.
func (wr *Watcher) watch(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	rec := q.Get("recursive")
	if rec != "" && rec != "0" && rec != "1" {
		return api.Invalid("recursive", "recursive=%q: give 1 (the folders under the path too) or 0", rec)
	}
	audit.From(r.Context()).Note("path", q.Get("path"))
	wt, err := wr.Watch(r.Context(), r.PathValue("name"), q.Get("path"), rec == "1")
	if err != nil {
		return err
	}
	defer wt.Close()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(e api.WatchEvent) bool {
		b, err := json.Marshal(e)
		if err != nil {
			b = []byte(`{}`)
		}
		_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Type, b)
		return err == nil
	}
	// What did not fit in the queue is said once the queue has room.
	dropped := func() bool {
		if n := wt.Dropped(); n > 0 {
			return send(api.WatchEvent{Type: "dropped", Count: n, Time: time.Now().UTC(),
				Message: fmt.Sprintf("%d events did not fit in the server's queue: this client read too slowly", n)})
		}
		return true
	}
	keep := time.NewTicker(keepAlive)
	defer keep.Stop()
	for {
		select {
		case e, ok := <-wt.C:
			if !ok {
				dropped()
				if err := wt.Err(); err != nil {
					send(api.WatchEvent{Type: "error", Message: err.Error(), Time: time.Now().UTC()})
				}
				rc.Flush()
				return nil
			}
			if !send(e) {
				return nil
			}
			if len(wt.C) == 0 {
				if !dropped() || rc.Flush() != nil {
					return nil
				}
			}
		case <-keep.C:
			if !dropped() {
				return nil
			}
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		case <-r.Context().Done():
			return nil
		}
	}
}
