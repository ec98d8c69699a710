//go:build !windows

package workcmd

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"
)

// watchResize sends the terminal's size on every SIGWINCH until stopped.
func watchResize(f *os.File, out chan<- [2]uint16) (stop func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-sig:
				if cols, rows, err := term.GetSize(int(f.Fd())); err == nil {
					select {
					case out <- [2]uint16{uint16(rows), uint16(cols)}:
					default:
					}
				}
			}
		}
	}()
	return func() { signal.Stop(sig); close(done) }
}
