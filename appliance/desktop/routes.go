package desktop

import (
	"net/http"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/route"
)

// Routes registers the desktop's API routes: a ticket for the view, a
// screenshot, and the gallery.
func (d *Desktop) Routes(a route.API) {
	p := "/" + api.Version + "/boxes/{name}"
	a.Handle("POST "+p+"/desktop", d.ticket)
	a.Handle("GET "+p+"/screenshot", d.screenshot)
	a.Handle("POST "+p+"/screenshots", d.takeScreenshot)
	a.Handle("GET "+p+"/screenshots", d.listScreenshots)
	a.Handle("GET "+p+"/screenshots/{id}", d.getScreenshot)
}

func (d *Desktop) ticket(w http.ResponseWriter, r *http.Request) error {
	t, err := d.Ticket(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusCreated, t)
}

func (d *Desktop) screenshot(w http.ResponseWriter, r *http.Request) error {
	png, err := d.Screenshot(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "image/png")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(png)
	return err
}

// takeScreenshot takes a screenshot and keeps it in the box's gallery.
func (d *Desktop) takeScreenshot(w http.ResponseWriter, r *http.Request) error {
	sh, err := d.TakeScreenshot(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusCreated, sh)
}

func (d *Desktop) listScreenshots(w http.ResponseWriter, r *http.Request) error {
	shots, err := d.Screenshots(r.PathValue("name"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, shots)
}

func (d *Desktop) getScreenshot(w http.ResponseWriter, r *http.Request) error {
	p, err := d.ScreenshotFile(r.PathValue("name"), r.PathValue("id"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "private, max-age=86400, immutable")
	http.ServeFile(w, r, p)
	return nil
}
