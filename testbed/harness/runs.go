package harness

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Several runs of the tests or the bench may share a machine. Each run
// that makes engine objects holds a file under RunsDir, named by its pid,
// locked (flock) for as long as it lives, listing the instances it made.
// The lock goes with the process however it ends, so a file nobody holds
// is a run that is over, and only what no live run lists is swept.
const RunsDir = "/run/paddock-testbed"

var (
	runMu   sync.Mutex
	runFile *os.File
	runName string
)

// joinRun registers this process as a run, once.
func joinRun() (*os.File, error) {
	runMu.Lock()
	defer runMu.Unlock()
	if runFile != nil {
		return runFile, nil
	}
	if err := os.MkdirAll(RunsDir, 0o755); err != nil {
		return nil, err
	}
	// Locked before it takes its name, so that no sweep sees it unheld.
	tmp := filepath.Join(RunsDir, fmt.Sprintf(".new-%d", os.Getpid()))
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %v", tmp, err)
	}
	name := filepath.Join(RunsDir, fmt.Sprintf("run-%d", os.Getpid()))
	if err := os.Rename(tmp, name); err != nil {
		f.Close()
		return nil, err
	}
	runFile, runName = f, name
	return f, nil
}

// claim adds a line to this run's file: an instance, listed before any of
// its objects exist so that a sweep by another run leaves it alone, or
// "subnet PREFIX".
func claim(line string) error {
	f, err := joinRun()
	if err != nil {
		return err
	}
	runMu.Lock()
	defer runMu.Unlock()
	_, err = f.WriteString(line + "\n")
	return err
}

// liveInstances reads the instances that live runs (this one included)
// hold, and removes the files of runs that are over.
func liveInstances() map[string]bool {
	live := map[string]bool{}
	for line := range liveLines() {
		if !strings.Contains(line, " ") {
			live[line] = true
		}
	}
	return live
}

// claimedSubnets are the box subnets live runs (this one included) chose.
func claimedSubnets() []string {
	var out []string
	for line := range liveLines() {
		if s, ok := strings.CutPrefix(line, "subnet "); ok {
			out = append(out, s)
		}
	}
	return out
}

// liveLines reads the lines of the files of live runs (this one included),
// and removes the files of runs that are over.
func liveLines() map[string]bool {
	live := map[string]bool{}
	paths, _ := filepath.Glob(filepath.Join(RunsDir, "run-*"))
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		held := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil
		if p == runFileName() {
			held = true
		}
		if held {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if line := strings.TrimSpace(sc.Text()); line != "" {
					live[line] = true
				}
			}
		} else {
			os.Remove(p)
		}
		f.Close()
	}
	return live
}

func runFileName() string {
	runMu.Lock()
	defer runMu.Unlock()
	return runName
}
