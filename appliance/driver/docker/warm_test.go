package docker

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"

	"github.com/moby/moby/api/pkg/stdcopy"
)

func frame(stream byte, s string) []byte {
	h := []byte{stream, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(h[4:], uint32(len(s)))
	return append(h, s...)
}

// The engine copies stdout and stderr apart: the command's stderr may
// come before the marker, and its stdout in the marker's frame. Neither
// is lost, and both come out where they belong.
func TestFirstOutKeepsWhatCameWithTheMarker(t *testing.T) {
	var stream []byte
	stream = append(stream, frame(2, "err first\n")...)
	stream = append(stream, frame(1, "Gout with it\n")...)
	stream = append(stream, frame(1, "later\n")...)
	r := bytes.NewReader(stream)
	m, replay, err := firstOut(r)
	if err != nil || m != 'G' {
		t.Fatalf("firstOut: %q, %v", m, err)
	}
	var out, errb strings.Builder
	if _, err := stdcopy.StdCopy(&out, &errb, io.MultiReader(bytes.NewReader(replay), r)); err != nil {
		t.Fatal(err)
	}
	if out.String() != "out with it\nlater\n" || errb.String() != "err first\n" {
		t.Fatalf("stdout %q, stderr %q", out.String(), errb.String())
	}
	if _, _, err := firstOut(bytes.NewReader(frame(2, strings.Repeat("x", maxReplay+1)))); err == nil {
		t.Fatal("firstOut kept more than maxReplay")
	}
}
