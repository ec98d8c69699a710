//go:build windows

package workcmd

import "os"

// watchResize: Windows consoles send no resize signal; the size given at
// the start stays.
func watchResize(_ *os.File, _ chan<- [2]uint16) (stop func()) { return func() {} }
