package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/paddock-dev/paddock/appliance/api"
	"io"
	"net/url"
)

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
