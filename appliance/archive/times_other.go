//go:build !linux

package archive

import (
	"os"
	"time"
)

// setTimes gives the file name under root the access and change times t.
func setTimes(root *os.Root, _ *os.File, name string, t time.Time) error {
	return root.Chtimes(name, t, t)
}
