package units

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/testbed/harness"
)

func TestUnitVerifies(t *testing.T) {
	if !strings.Contains(string(Service), "Type=notify") || !strings.Contains(string(Service), "WatchdogSec=") {
		t.Fatal("the unit is not a notify service with a watchdog")
	}
	if !strings.Contains(string(NodeService), fmt.Sprintf("\nRestartPreventExitStatus=%d\n", ExitRemoved)) {
		t.Fatalf("the node unit restarts an agent whose server was removed (exit %d)", ExitRemoved)
	}
	dir := t.TempDir()
	changed, err := Write(dir)
	if err != nil || !changed {
		t.Fatalf("first write: %v %v", changed, err)
	}
	if changed, err := Write(dir); err != nil || changed {
		t.Fatalf("second write changed something: %v %v", changed, err)
	}
	analyze := harness.Tool(t, "systemd-analyze")
	// verify checks that the binaries the unit names exist: point it at a
	// stub in place of /usr/local/bin/paddockd (not installed on test
	// machines); the rest of the unit is verified as written.
	stub := filepath.Join(t.TempDir(), "paddockd")
	os.WriteFile(stub, []byte("#!/bin/sh\n"), 0o755)
	for name, body := range map[string][]byte{"paddockd.service": Service, "paddock-node.service": NodeService} {
		unit := filepath.Join(t.TempDir(), name)
		os.WriteFile(unit, []byte(strings.ReplaceAll(string(body), "/usr/local/bin/paddockd", stub)), 0o644)
		out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "" {
			t.Fatalf("systemd-analyze verify %s: %v\n%s", name, err, out)
		}
	}
	// The node agent comes back by itself after any end, and serves what
	// the server joined as.
	if !strings.Contains(string(NodeService), "Restart=always") || !strings.Contains(string(NodeService), "ExecStart=/usr/local/bin/paddockd node\n") {
		t.Fatal("the node unit does not restart always, or does not run 'paddockd node'")
	}
}
