// Package api holds the wire types of paddockd's HTTP API: the request and
// response bodies (BoxPost to create, Box for everything), the JSON error
// body, and the validation rules that both the CLI and the server apply to
// names, types and durations. It depends on the standard library only, so the
// CLI can import it on every platform.
package api

import (
	"errors"
	"fmt"
)

// Version is the API path prefix.
const Version = "v1"

// Error is the body of every non-2xx answer.
type Error struct {
	// Code is a stable word: not_found, invalid, conflict, unauthorized, internal.
	Code    string `json:"error"`
	Message string `json:"message"`
	// Field names the request field that was invalid, when one was.
	Field string `json:"field,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Invalid is the error of a request whose field is not right, saying why.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Conflict is the error of a request that what exists refuses, saying why.
func Conflict(format string, args ...any) *Error {
	return &Error{Code: CodeConflict, Message: fmt.Sprintf(format, args...)}
}

// ErrOverQuota marks a refusal by a user's quota (errors.Is): a conflict
// on Paddock's API, which E2B's API answers as its own limits are (429).
var ErrOverQuota = errors.New("over quota")

// OverQuota is a conflict that a quota refused.
func OverQuota(format string, args ...any) error {
	return quotaError{Conflict(format, args...)}
}

type quotaError struct{ e *Error }

func (q quotaError) Error() string   { return q.e.Error() }
func (q quotaError) Unwrap() []error { return []error{q.e, ErrOverQuota} }

// NotFound is the answer for a kind of thing named name that does not
// exist, or that the caller may not see (the same answer).
func NotFound(kind, name string) *Error {
	return &Error{Code: CodeNotFound, Message: fmt.Sprintf("no %s named %q", kind, name)}
}

// IsNotFound says whether err is, or wraps, a not-found Error.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == CodeNotFound
}

// ErrNoImage is the one answer for an image a box may not be made from,
// whether the engine has it or not, so that the answer tells nothing.
var ErrNoImage = errors.New("is not on the server")

// Error codes.
const (
	CodeNotFound     = "not_found"
	CodeInvalid      = "invalid"
	CodeConflict     = "conflict"
	CodeUnauthorized = "unauthorized"
	CodeInternal     = "internal"
	CodeForbidden    = "forbidden"
	CodeGone         = "gone"
	CodeTooMany      = "too_many_requests"
	// CodeDiskFull (HTTP 507): the disk under the server's state is full;
	// nothing was changed.
	CodeDiskFull = "disk_full"
	// The device login's poll answers (RFC 8628, 3.5).
	CodePending      = "authorization_pending"
	CodeSlowDown     = "slow_down"
	CodeAccessDenied = "access_denied"
	CodeExpiredToken = "expired_token"
)
