package desktop

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// A viewer's client stream keeps its handshake, pixel format, encodings,
// update requests, continuous updates and fences, and loses its keys,
// pointer, cut text and screen size changes; a version, security type or
// message the filter does not know ends the stream.
func TestViewOnlyDropsInput(t *testing.T) {
	var in, want bytes.Buffer
	both := func(b ...byte) { in.Write(b); want.Write(b) }
	dropped := func(b ...byte) { in.Write(b) }
	both([]byte("RFB 003.008\n")...)
	both(1)                                                  // security: None
	both(1)                                                  // ClientInit: shared
	both(append([]byte{0, 0, 0, 0}, make([]byte, 16)...)...) // SetPixelFormat
	both(2, 0, 0, 2, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0x21)     // SetEncodings, 2
	both(3, 1, 0, 0, 0, 0, 0x05, 0, 0x03, 0x20)              // FramebufferUpdateRequest
	dropped(4, 1, 0, 0, 0, 0, 0, 0x61)                       // KeyEvent: 'a' down
	dropped(5, 1, 0, 10, 0, 20)                              // PointerEvent: click at 10,20
	cut := []byte{6, 0, 0, 0, 0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'}
	dropped(cut...)                             // ClientCutText
	dropped(251, 0, 4, 0, 3, 0, 1, 0)           // SetDesktopSize, one screen:
	dropped(make([]byte, 16)...)                // its 16 bytes
	both(150, 1, 0, 0, 0, 0, 0, 10, 0, 10)      // EnableContinuousUpdates
	both(248, 0, 0, 0, 0, 0, 0, 1, 2, 'o', 'k') // ClientFence, 2 bytes
	both(3, 1, 0, 0, 0, 0, 0x05, 0, 0x03, 0x20) // FramebufferUpdateRequest
	got, err := io.ReadAll(newViewOnly(&in))
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("passed %d bytes (%v), want %d:\n%x\n%x", len(got), err, want.Len(), got, want.Bytes())
	}
	for name, stream := range map[string][]byte{
		"RFB 3.3":         []byte("RFB 003.003\n"),
		"VNC auth":        append([]byte("RFB 003.008\n"), 2),
		"an unknown type": append([]byte("RFB 003.008\n\x01\x01"), 99, 0, 0, 0),
		"huge cut text":   append([]byte("RFB 003.008\n\x01\x01"), 6, 0, 0, 0, 0x10, 0, 0, 0),
	} {
		_, err := io.ReadAll(newViewOnly(bytes.NewReader(stream)))
		if !errors.Is(err, ErrRFB) {
			t.Errorf("%s: %v, want the stream ended", name, err)
		}
	}
	// Nothing of an input passes even when it comes a byte at a time.
	var slow bytes.Buffer
	slow.WriteString("RFB 003.008\n\x01\x01")
	binary.Write(&slow, binary.BigEndian, [8]byte{4, 1, 0, 0, 0, 0, 0, 0x62})
	got, _ = io.ReadAll(newViewOnly(io.LimitReader(&oneByte{&slow}, 1<<20)))
	if string(got) != "RFB 003.008\n\x01\x01" {
		t.Fatalf("a key event read a byte at a time passed: %x", got)
	}
}

// oneByte reads one byte at a time.
type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:1]) }
