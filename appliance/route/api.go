package route

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Handler is an API route's handler: an error it returns is its answer
// (the server maps it to a status and a JSON body, and to the audit
// entry's result).
type Handler func(http.ResponseWriter, *http.Request) error

// API is where a capability registers its /v1 routes: the server wraps
// each with what every API route gets (the caller's authentication, the
// box's access for a /boxes/{name} route, the rate limits, the audit).
type API interface {
	Handle(pattern string, h Handler)
}

// Capability is a part of paddockd that brings its own API routes.
type Capability interface {
	Routes(api API)
}

// ErrorWriter is a capability whose routes' errors have a shape of
// their own (another system's protocol): the server writes every error
// of its routes through WriteError, its own refusals before the route
// too (no credentials, a viewer's change, a rate limit). status and
// body are route.Status's.
type ErrorWriter interface {
	WriteError(w http.ResponseWriter, r *http.Request, status int, body api.Error)
}

// Recovering is a capability that finishes, once as paddockd starts and
// before anything is served, what the last stop cut off of its work.
type Recovering interface {
	Recover(ctx context.Context)
}

// Pages is a capability that also serves routes outside the API (/v1):
// pages, files, websockets, each registered on the table with who may
// call it.
type Pages interface {
	Pages(t *Table)
}

// WriteJSON answers v as JSON with status code.
func WriteJSON(w http.ResponseWriter, code int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	return json.NewEncoder(w).Encode(v)
}

// MaxJSON bounds a JSON request body.
const MaxJSON = 1 << 20

// Decode reads a JSON body strictly: unknown fields and wrong types are a
// 400 naming the field.
func Decode(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxJSON+1))
	if err != nil {
		return &api.Error{Code: api.CodeInvalid, Message: "reading the request body: " + err.Error()}
	}
	if len(body) > MaxJSON {
		return &api.Error{Code: api.CodeInvalid, Message: fmt.Sprintf("the JSON body is over %d KiB", MaxJSON>>10)}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
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

// Status maps an error to its HTTP status and body: an api.Error by its
// code, the store's and the driver's not found and conflict, a full disk;
// anything else is a 500.
func Status(err error) (int, api.Error) {
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
		case api.CodeUnauthorized, api.CodeExpiredToken, api.CodeAccessDenied:
			return http.StatusUnauthorized, body
		case api.CodeForbidden:
			return http.StatusForbidden, body
		case api.CodeGone:
			return http.StatusGone, body
		case api.CodeTooMany:
			return http.StatusTooManyRequests, body
		case api.CodeDiskFull:
			return http.StatusInsufficientStorage, body
		case api.CodePending, api.CodeSlowDown:
			return http.StatusBadRequest, body
		}
		return http.StatusInternalServerError, body
	case errors.Is(err, store.ErrNotFound), errors.Is(err, driver.ErrNotFound):
		return http.StatusNotFound, api.Error{Code: api.CodeNotFound, Message: err.Error()}
	case errors.Is(err, store.ErrConflict):
		return http.StatusConflict, api.Error{Code: api.CodeConflict, Message: err.Error()}
	case store.IsDiskFull(err):
		return http.StatusInsufficientStorage, api.Error{Code: api.CodeDiskFull,
			Message: "the server's disk is full, so nothing was changed: free space on the disk of paddockd's state directory and try again (" + err.Error() + ")"}
	}
	return http.StatusInternalServerError, api.Error{Code: api.CodeInternal, Message: err.Error()}
}

// Counted is a reader that counts what was read through it (N).
type Counted struct {
	R io.Reader
	N int64
}

func (c *Counted) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}

// SendTar streams a tar a verb opened (rc, or its error err). Once the
// status is sent, an error can only cut the stream short: the connection is broken off
// (http.ErrAbortHandler), so that the client reads an error. Ended
// cleanly, a tar cut between two entries would read as a whole one with
// files missing.
func SendTar(w http.ResponseWriter, r *http.Request, rc io.ReadCloser, err error, log *slog.Logger, what, name string) error {
	if err != nil {
		return err
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(http.StatusOK)
	n, err := io.Copy(w, rc)
	rec := audit.From(r.Context())
	rec.Note("bytes", n)
	if err != nil {
		rec.Result("cut short: " + err.Error())
		log.Warn(what+" interrupted", "name", name, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}
