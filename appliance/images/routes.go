package images

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers the images' API routes.
func (c *Catalog) Routes(a route.API) {
	p := "/" + api.Version
	a.Handle("GET "+p+"/images", c.listImages)
	a.Handle("POST "+p+"/images", c.buildImage)
	a.Handle("GET "+p+"/images/{name}", c.getImage)
	a.Handle("DELETE "+p+"/images/{name}", c.removeImage)
	a.Handle("PUT "+p+"/images/{name}/shares", c.shareImage)
}

func (c *Catalog) listImages(w http.ResponseWriter, r *http.Request) error {
	ims, err := c.List(r.Context())
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, ims)
}

func (c *Catalog) getImage(w http.ResponseWriter, r *http.Request) error {
	im, err := c.Get(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, im)
}

func (c *Catalog) removeImage(w http.ResponseWriter, r *http.Request) error {
	im, err := c.Remove(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	audit.From(r.Context()).Note("image", im.Ref)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (c *Catalog) shareImage(w http.ResponseWriter, r *http.Request) error {
	var p api.ImageShares
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	im, err := c.Share(r.Context(), r.PathValue("name"), p)
	if err != nil {
		return err
	}
	audit.From(r.Context()).Note("shared_with", im.SharedWith)
	return route.WriteJSON(w, http.StatusOK, im)
}

// buildImage builds an image from the tar body, streaming the build as
// server-sent events (api.BuildEvent): "log" lines, then "image" or
// "error". A request refused before the build starts is an ordinary
// error answer.
func (c *Catalog) buildImage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	b := ImageBuild{Name: q.Get("name"), Tag: q.Get("tag"), Dockerfile: q.Get("dockerfile"), Policy: q.Get("policy"), Project: q.Get("project")}
	rec := audit.From(r.Context())
	rec.Note("image", b.Name+":"+b.Tag)
	body := &route.Counted{R: r.Body}
	ev := &buildEvents{w: w, rc: http.NewResponseController(w)}
	im, err := c.Build(r.Context(), b, body, ev)
	rec.Note("context_bytes", body.N)
	if !ev.started {
		if err != nil {
			return err
		}
		ev.start()
	}
	if err != nil {
		code, e := route.Status(err)
		rec.Result(fmt.Sprintf("%d %s", code, e.Message))
		ev.send(api.BuildEvent{Type: "error", Message: e.Message, Code: e.Code})
		return nil
	}
	rec.Note("id", im.ID)
	ev.send(api.BuildEvent{Type: "image", Image: &im})
	return nil
}

// buildEvents sends a build's output as "log" events, once it has begun.
type buildEvents struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	mu      sync.Mutex
}

func (e *buildEvents) start() {
	e.started = true
	e.w.Header().Set("Content-Type", "text/event-stream")
	e.w.Header().Set("Cache-Control", "no-store")
	e.w.Header().Set("X-Accel-Buffering", "no")
	e.w.WriteHeader(http.StatusOK)
}

func (e *buildEvents) send(ev api.BuildEvent) error {
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", ev.Type, eventJSON(ev)); err != nil {
		return err
	}
	return e.rc.Flush()
}

// Write sends each line as a log event (the service writes whole lines).
func (e *buildEvents) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.started {
		e.start()
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(p), "\n"), "\n") {
		if err := e.send(api.BuildEvent{Type: "log", Text: l}); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func eventJSON(ev api.BuildEvent) []byte {
	b, err := json.Marshal(ev)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}
