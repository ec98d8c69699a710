package route

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
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
