package harness

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RestartEngine stops the Docker engine and starts it again, as an engine
// upgrade or systemd's restart after a crash would: the engine stops the
// containers it runs on the way down and starts none of them again (they
// have no restart policy). Under systemd it asks systemd; otherwise it
// sends dockerd SIGTERM and starts the same command line again, detached,
// its output appended to /var/log/dockerd.log. It returns once the engine
// answers again.
func RestartEngine() error {
	if exec.Command("systemctl", "is-active", "--quiet", "docker").Run() == nil {
		if out, err := exec.Command("systemctl", "restart", "docker").CombinedOutput(); err != nil {
			return fmt.Errorf("systemctl restart docker: %v: %s", err, out)
		}
		return waitEngine(60 * time.Second)
	}
	out, err := exec.Command("pidof", "dockerd").Output()
	if err != nil {
		return fmt.Errorf("no dockerd is running: %v", err)
	}
	fields := strings.Fields(string(out))
	if len(fields) != 1 {
		return fmt.Errorf("want one dockerd, found pids %v", fields)
	}
	pid, _ := strconv.Atoi(fields[0])
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return err
	}
	argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.Now().Add(90 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("dockerd (pid %d) did not stop within 90s", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
	logf, err := os.OpenFile("/var/log/dockerd.log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %v again: %v", argv, err)
	}
	go cmd.Wait() // reaps it should it end while the tests run
	return waitEngine(60 * time.Second)
}

func waitEngine(within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var stderr bytes.Buffer
		cmd := exec.Command("docker", "info", "--format", "{{.ServerVersion}}")
		cmd.Stderr = &stderr
		if cmd.Run() == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the engine did not answer within %s after its restart (see /var/log/dockerd.log): %s", within, strings.TrimSpace(stderr.String()))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
