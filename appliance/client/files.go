package client

import (
	"bufio"
	"context"
	"io"
	"net/url"
	"strings"
)

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
