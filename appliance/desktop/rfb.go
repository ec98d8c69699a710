package desktop

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// viewOnly passes on what a VNC client sends (RFB 3.7 or 3.8, no
// security) but its input: key and pointer events, cut text and screen
// size changes are dropped, so a viewer sees the desktop and cannot use
// it. It is a parser of the client's side of the protocol and fails
// closed: a version, security type or message it does not know ends the
// stream with an error, rather than passing bytes it cannot place.
type viewOnly struct {
	r     *bufio.Reader
	stage int    // 0: version, 1: security type, 2: client init, 3: messages
	out   []byte // what may pass, not yet read
	err   error
}

func newViewOnly(r io.Reader) *viewOnly { return &viewOnly{r: bufio.NewReader(r)} }

// ErrRFB is a client message the view-only filter will not pass.
var ErrRFB = errors.New("view-only desktop")

func (v *viewOnly) Read(p []byte) (int, error) {
	for len(v.out) == 0 {
		if v.err != nil {
			return 0, v.err
		}
		v.out, v.err = v.next()
	}
	n := copy(p, v.out)
	v.out = v.out[n:]
	return n, nil
}

// read reads exactly n bytes.
func (v *viewOnly) read(n int) ([]byte, error) {
	b := make([]byte, n)
	_, err := io.ReadFull(v.r, b)
	return b, err
}

// next reads the client's next unit: what of it may pass (nil: nothing).
func (v *viewOnly) next() ([]byte, error) {
	switch v.stage {
	case 0:
		b, err := v.read(12)
		if err != nil {
			return nil, err
		}
		if s := string(b); s != "RFB 003.008\n" && s != "RFB 003.007\n" {
			return nil, fmt.Errorf("%w: the client speaks %q, not RFB 3.7 or 3.8", ErrRFB, s)
		}
		v.stage = 1
		return b, nil
	case 1:
		b, err := v.read(1)
		if err != nil {
			return nil, err
		}
		if b[0] != 1 {
			return nil, fmt.Errorf("%w: security type %d, not None", ErrRFB, b[0])
		}
		v.stage = 2
		return b, nil
	case 2:
		b, err := v.read(1) // ClientInit: shared or not
		v.stage = 3
		return b, err
	}
	t, err := v.r.ReadByte()
	if err != nil {
		return nil, err
	}
	var rest int
	pass := true
	switch t {
	case 0: // SetPixelFormat
		rest = 19
	case 2: // SetEncodings: padding, a count, that many 4-byte encodings
		h, err := v.read(3)
		if err != nil {
			return nil, err
		}
		body, err := v.read(4 * int(binary.BigEndian.Uint16(h[1:3])))
		return append(append([]byte{t}, h...), body...), err
	case 3: // FramebufferUpdateRequest
		rest = 9
	case 4: // KeyEvent
		rest, pass = 7, false
	case 5: // PointerEvent
		rest, pass = 5, false
	case 6: // ClientCutText: padding, a length, the text
		h, err := v.read(7)
		if err != nil {
			return nil, err
		}
		n := binary.BigEndian.Uint32(h[3:7])
		if n > 1<<20 {
			return nil, fmt.Errorf("%w: cut text of %d bytes", ErrRFB, n)
		}
		_, err = io.CopyN(io.Discard, v.r, int64(n))
		return nil, err
	case 150: // EnableContinuousUpdates
		rest = 9
	case 248: // ClientFence: padding, flags, a length, the payload
		h, err := v.read(8)
		if err != nil {
			return nil, err
		}
		body, err := v.read(int(h[7]))
		return append(append([]byte{t}, h...), body...), err
	case 251: // SetDesktopSize: changes the screen
		h, err := v.read(7)
		if err != nil {
			return nil, err
		}
		_, err = io.CopyN(io.Discard, v.r, 16*int64(h[5]))
		return nil, err
	default:
		return nil, fmt.Errorf("%w: client message type %d", ErrRFB, t)
	}
	b, err := v.read(rest)
	if err != nil || !pass {
		return nil, err
	}
	return append([]byte{t}, b...), nil
}
