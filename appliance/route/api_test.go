package route

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/iotest"
)

// A tar stream that fails after its status was sent is broken off: the
// client reads an error, not an archive that merely ends early (cut
// between two entries, a tar reads as whole).
func TestSendTarBreaksOffOnAnError(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var part bytes.Buffer
	tw := tar.NewWriter(&part)
	tw.WriteHeader(&tar.Header{Name: "a.txt", Mode: 0o644, Size: 64 << 10, Typeflag: tar.TypeReg})
	// More than a buffer, so the status leaves; no Close, so the end of
	// the archive never comes.
	tw.Write(bytes.Repeat([]byte("a"), 64<<10))
	tw.Flush()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := io.MultiReader(bytes.NewReader(part.Bytes()), iotest.ErrReader(errors.New("a file turned unreadable")))
		SendTar(w, r, io.NopCloser(body), nil, log, "pull", "b")
	}))
	defer ts.Close()
	resp, err := http.Get(ts.URL)
	if err == nil { // (the status may not have left yet: then Get fails)
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("a tar stream that failed half way read as complete")
	}
}
