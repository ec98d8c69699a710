package service

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"

	"github.com/paddock-dev/paddock/appliance/capped"
	"github.com/paddock-dev/paddock/appliance/driver"
)

// Display is where a box's desktop is.
const Display = driver.Display

// VNCPort is the desktop's VNC server's port, on the box's loopback
// (display :1).
const VNCPort = "5901"

// maxScreenshot bounds a screenshot's size.
const maxScreenshot = 64 << 20

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// DesktopBox checks that a box is running and has a desktop.
func (s *Service) DesktopBox(name string) error {
	b, err := s.RunningBox(name)
	if err != nil {
		return err
	}
	if !b.Desktop {
		return conflict("box %q has no desktop: make one with 'paddock new --desktop' (or desktop = true in a Boxfile)", name)
	}
	return nil
}

// MaxScreenshots bounds the screenshots taken at once, server-wide.
const MaxScreenshots = 2

// Screenshot returns a PNG of a box's whole display. It waits a few seconds
// for a desktop that is still starting.
func (s *Service) Screenshot(ctx context.Context, name string) ([]byte, error) {
	used, _, err := s.Use(ctx, name)
	if err != nil {
		return nil, err
	}
	defer used()
	if err := s.DesktopBox(name); err != nil {
		return nil, err
	}
	// Each screenshot is an X client and an encoder in a box: a few at a
	// time, server-wide, and more are refused rather than queued.
	s.shotOnce.Do(func() { s.shotSlots = make(chan struct{}, MaxScreenshots) })
	select {
	case s.shotSlots <- struct{}{}:
		defer func() { <-s.shotSlots }()
	default:
		return nil, &api.Error{Code: api.CodeTooMany, Message: fmt.Sprintf("%d screenshots are being taken; try again in a moment", MaxScreenshots)}
	}
	env := []string{"DISPLAY=" + Display}
	key := s.engineName(name)
	deadline := time.Now().Add(15 * time.Second)
	var out *capped.Buffer
	for {
		out = &capped.Buffer{Max: maxScreenshot}
		var errb bytes.Buffer
		code, err := s.Driver.Exec(ctx, key, driver.ExecSpec{
			Cmd: []string{"import", "-window", "root", "png:-"}, Env: env, Stdout: out, Stderr: &errb,
		})
		if err != nil {
			return nil, err
		}
		// A desktop that is still starting has no X server yet: wait for it.
		if code == 0 || !strings.Contains(errb.String(), "unable to open X server") {
			if code != 0 {
				return nil, fmt.Errorf("screenshot of box %q failed (exit %d): %s", name, code, strings.TrimSpace(errb.String()))
			}
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the desktop of box %q is not up: %s", name, strings.TrimSpace(errb.String()))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	switch {
	case out.Over:
		return nil, fmt.Errorf("screenshot of box %q is larger than %d MiB", name, maxScreenshot>>20)
	case !bytes.HasPrefix(out.Bytes(), pngMagic):
		return nil, fmt.Errorf("screenshot of box %q is not a PNG", name)
	}
	return out.Bytes(), nil
}
