// Package client is the Go client of paddockd's HTTP API, used by the CLI,
// the tests and the benchmarks. It depends only on the standard library and
// the API's wire packages, so the CLI stays free of engine code.
//
// A server address is an http:// or https:// URL, or unix:///path/to.sock.
package client

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/stream"
)

// Client talks to one paddockd.
type Client struct {
	base  string // scheme://host, without a trailing slash
	token string
	hc    *http.Client
}

// New makes a client for server, authenticating with token.
func New(server, token string) (*Client, error) { return NewWithCA(server, token, nil) }

// NewWithCA is New trusting, for https, the certificate authorities in
// caPEM as well as the system's (a server on a private network, or a test
// machine, whose certificate comes from Caddy's internal CA).
func NewWithCA(server, token string, caPEM []byte) (*Client, error) {
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("bad server address %q: %w", server, err)
	}
	c := &Client{token: token}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return nil, fmt.Errorf("bad server address %q: no host", server)
		}
		c.base = u.Scheme + "://" + u.Host
		tr := &http.Transport{Proxy: http.ProxyFromEnvironment, WriteBufferSize: streamBuffer, ReadBufferSize: streamBuffer}
		if len(caPEM) > 0 {
			cfg, err := pinnedFirst(caPEM)
			if err != nil {
				return nil, err
			}
			tr.TLSClientConfig = cfg
		}
		c.hc = &http.Client{Transport: tr}
	case "unix":
		sock := u.Path
		if sock == "" {
			return nil, fmt.Errorf("bad server address %q: no socket path", server)
		}
		c.base = "http://paddock"
		c.hc = &http.Client{Transport: &http.Transport{
			WriteBufferSize: streamBuffer, ReadBufferSize: streamBuffer,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			},
		}}
	default:
		return nil, fmt.Errorf("bad server address %q: use http://, https:// or unix://", server)
	}
	return c, nil
}

// pinnedFirst is a TLS configuration that trusts the authorities in caPEM
// and the system's: a server's chain is verified against caPEM's first,
// and only when that fails against the system's, read then. Reading the
// system's (some 140 certificates, parsed) took 19-57 ms on a test
// machine, at every start of the CLI; a server with a certificate of its
// own CA (the usual case when one is given) never needs them.
//
// Go verifies nothing itself here (InsecureSkipVerify): VerifyConnection
// does all of it, the name as well as the chain, as crypto/tls's own
// example of a custom verification does.
func pinnedFirst(caPEM []byte) (*tls.Config, error) {
	pinned := x509.NewCertPool()
	if !pinned.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("the CA certificate is not PEM")
	}
	system := sync.OnceValue(func() *x509.CertPool {
		pool, err := systemRoots()
		if err != nil {
			return x509.NewCertPool()
		}
		return pool
	})
	verify := func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the server sent no certificate")
		}
		opts := x509.VerifyOptions{DNSName: cs.ServerName, Roots: pinned, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		if err == nil {
			return nil
		}
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) {
			return err // a wrong name or an expired certificate: no other roots help
		}
		opts.Roots = system()
		_, err = cs.PeerCertificates[0].Verify(opts)
		return err
	}
	return &tls.Config{InsecureSkipVerify: true, VerifyConnection: verify}, nil
}

// systemRoots reads the system's certificate authorities (a variable for
// the tests).
var systemRoots = x509.SystemCertPool

// streamBuffer is the size of the transport's writes and reads: a push's
// archive goes out in 256 KiB writes (TLS records of 16 KiB), not the
// default 4 KiB.
const streamBuffer = 256 << 10

func (c *Client) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/"+api.Version+path, body)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// decodeError reads an API error body.
func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e api.Error
	if json.Unmarshal(b, &e) == nil && e.Message != "" {
		return &e
	}
	if resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout {
		// A proxy in front of paddockd (Caddy) answers for it.
		return &api.Error{Code: api.CodeInternal, Message: fmt.Sprintf("paddockd did not answer (%s from the proxy in front of it): it may be restarting; the request may not have been carried out", resp.Status)}
	}
	return &api.Error{Code: api.CodeInternal, Message: fmt.Sprintf("server answered %s: %s", resp.Status, strings.TrimSpace(string(b)))}
}

func (c *Client) send(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, fmt.Errorf("cannot reach paddockd at %s: %w", c.base, err)
		}
		if req.Context().Err() == nil {
			return nil, fmt.Errorf("the connection to paddockd at %s broke before it answered (it may be restarting; the request may not have been carried out): %w", c.base, err)
		}
		return nil, err
	}
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

// do sends a JSON request and decodes a JSON answer into out (if not nil).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func esc(s string) string { return url.PathEscape(s) }

// Whoami checks the token.
func (c *Client) Whoami(ctx context.Context) (api.Whoami, error) {
	var w api.Whoami
	return w, c.do(ctx, "GET", "/whoami", nil, &w)
}

// CreateBox creates a box.
func (c *Client) CreateBox(ctx context.Context, p api.BoxPost) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "POST", "/boxes", p, &b)
}

// Boxes lists boxes.
func (c *Client) Boxes(ctx context.Context) ([]api.Box, error) {
	return c.BoxesLabelled(ctx, nil)
}

// BoxesLabelled lists the boxes that have every one of labels.
func (c *Client) BoxesLabelled(ctx context.Context, labels map[string]string) ([]api.Box, error) {
	q := url.Values{}
	for k, v := range labels {
		q.Add("label", k+"="+v)
	}
	path := "/boxes"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var bs []api.Box
	return bs, c.do(ctx, "GET", path, nil, &bs)
}

// Box returns one box.
func (c *Client) Box(ctx context.Context, name string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "GET", "/boxes/"+esc(name), nil, &b)
}

// BoxDetail is Box with what only the running box can tell (its Docker
// engine), which costs a command in the box.
func (c *Client) BoxDetail(ctx context.Context, name string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "GET", "/boxes/"+esc(name)+"?detail=1", nil, &b)
}

// RemoveBox removes a box.
func (c *Client) RemoveBox(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/boxes/"+esc(name), nil, nil)
}

// StopBox snapshots and stops a box.
func (c *Client) StopBox(ctx context.Context, name string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "POST", "/boxes/"+esc(name)+"/stop", nil, &b)
}

// StartBox starts a box.
func (c *Client) StartBox(ctx context.Context, name string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "POST", "/boxes/"+esc(name)+"/start", nil, &b)
}

// Snapshot snapshots a box.
func (c *Client) Snapshot(ctx context.Context, name string) (api.Snapshot, error) {
	var s api.Snapshot
	return s, c.do(ctx, "POST", "/boxes/"+esc(name)+"/snapshots", nil, &s)
}

// Snapshots lists a box's snapshots.
func (c *Client) Snapshots(ctx context.Context, name string) ([]api.Snapshot, error) {
	var s []api.Snapshot
	return s, c.do(ctx, "GET", "/boxes/"+esc(name)+"/snapshots", nil, &s)
}

// Restore brings back a snapshot.
func (c *Client) Restore(ctx context.Context, name, snapshot string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "POST", "/boxes/"+esc(name)+"/restore", api.RestorePost{Snapshot: snapshot}, &b)
}

// DrainNode drains a server: its boxes move to others.
func (c *Client) DrainNode(ctx context.Context, name string) (api.Drained, error) {
	var d api.Drained
	return d, c.do(ctx, "POST", "/nodes/"+esc(name)+"/drain", nil, &d)
}

// UndrainNode lets new boxes go to a drained server again.
func (c *Client) UndrainNode(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/nodes/"+esc(name)+"/drain", nil, nil)
}

// MoveBox moves a box to another server.
func (c *Client) MoveBox(ctx context.Context, name, node string, with ...string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "POST", "/boxes/"+esc(name)+"/move", api.MovePost{Node: node, With: with}, &b)
}

// MoveDrive moves a drive, and the boxes with (all those that mount it),
// to another server.
func (c *Client) MoveDrive(ctx context.Context, name, node string, with ...string) (api.Drive, error) {
	var d api.Drive
	return d, c.do(ctx, "POST", "/drives/"+esc(name)+"/move", api.MovePost{Node: node, With: with}, &d)
}

// Fork makes a new box from a snapshot of another.
func (c *Client) Fork(ctx context.Context, name string, p api.ForkPost) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "POST", "/boxes/"+esc(name)+"/fork", p, &b)
}

// Drives lists drives.
func (c *Client) Drives(ctx context.Context) ([]api.Drive, error) {
	var d []api.Drive
	return d, c.do(ctx, "GET", "/drives", nil, &d)
}

// CreateDrive makes a drive.
func (c *Client) CreateDrive(ctx context.Context, name string) (api.Drive, error) {
	var d api.Drive
	return d, c.do(ctx, "POST", "/drives", api.DrivePost{Name: name}, &d)
}

// RemoveDrive removes a drive and its data.
func (c *Client) RemoveDrive(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/drives/"+esc(name), nil, nil)
}

// BackupDrive returns a tar stream of a drive's contents.
func (c *Client) BackupDrive(ctx context.Context, name string) (io.ReadCloser, error) {
	return c.getTar(ctx, "/drives/"+esc(name)+"/archive")
}

// RestoreDrive replaces a drive's contents with a tar stream's.
func (c *Client) RestoreDrive(ctx context.Context, name string, tar io.Reader) error {
	return c.putTar(ctx, "/drives/"+esc(name)+"/archive", tar)
}

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

// DesktopActions runs actions on a box's desktop, in order, and returns
// each one's result and, when asked, a screenshot.
func (c *Client) DesktopActions(ctx context.Context, box string, p api.DesktopActionsPost) (api.DesktopActionsResult, error) {
	var r api.DesktopActionsResult
	return r, c.do(ctx, "POST", "/boxes/"+esc(box)+"/desktop/actions", p, &r)
}

// EventStream reads server-sent events.
type EventStream struct {
	body io.ReadCloser
	r    *bufio.Reader
}

// Next is the next event's name and data; io.EOF once the stream ended.
func (s *EventStream) Next() (string, []byte, error) {
	var name string
	var data []byte
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" {
				return "", nil, io.EOF
			}
			if err != io.EOF {
				return "", nil, err
			}
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if name != "" || data != nil {
				return name, data, nil
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "data:"):
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(line[len("data:"):], " ")...)
		}
		if err == io.EOF {
			return "", nil, io.ErrUnexpectedEOF
		}
	}
}

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }

// WatchDir watches path in a box (recursive: the folders under it too)
// and returns its events as they come; the first is ready.
func (c *Client) WatchDir(ctx context.Context, box, path string, recursive bool) (*EventStream, error) {
	q := url.Values{"path": {path}}
	if recursive {
		q.Set("recursive", "1")
	}
	req, err := c.request(ctx, "GET", "/boxes/"+esc(box)+"/watch?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	return &EventStream{body: resp.Body, r: bufio.NewReader(resp.Body)}, nil
}

// RunCode runs code in a box's code interpreter.
func (c *Client) RunCode(ctx context.Context, box string, p api.RunPost) (api.RunResult, error) {
	var r api.RunResult
	return r, c.do(ctx, "POST", "/boxes/"+esc(box)+"/run", p, &r)
}

// Contexts lists the contexts of a box's code interpreter.
func (c *Client) Contexts(ctx context.Context, box string) ([]api.CodeContext, error) {
	var cs []api.CodeContext
	return cs, c.do(ctx, "GET", "/boxes/"+esc(box)+"/contexts", nil, &cs)
}

// CreateContext starts a context of a box's code interpreter.
func (c *Client) CreateContext(ctx context.Context, box string, p api.ContextPost) (api.CodeContext, error) {
	var cc api.CodeContext
	return cc, c.do(ctx, "POST", "/boxes/"+esc(box)+"/contexts", p, &cc)
}

// RestartContext starts a context's kernel again.
func (c *Client) RestartContext(ctx context.Context, box, name string) (api.CodeContext, error) {
	var cc api.CodeContext
	return cc, c.do(ctx, "POST", "/boxes/"+esc(box)+"/contexts/"+esc(name)+"/restart", nil, &cc)
}

// RemoveContext ends a context's kernel and forgets it.
func (c *Client) RemoveContext(ctx context.Context, box, name string) error {
	return c.do(ctx, "DELETE", "/boxes/"+esc(box)+"/contexts/"+esc(name), nil, nil)
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

// Push sends a tar stream to be extracted into dir in the box.
func (c *Client) Push(ctx context.Context, box, dir string, tar io.Reader) error {
	return c.putTar(ctx, "/boxes/"+esc(box)+"/files?path="+url.QueryEscape(dir), tar)
}

// Pull returns a tar stream of path in the box.
func (c *Client) Pull(ctx context.Context, box, path string) (io.ReadCloser, error) {
	return c.getTar(ctx, "/boxes/"+esc(box)+"/files?path="+url.QueryEscape(path))
}

func (c *Client) putTar(ctx context.Context, path string, tar io.Reader) error {
	req, err := c.request(ctx, "PUT", path, tar)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func (c *Client) getTar(ctx context.Context, path string) (io.ReadCloser, error) {
	req, err := c.request(ctx, "GET", path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
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

// ReconcileResult is what one reconcile pass changed.
type ReconcileResult struct {
	Changes []string          `json:"changes"`
	Errors  map[string]string `json:"errors,omitempty"`
}

// Reconcile runs one reconcile pass now.
func (c *Client) Reconcile(ctx context.Context) (ReconcileResult, error) {
	var r ReconcileResult
	return r, c.do(ctx, "POST", "/reconcile", nil, &r)
}

// Plan asks for a project plan.
func (c *Client) Plan(ctx context.Context, req api.PlanRequest) (api.Plan, error) {
	var p api.Plan
	return p, c.do(ctx, "POST", "/plan", req, &p)
}

// Apply applies a project plan made at req.Serial.
func (c *Client) Apply(ctx context.Context, req api.ApplyRequest) (api.ApplyResult, error) {
	var r api.ApplyResult
	return r, c.do(ctx, "POST", "/apply", req, &r)
}

// SetupDone reports the outcome of a box's push and setup steps.
func (c *Client) SetupDone(ctx context.Context, box string, p api.SetupPost) error {
	return c.do(ctx, "POST", "/boxes/"+esc(box)+"/setup", p, nil)
}

// SetPolicy changes a box's policy.
func (c *Client) SetPolicy(ctx context.Context, box, policy string) (api.Box, error) {
	var b api.Box
	return b, c.do(ctx, "PUT", "/boxes/"+esc(box)+"/policy", api.PolicyPut{Policy: policy}, &b)
}

// PolicyReport returns a box's drop counters and DNS decisions.
func (c *Client) PolicyReport(ctx context.Context, box string) (api.PolicyReport, error) {
	var r api.PolicyReport
	return r, c.do(ctx, "GET", "/boxes/"+esc(box)+"/policy", nil, &r)
}

// Policies lists named policies.
func (c *Client) Policies(ctx context.Context) ([]api.Policy, error) {
	var p []api.Policy
	return p, c.do(ctx, "GET", "/policies", nil, &p)
}

// CreatePolicy declares a named policy.
func (c *Client) CreatePolicy(ctx context.Context, p api.PolicyPost) (api.Policy, error) {
	var out api.Policy
	return out, c.do(ctx, "POST", "/policies", p, &out)
}

// RemovePolicy removes a named policy.
func (c *Client) RemovePolicy(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/policies/"+esc(name), nil, nil)
}

// Screenshot returns a PNG of a box's display.
func (c *Client) Screenshot(ctx context.Context, box string) ([]byte, error) {
	req, err := c.request(ctx, "GET", "/boxes/"+esc(box)+"/screenshot", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// Prompt hands an agent a task in a box, as a job.
func (c *Client) Prompt(ctx context.Context, box string, p api.PromptPost) (api.Job, error) {
	var j api.Job
	return j, c.do(ctx, "POST", "/boxes/"+esc(box)+"/prompt", p, &j)
}

// Agents lists the agent table.
func (c *Client) Agents(ctx context.Context) ([]api.Agent, error) {
	var a []api.Agent
	return a, c.do(ctx, "GET", "/agents", nil, &a)
}

// BoxAgents tells which agents a box has and whether each has credentials.
func (c *Client) BoxAgents(ctx context.Context, box string) ([]api.BoxAgent, error) {
	var a []api.BoxAgent
	return a, c.do(ctx, "GET", "/boxes/"+esc(box)+"/agents", nil, &a)
}

// Secrets lists secret names.
func (c *Client) Secrets(ctx context.Context) ([]api.Secret, error) {
	var s []api.Secret
	return s, c.do(ctx, "GET", "/secrets", nil, &s)
}

// SetSecret stores a secret of the caller's; shared (owners only) lets
// every user's boxes use it.
//
// With brk, the secret is brokered: boxes get a stand-in for it.
func (c *Client) SetSecret(ctx context.Context, name string, value []byte, shared bool, brk *api.SecretBroker) error {
	q := url.Values{}
	if shared {
		q.Set("shared", "true")
	}
	if brk != nil {
		q["broker"] = brk.Hosts
		if brk.Header != "" {
			q.Set("header", brk.Header)
		}
		if brk.Limit != "" {
			q.Set("limit", brk.Limit)
		}
	}
	path := "/secrets/" + esc(name)
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	req, err := c.request(ctx, "PUT", path, bytes.NewReader(value))
	if err != nil {
		return err
	}
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// SetSecretBroker changes how a secret is brokered, keeping its value
// (no hosts: not brokered).
func (c *Client) SetSecretBroker(ctx context.Context, name string, brk api.SecretBroker) error {
	return c.do(ctx, "PUT", "/secrets/"+esc(name)+"/broker", brk, nil)
}

// RemoveSecret removes a secret.
func (c *Client) RemoveSecret(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/secrets/"+esc(name), nil, nil)
}

// AddKey registers an SSH public key.
func (c *Client) AddKey(ctx context.Context, p api.KeyPost) (api.Key, error) {
	var k api.Key
	return k, c.do(ctx, "POST", "/keys", p, &k)
}

// Keys lists registered SSH keys.
func (c *Client) Keys(ctx context.Context) ([]api.Key, error) {
	var k []api.Key
	return k, c.do(ctx, "GET", "/keys", nil, &k)
}

// RemoveKey removes an SSH key by name or fingerprint.
func (c *Client) RemoveKey(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/keys/"+esc(name), nil, nil)
}

// DesktopTicket asks for a single-use ticket to a box's desktop page.
func (c *Client) DesktopTicket(ctx context.Context, box string) (api.DesktopTicket, error) {
	var t api.DesktopTicket
	return t, c.do(ctx, "POST", "/boxes/"+esc(box)+"/desktop", nil, &t)
}

// SignInLink asks for a single-use link that signs a browser in to the
// dashboard as this client's user (on box's page, if one is named).
func (c *Client) SignInLink(ctx context.Context, box string) (api.SignInLink, error) {
	var l api.SignInLink
	return l, c.do(ctx, "POST", "/signin-links", api.SignInPost{Box: box}, &l)
}

// PreviewLink asks for a single-use link that signs a browser in and
// lands it on the preview of a port of a box.
func (c *Client) PreviewLink(ctx context.Context, box string, port int) (api.SignInLink, error) {
	var l api.SignInLink
	return l, c.do(ctx, "POST", "/signin-links", api.SignInPost{Box: box, Port: port}, &l)
}

// BoxPorts lists what listens in a running box, with preview URLs.
func (c *Client) BoxPorts(ctx context.Context, box string) ([]api.Port, error) {
	var ps []api.Port
	return ps, c.do(ctx, "GET", "/boxes/"+esc(box)+"/ports", nil, &ps)
}

// Grants lists who a box is shared with.
func (c *Client) Grants(ctx context.Context, box string) ([]api.Grant, error) {
	var gs []api.Grant
	return gs, c.do(ctx, "GET", "/boxes/"+esc(box)+"/grants", nil, &gs)
}

// Share shares a box with a user as access (viewer or member).
func (c *Client) Share(ctx context.Context, box, user, access string) (api.Grant, error) {
	var g api.Grant
	return g, c.do(ctx, "PUT", "/boxes/"+esc(box)+"/grants/"+esc(user), api.GrantPut{Access: access}, &g)
}

// Unshare stops sharing a box with a user.
func (c *Client) Unshare(ctx context.Context, box, user string) error {
	return c.do(ctx, "DELETE", "/boxes/"+esc(box)+"/grants/"+esc(user), nil, nil)
}

// Metrics is the newest sample of each running box the caller sees.
func (c *Client) Metrics(ctx context.Context) ([]api.Sample, error) {
	var ms []api.Sample
	return ms, c.do(ctx, "GET", "/metrics", nil, &ms)
}

// BoxMetrics is a box's samples since a duration back (90m, 1h, 2d) or a
// time ("": the server's default, 15 minutes).
func (c *Client) BoxMetrics(ctx context.Context, box, since string) (api.BoxMetrics, error) {
	var m api.BoxMetrics
	p := "/boxes/" + esc(box) + "/metrics"
	if since != "" {
		p += "?since=" + url.QueryEscape(since)
	}
	return m, c.do(ctx, "GET", p, nil, &m)
}

// Base is the server's base URL (http://host:port); for a unix socket,
// http://paddock.
func (c *Client) Base() string { return c.base }

// CreateToken makes an API token; its value is in the answer only.
func (c *Client) CreateToken(ctx context.Context, name string) (api.TokenCreated, error) {
	var t api.TokenCreated
	return t, c.do(ctx, "POST", "/tokens", api.TokenPost{Name: name}, &t)
}

// Tokens lists tokens.
func (c *Client) Tokens(ctx context.Context) ([]api.TokenInfo, error) {
	var t []api.TokenInfo
	return t, c.do(ctx, "GET", "/tokens", nil, &t)
}

// RevokeToken deletes a token.
func (c *Client) RevokeToken(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/tokens/"+esc(name), nil, nil)
}

// Users lists users.
func (c *Client) Users(ctx context.Context) ([]api.User, error) {
	var u []api.User
	return u, c.do(ctx, "GET", "/users", nil, &u)
}

// Invite makes an invitation link.
func (c *Client) Invite(ctx context.Context, role string) (api.InviteCreated, error) {
	var i api.InviteCreated
	return i, c.do(ctx, "POST", "/users/invites", api.InvitePost{Role: role}, &i)
}

// RemoveUser removes a user.
func (c *Client) RemoveUser(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/users/"+esc(name), nil, nil)
}

// Logout revokes the client's token.
func (c *Client) Logout(ctx context.Context) error {
	return c.do(ctx, "POST", "/logout", nil, nil)
}

// DeviceStart begins a device login for a token called name.
func (c *Client) DeviceStart(ctx context.Context, name string) (api.DeviceCode, error) {
	var d api.DeviceCode
	return d, c.do(ctx, "POST", "/login/device", api.DevicePost{Name: name}, &d)
}

// DeviceWait polls until the device login is approved (returning its
// token), denied or expired.
func (c *Client) DeviceWait(ctx context.Context, d api.DeviceCode) (string, error) {
	interval := time.Duration(d.Interval) * time.Second
	if interval <= 0 {
		interval = 2 * time.Second
	}
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(interval):
		}
		var t api.DeviceToken
		err := c.do(ctx, "POST", "/login/device/token", api.DeviceTokenPost{DeviceCode: d.DeviceCode}, &t)
		var ae *api.Error
		switch {
		case err == nil:
			return t.Token, nil
		case errors.As(err, &ae) && ae.Code == api.CodePending:
		case errors.As(err, &ae) && ae.Code == api.CodeSlowDown:
			interval += time.Second
		default:
			return "", err
		}
	}
}

// Nodes lists the servers boxes are placed on (the owner's).
func (c *Client) Nodes(ctx context.Context) ([]api.Node, error) {
	var ns []api.Node
	return ns, c.do(ctx, "GET", "/nodes", nil, &ns)
}

// NodeJoin makes a one-time join token and its command (the owner's).
func (c *Client) NodeJoin(ctx context.Context) (api.NodeJoin, error) {
	var j api.NodeJoin
	return j, c.do(ctx, "POST", "/nodes/joins", nil, &j)
}

// LabelNode replaces a server's labels (the owner's).
func (c *Client) LabelNode(ctx context.Context, name string, labels map[string]string) (api.Node, error) {
	var n api.Node
	return n, c.do(ctx, "PUT", "/nodes/"+esc(name)+"/labels", api.NodeLabels{Labels: labels}, &n)
}

// SetNodePool replaces a server's own warm pool (the owner's).
func (c *Client) SetNodePool(ctx context.Context, name string, pool map[string]int) (api.Node, error) {
	var n api.Node
	return n, c.do(ctx, "PUT", "/nodes/"+esc(name)+"/pool", api.NodePool{Pool: pool}, &n)
}

// RemoveNode forgets a server that holds nothing (the owner's).
func (c *Client) RemoveNode(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/nodes/"+esc(name), nil, nil)
}

// AuditQuery picks audit log entries; zero fields pick all.
type AuditQuery struct {
	Box, User, Action, Since string
	After                    int64
	Limit                    int
}

// Audit lists the audit log entries the caller may see, oldest first.
func (c *Client) Audit(ctx context.Context, q AuditQuery) ([]api.AuditEntry, error) {
	v := url.Values{}
	for k, s := range map[string]string{"box": q.Box, "user": q.User, "action": q.Action, "since": q.Since} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.After > 0 {
		v.Set("after", strconv.FormatInt(q.After, 10))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var es []api.AuditEntry
	return es, c.do(ctx, "GET", "/audit?"+v.Encode(), nil, &es)
}

// VerifyAudit checks the audit log's chain (the owner or an admin).
func (c *Client) VerifyAudit(ctx context.Context, seen *api.AuditMark) (api.AuditCheck, error) {
	var r api.AuditCheck
	q := ""
	if seen != nil {
		q = "?seen=" + url.QueryEscape(seen.String())
	}
	return r, c.do(ctx, "GET", "/audit/verify"+q, nil, &r)
}

// Quota is a user's quota and use (a member may read their own).
func (c *Client) Quota(ctx context.Context, user string) (api.UserQuota, error) {
	var q api.UserQuota
	return q, c.do(ctx, "GET", "/users/"+esc(user)+"/quota", nil, &q)
}

// SetQuota changes a member's quota (the owner or an admin).
func (c *Client) SetQuota(ctx context.Context, user string, p api.QuotaPut) (api.UserQuota, error) {
	var q api.UserQuota
	return q, c.do(ctx, "PUT", "/users/"+esc(user)+"/quota", p, &q)
}

// Groups lists the groups (the owner's and admins').
func (c *Client) Groups(ctx context.Context) ([]api.Group, error) {
	var gs []api.Group
	return gs, c.do(ctx, "GET", "/groups", nil, &gs)
}

// AddToGroup puts a user in a group.
func (c *Client) AddToGroup(ctx context.Context, group, user string) error {
	return c.do(ctx, "PUT", "/groups/"+esc(group)+"/members/"+esc(user), nil, nil)
}

// RemoveFromGroup takes a user put in a group by hand out of it.
func (c *Client) RemoveFromGroup(ctx context.Context, group, user string) error {
	return c.do(ctx, "DELETE", "/groups/"+esc(group)+"/members/"+esc(user), nil, nil)
}

// SetGroupQuota changes a group's quota.
func (c *Client) SetGroupQuota(ctx context.Context, group string, p api.QuotaPut) (api.Group, error) {
	var g api.Group
	return g, c.do(ctx, "PUT", "/groups/"+esc(group)+"/quota", p, &g)
}

// ImageBuild is what BuildImage asks: the image's name and tag, the
// Dockerfile's path in the context, the builder box's policy and the
// Boxfile project that declares the image (each "" for the default).
type ImageBuild struct{ Name, Tag, Dockerfile, Policy, Project string }

// BuildImage builds an image from a build context (a tar stream), calling
// logf with each line of the build's output as it comes.
func (c *Client) BuildImage(ctx context.Context, b ImageBuild, context io.Reader, logf func(string)) (api.Image, error) {
	q := url.Values{"name": {b.Name}}
	for k, v := range map[string]string{"tag": b.Tag, "dockerfile": b.Dockerfile, "policy": b.Policy, "project": b.Project} {
		if v != "" {
			q.Set(k, v)
		}
	}
	req, err := c.request(ctx, "POST", "/images?"+q.Encode(), context)
	if err != nil {
		return api.Image{}, err
	}
	req.Header.Set("Content-Type", "application/x-tar")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.send(req)
	if err != nil {
		return api.Image{}, err
	}
	es := &EventStream{body: resp.Body, r: bufio.NewReader(resp.Body)}
	defer es.Close()
	for {
		_, data, err := es.Next()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return api.Image{}, fmt.Errorf("the build's stream ended before its result: %w", err)
		}
		var ev api.BuildEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return api.Image{}, fmt.Errorf("a build event: %w", err)
		}
		switch ev.Type {
		case "log":
			if logf != nil {
				logf(ev.Text)
			}
		case "image":
			if ev.Image == nil {
				return api.Image{}, errors.New("the build's image event has no image")
			}
			return *ev.Image, nil
		case "error":
			return api.Image{}, &api.Error{Code: ev.Code, Message: ev.Message}
		}
	}
}

// Images lists the images the caller may make boxes from (their own, those
// shared with them; an admin: everyone's).
func (c *Client) Images(ctx context.Context) ([]api.Image, error) {
	var ims []api.Image
	return ims, c.do(ctx, "GET", "/images", nil, &ims)
}

// Image returns one image, by NAME[:TAG], OWNER/NAME[:TAG] or id.
func (c *Client) Image(ctx context.Context, ref string) (api.Image, error) {
	var im api.Image
	return im, c.do(ctx, "GET", "/images/"+esc(ref), nil, &im)
}

// RemoveImage removes one of the caller's images.
func (c *Client) RemoveImage(ctx context.Context, ref string) error {
	return c.do(ctx, "DELETE", "/images/"+esc(ref), nil, nil)
}

// ShareImage sets who else may make boxes from an image.
func (c *Client) ShareImage(ctx context.Context, ref string, sh api.ImageShares) (api.Image, error) {
	var im api.Image
	return im, c.do(ctx, "PUT", "/images/"+esc(ref)+"/shares", sh, &im)
}
