// Package units holds paddockd's systemd units (embedded, written by the
// installer: paddockd.service, or paddock-node.service on a server that
// joined another's control plane) and the service's side of the systemd protocol: READY once the
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

// NodeService is paddock-node.service: the agent of a server that joined
// another's control plane (instead of paddockd.service).
//
//go:embed paddock-node.service
var NodeService []byte

// ExitRemoved is the agent's exit status once the control plane removed
// its server ('paddock node rm'): paddock-node.service does not restart
// it (RestartPreventExitStatus), since there is nothing left to serve.
const ExitRemoved = 78

// Write puts paddockd.service into dir (e.g. /etc/systemd/system) and
// reports whether anything changed.
func Write(dir string) (bool, error) { return WriteUnit(dir, "paddockd.service", Service) }

// WriteUnit puts the unit body as name into dir, and reports whether
// anything changed.
func WriteUnit(dir, name string, body []byte) (bool, error) {
	path := filepath.Join(dir, name)
	if old, err := os.ReadFile(path); err == nil && string(old) == string(body) {
		return false, nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, body, 0o644); err != nil {
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
