package stream

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	big := strings.Repeat("x", MaxFrame+10)
	io.WriteString(w.Stream(Stdout), big)
	w.Frame(Resize, ResizeFrame(24, 80))
	w.Frame(Exit, ExitFrame(-2))
	var got strings.Builder
	for {
		typ, p, err := Read(&b, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch typ {
		case Stdout:
			got.Write(p)
		case Resize:
			r, c, _ := ParseResize(p)
			if r != 24 || c != 80 {
				t.Fatalf("resize %d %d", r, c)
			}
		case Exit:
			code, _ := ParseExit(p)
			if code != -2 || got.String() != big {
				t.Fatalf("exit %d, %d bytes of stdout", code, got.Len())
			}
			return
		}
	}
}

func TestOversizedFrameRefused(t *testing.T) {
	hdr := []byte{Stdout, 0xff, 0xff, 0xff, 0xff}
	if _, _, err := Read(bytes.NewReader(hdr), nil); err == nil {
		t.Fatal("a 4 GiB frame header was accepted")
	}
}
