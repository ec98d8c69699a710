package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
)

// watchRow times a file made by a command in a box until its event
// reaches a watcher: paddock exec's touch to paddock's watch (the API's
// server-sent events), beside docker exec's touch to inotifywait run by
// docker exec in the raw container. Both include their exec's time.
func watchRow(r *runner, c *client.Client, rawBox string, n int) row {
	ctx := context.Background()
	r.paddock("exec", "bench", "--", "mkdir", "-p", "/tmp/wb")
	r.docker("exec", rawBox, "mkdir", "-p", "/tmp/wb")
	s, err := c.WatchDir(ctx, "bench", "/tmp/wb", false)
	if err != nil {
		fmt.Fprintln(os.Stderr, "watch:", err)
		os.Exit(1)
	}
	defer s.Close()
	waitFor := func(path string) {
		for {
			_, data, err := s.Next()
			if err != nil {
				fmt.Fprintln(os.Stderr, "watch:", err)
				os.Exit(1)
			}
			var e api.WatchEvent
			if json.Unmarshal(data, &e) == nil && e.Type == "created" && e.Path == path {
				return
			}
		}
	}
	p := timeIt(n, nil, func(i int) {
		path := fmt.Sprintf("/tmp/wb/f%d", i)
		r.paddock("exec", "bench", "--", "touch", path)
		waitFor(path)
	}, nil)

	cmd := exec.Command("docker", "exec", rawBox, "inotifywait", "-m", "-e", "create", "--format", "%f", "/tmp/wb")
	out, _ := cmd.StdoutPipe()
	errp, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "inotifywait:", err)
		os.Exit(1)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	stderr := bufio.NewReader(errp)
	for {
		line, err := stderr.ReadString('\n')
		if err != nil {
			fmt.Fprintln(os.Stderr, "inotifywait did not start:", err)
			os.Exit(1)
		}
		if strings.Contains(line, "Watches established") {
			break
		}
	}
	lines := bufio.NewReader(out)
	dk := timeIt(n, nil, func(i int) {
		name := fmt.Sprintf("g%d", i)
		r.docker("exec", rawBox, "touch", "/tmp/wb/"+name)
		for {
			line, err := lines.ReadString('\n')
			if err != nil || strings.TrimSpace(line) == name {
				return
			}
		}
	}, nil)
	return row{"watch: exec touch to its event", p, dk}
}
