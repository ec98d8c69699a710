// Package jsonhttp is a call with a JSON body and a JSON answer over HTTP,
// as the API client makes them of paddockd and the control plane of its
// nodes' agents: one place for the body, its header and the answer's
// decoding. Each caller keeps its own transport, authentication and
// errors.
package jsonhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
)

// NewRequest is a request whose body is in as JSON, with its
// Content-Type (no body when in is nil).
func NewRequest(ctx context.Context, method, url string, in any) (*http.Request, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// Decode reads an answer's JSON body into out; with out nil it reads the
// body to its end (at most maxDiscard bytes), so that the connection can
// be used again.
func Decode(body io.Reader, out any) error {
	if out == nil {
		io.Copy(io.Discard, io.LimitReader(body, maxDiscard))
		return nil
	}
	return json.NewDecoder(body).Decode(out)
}

// maxDiscard bounds what Decode reads of an answer nobody wants.
const maxDiscard = 1 << 20
