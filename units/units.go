// Package units holds paddockd's systemd unit (embedded, written by the
// installer) and the service's side of the systemd protocol: READY once the
// first reconcile is done, STOPPING on shutdown, and watchdog pings that
// come from the reconcile loop itself, so a stuck loop gets the service
// restarted.
package units

import (
	_ "embed"
	"os"
	"path/filepath"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Service is paddockd.service.
//
//go:embed paddockd.service
var Service []byte

// Write puts the unit files into dir (e.g. /etc/systemd/system) and reports
// whether anything changed.
func Write(dir string) (bool, error) {
	path := filepath.Join(dir, "paddockd.service")
	if old, err := os.ReadFile(path); err == nil && string(old) == string(Service) {
		return false, nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, Service, 0o644); err != nil {
		return false, err
	}
	return true, os.Rename(tmp, path)
}

// Notifier talks to systemd when the service runs under it; otherwise its
// calls do nothing.
type Notifier struct {
	interval time.Duration
}

// NewNotifier reads the watchdog interval systemd gave, if any.
func NewNotifier() *Notifier {
	d, _ := daemon.SdWatchdogEnabled(false)
	return &Notifier{interval: d}
}

// Ready says the service is up.
func (n *Notifier) Ready() { daemon.SdNotify(false, daemon.SdNotifyReady) }

// Stopping says the service is shutting down.
func (n *Notifier) Stopping() { daemon.SdNotify(false, daemon.SdNotifyStopping) }

// Alive pings the watchdog; call it from the loop whose progress it vouches
// for.
func (n *Notifier) Alive() {
	if n.interval > 0 {
		daemon.SdNotify(false, daemon.SdNotifyWatchdog)
	}
}

// Every is how often Alive must be called: a third of the watchdog
// interval, or zero without a watchdog.
func (n *Notifier) Every() time.Duration { return n.interval / 3 }
