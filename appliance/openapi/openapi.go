// Package openapi builds paddockd's OpenAPI 3.1 document from the real
// route table and the Go types of package api, so that the document cannot
// name a route the server lacks, miss one it has, or describe a body other
// than the one the handlers encode. Each route's words (summary, status,
// query parameters, non-JSON bodies) come from an Op the server keeps next
// to its handlers; Build refuses a route without one, and Unrouted lists
// Ops whose route is gone.
package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/route"
)

// Op documents one route.
type Op struct {
	Summary string
	// Request is a value of the JSON request body's type (nil: none, or
	// RequestType's).
	Request any
	// RequestType is a non-JSON request body's media type.
	RequestType string
	// Response is a value of the JSON response body's type (nil: none,
	// or ResponseType's); with ResponseType text/event-stream, of each
	// event's data (x-event-data).
	Response any
	// ResponseType is a non-JSON response body's media type.
	ResponseType string
	// Status is the success status (default 200).
	Status int
	// Query lists query parameters: name, description.
	Query [][2]string
	// Upgrade names the protocol a 101 answer switches to.
	Upgrade string
	// Tag groups routes in the reference.
	Tag string
	// Notes are said after the summary.
	Notes string
}

// Doc is an OpenAPI document as JSON-ready values.
type Doc = map[string]any

var param = regexp.MustCompile(`\{([a-z]+)\}`)

// Build makes the document of every route under prefix in routes, each
// described by ops (keyed by the route's pattern, "GET /v1/boxes"). A
// route without an Op is an error; Unrouted finds the other mistake.
func Build(title, version, prefix string, routes []route.Route, ops map[string]Op, errType any) (Doc, error) {
	g := &gen{schemas: map[string]any{}}
	paths := map[string]map[string]any{}
	var missing []string
	for _, r := range routes {
		method, path, ok := strings.Cut(r.Pattern, " ")
		if !ok || !strings.HasPrefix(path, prefix+"/") {
			continue
		}
		op, ok := ops[r.Pattern]
		if !ok {
			missing = append(missing, r.Pattern)
			continue
		}
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		paths[path][strings.ToLower(method)] = g.operation(method, path, r, op, errType)
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		return nil, fmt.Errorf("routes without documentation (an Op): %v", missing)
	}
	g.schemaOf(reflect.TypeOf(errType))
	return Doc{
		"openapi": "3.1.0",
		"info": map[string]any{"title": title, "version": version,
			"description": "Every route needs a bearer token (Authorization: Bearer pdk_...) or a browser session; errors have one body, Error."},
		"paths": paths,
		"components": map[string]any{
			"schemas": g.schemas,
			"securitySchemes": map[string]any{
				"token":   map[string]any{"type": "http", "scheme": "bearer", "description": "an API token: paddock token create, or paddock login"},
				"session": map[string]any{"type": "apiKey", "in": "cookie", "name": "paddock_session", "description": "a dashboard session; writes also need the X-Paddock-CSRF header"},
			},
		},
		"security": []any{map[string]any{"token": []any{}}, map[string]any{"session": []any{}}},
	}, nil
}

// Unrouted lists the Ops whose route is not in routes (a server wired
// with every part has them all).
func Unrouted(routes []route.Route, ops map[string]Op) []string {
	have := map[string]bool{}
	for _, r := range routes {
		have[r.Pattern] = true
	}
	var out []string
	for k := range ops {
		if !have[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

type gen struct {
	schemas map[string]any
}

func (g *gen) operation(method, path string, r route.Route, op Op, errType any) map[string]any {
	o := map[string]any{
		"summary":     op.Summary,
		"operationId": operationID(method, path),
	}
	if op.Notes != "" {
		o["description"] = op.Notes
	}
	if op.Tag != "" {
		o["tags"] = []any{op.Tag}
	}
	if r.Access == route.Public {
		o["security"] = []any{}
	}
	var params []any
	for _, m := range param.FindAllStringSubmatch(path, -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	for _, q := range op.Query {
		params = append(params, map[string]any{"name": q[0], "in": "query", "required": false, "description": q[1], "schema": map[string]any{"type": "string"}})
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	switch {
	case op.Request != nil:
		o["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": g.schemaOf(reflect.TypeOf(op.Request))}}}
	case op.RequestType != "":
		o["requestBody"] = map[string]any{"required": true, "content": map[string]any{op.RequestType: map[string]any{"schema": binary(op.RequestType)}}}
	}
	status := op.Status
	if status == 0 {
		status = http.StatusOK
	}
	ok := map[string]any{"description": http.StatusText(status)}
	switch {
	case op.Upgrade != "":
		status = http.StatusSwitchingProtocols
		ok = map[string]any{"description": "Switching Protocols to " + op.Upgrade}
	case op.Response != nil && op.ResponseType == "text/event-stream":
		// A stream of events: each one's data is Response's type.
		ok["content"] = map[string]any{op.ResponseType: map[string]any{"schema": binary(op.ResponseType),
			"x-event-data": g.schemaOf(reflect.TypeOf(op.Response))}}
	case op.Response != nil:
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": g.schemaOf(reflect.TypeOf(op.Response))}}
	case op.ResponseType != "":
		ok["content"] = map[string]any{op.ResponseType: map[string]any{"schema": binary(op.ResponseType)}}
	}
	errRef := map[string]any{"description": "an error: its status says what kind", "content": map[string]any{"application/json": map[string]any{"schema": g.schemaOf(reflect.TypeOf(errType))}}}
	o["responses"] = map[string]any{fmt.Sprint(status): ok, "default": errRef}
	return o
}

func binary(media string) map[string]any {
	if strings.HasPrefix(media, "text/") {
		return map[string]any{"type": "string"}
	}
	return map[string]any{"type": "string", "contentMediaType": media}
}

// operationID is "GET /v1/boxes/{name}/jobs" as "getBoxesNameJobs".
func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, seg := range strings.Split(path, "/")[2:] {
		seg = strings.Trim(seg, "{}")
		for _, w := range strings.FieldsFunc(seg, func(r rune) bool { return r == '-' || r == '_' }) {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

var timeType = reflect.TypeOf(time.Time{})

// schemaOf is the JSON Schema of a Go type as encoding/json writes it:
// named structs become components, referenced.
func (g *gen) schemaOf(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t.Kind() == reflect.String:
		return map[string]any{"type": "string"}
	case t.Kind() == reflect.Bool:
		return map[string]any{"type": "boolean"}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return map[string]any{"type": "integer"}
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return map[string]any{"type": "number"}
	case t == reflect.TypeOf(json.RawMessage(nil)):
		return map[string]any{} // JSON as it is: any value
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return map[string]any{"type": "string", "contentEncoding": "base64"}
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		// encoding/json writes a nil slice as null.
		return map[string]any{"type": []any{"array", "null"}, "items": g.schemaOf(t.Elem())}
	case t.Kind() == reflect.Map:
		return map[string]any{"type": []any{"object", "null"}, "additionalProperties": g.schemaOf(t.Elem())}
	case t.Kind() == reflect.Interface:
		return map[string]any{}
	case t.Kind() == reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		name := t.Name()
		if _, ok := g.schemas[name]; !ok {
			g.schemas[name] = map[string]any{} // against recursion
			g.schemas[name] = g.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

func (g *gen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	g.fields(t, props, &required)
	sort.Strings(required)
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func (g *gen) fields(t reflect.Type, props map[string]any, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, props, required)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		s := g.schemaOf(f.Type)
		omit := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		if f.Type.Kind() == reflect.Pointer && !omit {
			s = map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
		}
		props[name] = s
		if !omit {
			*required = append(*required, name)
		}
	}
}
