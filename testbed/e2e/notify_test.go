package e2e

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// paddockd speaks systemd's notify protocol: READY after its first
// reconcile, watchdog pings from the reconcile loop, STOPPING on shutdown.
func TestSystemdNotify(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	wait := func(what string, within time.Duration) {
		t.Helper()
		deadline := time.After(within)
		for {
			select {
			case m := <-got:
				if strings.Contains(m, what) {
					return
				}
			case <-deadline:
				t.Fatalf("no %s within %s", what, within)
			}
		}
	}

	d := newDaemon(t, dir)
	d.Env = []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=900000"}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Cleanup)
	wait("READY=1", 10*time.Second)
	// Pings come every third of the interval: several in two seconds.
	wait("WATCHDOG=1", 2*time.Second)
	wait("WATCHDOG=1", 2*time.Second)
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	wait("STOPPING=1", 5*time.Second)
}
