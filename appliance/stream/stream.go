// Package stream is the framing of an attached exec over one upgraded HTTP
// connection: the client sends stdin, end of stdin and terminal sizes; the
// server sends stdout, stderr and finally the exit code (or an error). Each
// frame is a type byte, a big-endian uint32 length and the payload. It works
// the same over the unix socket, loopback TCP, and a reverse proxy that
// passes upgraded connections through.
package stream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Frame types.
const (
	Stdin    byte = 0
	Stdout   byte = 1
	Stderr   byte = 2
	Resize   byte = 3 // payload: rows, cols as two uint16
	StdinEOF byte = 4
	Exit     byte = 5 // payload: int32 exit code
	Error    byte = 6 // payload: message
	// Notice is a word for the person, not the command's output (payload:
	// text), such as that the box is being woken: clients may show it or
	// not.
	Notice byte = 7
)

// MaxFrame bounds a frame's payload.
const MaxFrame = 1 << 20

// Writer writes frames; it is safe for concurrent use.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter frames onto w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Frame writes one frame.
func (w *Writer) Frame(t byte, p []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var hdr [5]byte
	hdr[0] = t
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	if _, err := w.w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.w.Write(p)
	return err
}

// Stream returns an io.Writer that sends everything written as frames of
// type t.
func (w *Writer) Stream(t byte) io.Writer { return typed{w, t} }

type typed struct {
	w *Writer
	t byte
}

func (t typed) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		chunk := p
		if len(chunk) > MaxFrame {
			chunk = chunk[:MaxFrame]
		}
		if err := t.w.Frame(t.t, chunk); err != nil {
			return n, err
		}
		n += len(chunk)
		p = p[len(chunk):]
	}
	return n, nil
}

// ExitFrame encodes an exit code.
func ExitFrame(code int) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, uint32(int32(code)))
	return b
}

// ResizeFrame encodes a terminal size.
func ResizeFrame(rows, cols uint16) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint16(b, rows)
	binary.BigEndian.PutUint16(b[2:], cols)
	return b
}

// ParseResize decodes a terminal size.
func ParseResize(p []byte) (rows, cols uint16, err error) {
	if len(p) != 4 {
		return 0, 0, errors.New("bad resize frame")
	}
	return binary.BigEndian.Uint16(p), binary.BigEndian.Uint16(p[2:]), nil
}

// ParseExit decodes an exit code.
func ParseExit(p []byte) (int, error) {
	if len(p) != 4 {
		return 0, errors.New("bad exit frame")
	}
	return int(int32(binary.BigEndian.Uint32(p))), nil
}

// Read reads one frame. The payload buffer is reused between calls when
// buf is large enough.
func Read(r io.Reader, buf []byte) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes is too large", n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, err
	}
	return hdr[0], buf, nil
}
