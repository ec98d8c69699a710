// Package capped is a buffer that keeps what is written to it up to a
// bound, and says whether more came: what a command's output is read
// into when a box may answer without end.
package capped

import "bytes"

// Buffer keeps up to Max bytes; past them it takes the rest without
// keeping it (a write never fails) and says so in Over.
type Buffer struct {
	bytes.Buffer
	Max  int
	Over bool
}

func (b *Buffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.Max {
		b.Over = true
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
