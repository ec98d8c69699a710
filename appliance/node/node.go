// Package node is how one Paddock spans several servers: the node agent,
// which serves the engine driver of the server it runs on, and Remote, a
// driver.Driver that calls one agent. The control plane's cluster driver
// (driver/cluster) routes each call to the Remote of the box's node.
// Cluster is what the control plane keeps of its servers: their Remotes
// attached to the cluster driver and firewall, the authority, the swarm
// it manages, and what each server last said of itself (Look), which
// placement weighs and 'paddock nodes' shows.
//
// The agent and its callers speak HTTPS with mutual TLS: both sides hold a
// certificate signed by the cluster's own authority (CA, made by the
// control plane; a node gets its certificate when it joins), and nothing
// else is accepted on the agent's port. A call is a request per driver
// method:
//
//   - the object calls (boxes, snapshots, volumes, images) are JSON in and
//     out; an error carries its message and, for driver.ErrNotFound and
//     driver.ErrInUse, its kind, so that the reconciler above reads it as
//     it reads the local driver's;
//   - file and volume archives are the request's or the answer's body, and
//     an answer's body is whole only when its trailer says so (a stream cut
//     short is an error, never a shorter archive);
//   - an exec is a websocket of frames: the spec first, then input, its
//     end, and terminal sizes one way, output, errors and the exit the
//     other. Input that breaks off is not an end of input: the command is
//     ended and the exec fails, as with the local driver.
package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/paddock-dev/paddock/appliance/archive"
	"github.com/paddock-dev/paddock/appliance/driver"
)

// Prefix is where the agent's routes are.
const Prefix = "/node/v1/"

// streamTrailer is the trailer that says a streamed answer is whole
// ("complete") or why it is not.
const streamTrailer = "Paddock-Stream"

// Error kinds on the wire.
const (
	kindNotFound    = "not_found"
	kindInUse       = "in_use"
	kindUnsupported = "unsupported"
	// An archive a push refused: its entries, its form, its size
	// (archive.ErrUnsafe, ErrMalformed, ErrTooBig).
	kindUnsafe    = "unsafe_archive"
	kindMalformed = "malformed_archive"
	kindTooBig    = "archive_too_big"
)

// leftHeader, on a push's error, says that its staging folder is still
// there (its removal failed).
const leftHeader = "Paddock-Stage-Left"

// pushFolder is driver.UserFiles.PushFolder's answer.
type pushFolder struct {
	Folder    string `json:"folder"`
	NotFolder string `json:"not_folder,omitempty"`
	Writable  bool   `json:"writable"`
}

// unpacked is driver.UserFiles.UnpackAsUser's answer.
type unpacked struct {
	Blocked string `json:"blocked,omitempty"`
	Left    bool   `json:"left,omitempty"`
}

// uidOf is a call's box user (its uid query): never root.
func uidOf(r *http.Request) (int, error) {
	uid, err := strconv.Atoi(r.URL.Query().Get("uid"))
	if err != nil || uid <= 0 {
		return 0, fmt.Errorf("uid %q: give the box user's uid", r.URL.Query().Get("uid"))
	}
	return uid, nil
}

// ErrUnsupported is a call the node's driver does not have (an optional
// driver interface).
var ErrUnsupported = fmt.Errorf("the node's driver does not do this: %w", errors.ErrUnsupported)

type wireError struct {
	Error string `json:"error"`
	Kind  string `json:"kind,omitempty"`
}

func kindOf(err error) string {
	switch {
	case errors.Is(err, driver.ErrNotFound):
		return kindNotFound
	case errors.Is(err, driver.ErrInUse):
		return kindInUse
	case errors.Is(err, errors.ErrUnsupported):
		return kindUnsupported
	case errors.Is(err, archive.ErrUnsafe):
		return kindUnsafe
	case errors.Is(err, archive.ErrMalformed):
		return kindMalformed
	case errors.Is(err, archive.ErrTooBig):
		return kindTooBig
	}
	return ""
}

// remoteError is an error the node's driver returned: its message, and
// the driver error it is, where it is one.
type remoteError struct {
	msg  string
	base error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.base }

func fromWire(w wireError) error {
	var base error
	switch w.Kind {
	case kindNotFound:
		base = driver.ErrNotFound
	case kindInUse:
		base = driver.ErrInUse
	case kindUnsupported:
		base = ErrUnsupported
	case kindUnsafe:
		base = archive.ErrUnsafe
	case kindMalformed:
		base = archive.ErrMalformed
	case kindTooBig:
		base = archive.ErrTooBig
	}
	return &remoteError{msg: w.Error, base: base}
}

func writeError(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "application/json")
	status := http.StatusInternalServerError
	switch kindOf(err) {
	case kindNotFound:
		status = http.StatusNotFound
	case kindInUse:
		status = http.StatusConflict
	case kindUnsupported:
		status = http.StatusNotImplemented
	}
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(wireError{Error: err.Error(), Kind: kindOf(err)})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if v == nil {
		v = struct{}{}
	}
	json.NewEncoder(w).Encode(v)
}

func readJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the request's body: %w", err)
	}
	return nil
}
