package e2b

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/route"
)

// The Connect protocol, as envd's clients speak it (JSON, not binary:
// the SDKs' transport is made with useBinaryFormat false). A unary call
// is a POST of application/json answered with the message, or with an
// error status and {code, message}. A server-streaming call is a POST of
// application/connect+json whose body, and whose answer, are envelopes:
// a flags byte, a big-endian length and a JSON message; the answer ends
// with an envelope of flag 2 holding {} or {"error": {code, message}}.
//
// Errors are Paddock's (api.Error, mapped to a status by route.Status);
// WriteError gives each the shape its client reads: E2B's {code,
// message} on the control API and envd's HTTP routes, Connect's error on
// envd's services. The server writes every error of these routes
// through it, its own refusals too (no key, a viewer's change, a rate
// limit), so that each reaches the SDKs with its message.

// connectCodes are Connect's codes of the statuses Paddock answers, and
// the statuses of a unary call's error.
var connectCodes = map[int]string{
	http.StatusBadRequest: "invalid_argument", http.StatusUnauthorized: "unauthenticated", http.StatusForbidden: "permission_denied",
	http.StatusNotFound: "not_found", http.StatusConflict: "already_exists", http.StatusGone: "not_found",
	http.StatusTooManyRequests: "resource_exhausted", http.StatusInsufficientStorage: "resource_exhausted",
	http.StatusNotImplemented: "unimplemented", http.StatusServiceUnavailable: "unavailable",
}

// connectError is a Connect error.
type connectError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

func connectErrorOf(status int, body api.Error) connectError {
	code := connectCodes[status]
	if code == "" {
		code = "internal"
	}
	return connectError{Code: code, Message: body.Message}
}

// apiError is an error of E2B's control API: code is the HTTP status
// (the SDKs map 401, 404, 429 and 503 to their error types, and read a
// kill's 404 as "there was no such sandbox").
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// WriteError writes an error of one of E2B's routes in the shape its
// client reads (route.ErrorWriter).
func (e *E2B) WriteError(w http.ResponseWriter, r *http.Request, status int, body api.Error) {
	rest, envd := strings.CutPrefix(r.URL.Path, Prefix+EnvdPath+"/")
	switch {
	case envd && streaming[rest]:
		// A stream's error is its end, after a 200 (Connect's clients
		// read a stream's other statuses without its message).
		s := &stream{w: w}
		w.Header().Set("Content-Type", "application/connect+json")
		w.WriteHeader(http.StatusOK)
		s.end(connectErrorOf(status, body))
	case envd && (strings.HasPrefix(rest, "process.Process/") || strings.HasPrefix(rest, "filesystem.Filesystem/")):
		route.WriteJSON(w, statusOf(status), connectErrorOf(status, body))
	default:
		route.WriteJSON(w, status, apiError{Code: status, Message: body.Message})
	}
}

// statusOf is the status of a unary call's error.
func statusOf(status int) int {
	if connectCodes[status] == "" {
		return http.StatusInternalServerError
	}
	return status
}

// streaming are envd's server-streaming methods.
var streaming = map[string]bool{"process.Process/Start": true, "process.Process/Connect": true, "filesystem.Filesystem/WatchDir": true}

// unary serves a unary call: in is read from the JSON body, and call's
// answer written back.
func unary[In, Out any](call func(r *http.Request, in *In) (Out, error)) route.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		var in In
		if err := readJSON(r.Body, &in); err != nil {
			return err
		}
		out, err := call(r, &in)
		if err != nil {
			return err
		}
		return route.WriteJSON(w, http.StatusOK, out)
	}
}

func readJSON(r io.Reader, v any) error {
	body, err := io.ReadAll(io.LimitReader(r, route.MaxJSON+1))
	if err != nil {
		return api.Invalid("body", "reading the request: %v", err)
	}
	if len(body) > route.MaxJSON {
		return &api.Error{Code: api.CodeTooMany, Message: fmt.Sprintf("the request is over %d KiB", route.MaxJSON>>10)}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return api.Invalid("body", "bad request: %v", err)
	}
	return nil
}

// stream is the answer of a server-streaming call.
type stream struct {
	w  http.ResponseWriter
	mu sync.Mutex
}

const (
	flagEndStream = 2
	maxEnvelope   = route.MaxJSON
)

// serverStream serves a server-streaming call: in is read from the
// request's one envelope; call sends messages on the stream; its error
// ends the stream (and is the request's result in the audit log).
func serverStream[In any](call func(r *http.Request, in *In, s *stream) error) route.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		var in In
		if err := readEnvelope(r.Body, &in); err != nil {
			return err
		}
		s := &stream{w: w}
		w.Header().Set("Content-Type", "application/connect+json")
		w.WriteHeader(http.StatusOK)
		var end any
		if err := call(r, &in, s); err != nil {
			status, body := route.Status(err)
			audit.From(r.Context()).Result(body.Message)
			end = connectErrorOf(status, body)
		}
		s.end(end) // the client may be gone: nothing more to say
		return nil
	}
}

func readEnvelope(r io.Reader, v any) error {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return api.Invalid("body", "reading the request's envelope: %v", err)
	}
	if head[0]&1 != 0 {
		return api.Invalid("body", "compressed messages are not supported by Paddock")
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n > maxEnvelope {
		return &api.Error{Code: api.CodeTooMany, Message: fmt.Sprintf("the request is over %d KiB", maxEnvelope>>10)}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return api.Invalid("body", "reading the request: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return api.Invalid("body", "bad request: %v", err)
	}
	return nil
}

// send writes one message.
func (s *stream) send(v any) error { return s.write(0, v) }

// end writes the stream's end, with its error if it has one.
func (s *stream) end(e any) error {
	if e == nil || e == (any)(nil) {
		return s.write(flagEndStream, struct{}{})
	}
	return s.write(flagEndStream, map[string]any{"error": e})
}

func (s *stream) write(flags byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var head [5]byte
	head[0] = flags
	binary.BigEndian.PutUint32(head[1:], uint32(len(b)))
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.w.Write(append(head[:], b...)); err != nil {
		return err
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// unsupported says what Paddock does not do of E2B's API.
func unsupported(format string, args ...any) error {
	return &api.Error{Code: api.CodeInvalid, Message: fmt.Sprintf(format, args...)}
}

// notFound is a not found error.
func notFound(format string, args ...any) error {
	return &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf(format, args...)}
}
