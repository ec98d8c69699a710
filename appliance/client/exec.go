package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/stream"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

// StartJob runs a command detached.
func (c *Client) StartJob(ctx context.Context, box string, p api.ExecPost) (api.Job, error) {
	var j api.Job
	return j, c.do(ctx, "POST", "/boxes/"+esc(box)+"/jobs", p, &j)
}

// Jobs lists a box's jobs.
func (c *Client) Jobs(ctx context.Context, box string) ([]api.Job, error) {
	var j []api.Job
	return j, c.do(ctx, "GET", "/boxes/"+esc(box)+"/jobs", nil, &j)
}

// Job returns one job.
func (c *Client) Job(ctx context.Context, box, id string) (api.Job, error) {
	var j api.Job
	return j, c.do(ctx, "GET", "/boxes/"+esc(box)+"/jobs/"+esc(id), nil, &j)
}

// SignalJob sends a signal (TERM, INT, KILL, ...) to a running job's
// process group.
func (c *Client) SignalJob(ctx context.Context, box, id, signal string) (api.Job, error) {
	var j api.Job
	return j, c.do(ctx, "POST", "/boxes/"+esc(box)+"/jobs/"+esc(id)+"/signal", api.SignalPost{Signal: signal}, &j)
}

// JobInput sends what r gives, as it gives it, to the input of a running
// job started with its input open; with eof, the job's input ends after
// it.
func (c *Client) JobInput(ctx context.Context, box, id string, r io.Reader, eof bool) (api.JobInput, error) {
	q := ""
	if eof {
		q = "?eof=1"
	}
	if r == nil {
		r = strings.NewReader("")
	}
	req, err := c.request(ctx, "POST", "/boxes/"+esc(box)+"/jobs/"+esc(id)+"/input"+q, r)
	if err != nil {
		return api.JobInput{}, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.send(req)
	if err != nil {
		return api.JobInput{}, err
	}
	defer resp.Body.Close()
	var in api.JobInput
	return in, json.NewDecoder(resp.Body).Decode(&in)
}

// JobLog copies a job's output to w, following it until the job ends when
// follow is set.
func (c *Client) JobLog(ctx context.Context, box, id string, follow bool, w io.Writer) error {
	q := ""
	if follow {
		q = "?follow=1"
	}
	req, err := c.request(ctx, "GET", "/boxes/"+esc(box)+"/jobs/"+esc(id)+"/log"+q, nil)
	if err != nil {
		return err
	}
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// ExecIO is the caller's side of an attached command.
type ExecIO struct {
	Stdin  io.Reader // nil: the command's stdin is closed at once
	Stdout io.Writer
	Stderr io.Writer
	Resize <-chan [2]uint16
	// Notice, when set, gets what the server says to the person (that it
	// is starting a sleeping box), apart from the command's output.
	Notice func(string)
}

// Exec runs a command attached and returns its exit code.
func (c *Client) Exec(ctx context.Context, box string, p api.ExecPost, streams ExecIO) (int, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return -1, err
	}
	req, err := c.request(ctx, "POST", "/boxes/"+esc(box)+"/exec", bytes.NewReader(b))
	if err != nil {
		return -1, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", api.UpgradeExec)
	resp, err := c.send(req)
	if err != nil {
		return -1, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body.Close()
		return -1, fmt.Errorf("server did not upgrade the exec connection (%s)", resp.Status)
	}
	conn, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return -1, errors.New("upgraded exec connection is not writable")
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	fw := stream.NewWriter(conn)
	// The end of input is sent only when the input really ended: one that
	// failed to read (or to send) ends the exec with an error, so that the
	// command never takes part of its input for the whole.
	var inErr atomic.Value
	go func() {
		if streams.Stdin != nil {
			if _, err := io.Copy(fw.Stream(stream.Stdin), streams.Stdin); err != nil {
				inErr.Store(err)
				conn.Close()
				return
			}
		}
		fw.Frame(stream.StdinEOF, nil)
	}()
	if streams.Resize != nil {
		go func() {
			for sz := range streams.Resize {
				if fw.Frame(stream.Resize, stream.ResizeFrame(sz[0], sz[1])) != nil {
					return
				}
			}
		}()
	}
	stdout, stderr := streams.Stdout, streams.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	buf := make([]byte, 64<<10)
	for {
		t, payload, err := stream.Read(conn, buf)
		if err != nil {
			if ctx.Err() != nil {
				return -1, ctx.Err()
			}
			if e, ok := inErr.Load().(error); ok {
				return -1, fmt.Errorf("sending the command's input: %w (the command got part of it, and no end of input)", e)
			}
			return -1, fmt.Errorf("the connection to paddockd broke before the command ended (it may be restarting; the command may still be running in the box): %w", err)
		}
		switch t {
		case stream.Stdout:
			if _, err := stdout.Write(payload); err != nil {
				return -1, err
			}
		case stream.Stderr:
			if _, err := stderr.Write(payload); err != nil {
				return -1, err
			}
		case stream.Exit:
			return stream.ParseExit(payload)
		case stream.Error:
			return -1, errors.New(string(payload))
		case stream.Notice:
			if streams.Notice != nil {
				streams.Notice(string(payload))
			}
		}
	}
}
