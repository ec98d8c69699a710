package events

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers the events stream's route.
func (ev *Events) Routes(a route.API) {
	a.Handle("GET /"+api.Version+"/events", ev.route)
}

// route streams the caller's boxes, drives, jobs and snapshots as
// server-sent events: everything first, then "ready", then each change.
// A comment line every 15 s keeps proxies from closing a quiet stream.
func (ev *Events) route(w http.ResponseWriter, r *http.Request) error {
	release, err := ev.Open(r.Context())
	if err != nil {
		return err
	}
	defer release()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc.Flush()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	errc := make(chan error, 1)
	msgs := make(chan Event, 64)
	go func() {
		errc <- ev.Watch(ctx, 0, r.URL.Query().Get("metrics") == "1", func(e Event) error {
			select {
			case msgs <- e:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		close(msgs)
	}()
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case e, ok := <-msgs:
			if !ok {
				if err := <-errc; err != nil && ctx.Err() == nil {
					fmt.Fprintf(w, "event: error\ndata: %s\n\n", asJSON(map[string]string{"message": err.Error()}))
					rc.Flush()
				}
				return nil
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Kind, asJSON(e.Data)); err != nil {
				return nil
			}
			if len(msgs) == 0 {
				if rc.Flush() != nil {
					return nil
				}
			}
		case <-keep.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// asJSON is v as JSON, or {} (an event's data is the API's types).
func asJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}
