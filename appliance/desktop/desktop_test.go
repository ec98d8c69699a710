package desktop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// core is a Core with one running desktop box, "d" (id u1), whose
// commands run gives an answer; it keeps what KeepsOfBox registers.
type core struct {
	mu     sync.Mutex
	uses   int
	run    func(spec driver.ExecSpec) (int, error)
	forget map[string]func(store.Tombstone, []string)
}

func (c *core) AccessOf(ctx context.Context, box string) (string, error) {
	return caller.AccessAll, nil
}

func (c *core) Use(ctx context.Context, box string) (func(), bool, error) {
	c.mu.Lock()
	c.uses++
	c.mu.Unlock()
	return func() { c.mu.Lock(); c.uses--; c.mu.Unlock() }, false, nil
}

func (c *core) DesktopBox(name string) (store.Box, error) { return c.RunningBox(name) }

func (c *core) LookBox(name string) (store.Box, bool, error) {
	b, err := c.RunningBox(name)
	return b, err == nil, nil
}

func (c *core) RunningBox(name string) (store.Box, error) {
	if name != "d" {
		return store.Box{}, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no box named %q", name)}
	}
	return store.Box{Name: "d", UID: "u1", Desktop: true}, nil
}

func (c *core) CheckExecIn(b store.Box, p api.ExecPost) (driver.ExecSpec, error) {
	return driver.ExecSpec{Cmd: p.Cmd}, nil
}

func (c *core) RunIn(ctx context.Context, b store.Box, spec driver.ExecSpec) (int, error) {
	return c.run(spec)
}

func (c *core) KeepsOfBox(what string, forget func(store.Tombstone, []string)) {
	if c.forget == nil {
		c.forget = map[string]func(store.Tombstone, []string){}
	}
	c.forget[what] = forget
}

func (c *core) open() int { c.mu.Lock(); defer c.mu.Unlock(); return c.uses }

func newDesktop(t *testing.T, c *core) *Desktop {
	return New(c, slog.New(slog.NewTextHandler(io.Discard, nil)), filepath.Join(t.TempDir(), "screenshots"))
}

// A PNG, as import writes one.
func png(spec driver.ExecSpec) (int, error) {
	spec.Stdout.Write(append(append([]byte{}, pngMagic...), "pixels"...))
	return 0, nil
}

// At most MaxScreenshots run at once; one more is refused with "too
// many", and once one ends another may start.
func TestScreenshotsBounded(t *testing.T) {
	started, release := make(chan struct{}, 10), make(chan struct{})
	var mu sync.Mutex
	running := 0
	c := &core{run: func(spec driver.ExecSpec) (int, error) {
		mu.Lock()
		running++
		n := running
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		if n > MaxScreenshots {
			return 0, fmt.Errorf("%d screenshots ran in boxes at once", n)
		}
		started <- struct{}{}
		<-release
		return png(spec)
	}}
	d := newDesktop(t, c)
	ctx := context.Background()
	done := make(chan error, MaxScreenshots+1)
	for i := 0; i < MaxScreenshots; i++ {
		go func() { _, err := d.Screenshot(ctx, "d"); done <- err }()
		<-started
	}
	_, err := d.Screenshot(ctx, "d")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeTooMany {
		t.Fatalf("a screenshot beyond the bound: %v", err)
	}
	release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { _, err := d.Screenshot(ctx, "d"); done <- err }()
	<-started
	close(release)
	for i := 0; i < MaxScreenshots; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := c.open(); n != 0 {
		t.Fatalf("%d uses of the box still open", n)
	}
}

// What import writes is a screenshot only if it is a PNG.
func TestScreenshotIsAPNG(t *testing.T) {
	c := &core{run: func(spec driver.ExecSpec) (int, error) {
		io.WriteString(spec.Stdout, "<html>")
		return 0, nil
	}}
	if _, err := newDesktop(t, c).Screenshot(context.Background(), "d"); err == nil {
		t.Fatal("a screenshot that is not a PNG was answered")
	}
}

// The gallery keeps the newest KeptScreenshots, newest first; a
// screenshot is found by its id alone (nothing else is a path); a
// removed box's gallery goes when its tombstone does.
func TestGalleryKeepsTheNewest(t *testing.T) {
	c := &core{run: png}
	d := newDesktop(t, c)
	ctx := context.Background()
	var taken []api.Screenshot
	for i := 0; i < KeptScreenshots+3; i++ {
		sh, err := d.TakeScreenshot(ctx, "d")
		if err != nil {
			t.Fatal(err)
		}
		taken = append(taken, sh)
	}
	shots, err := d.Screenshots("d")
	if err != nil {
		t.Fatal(err)
	}
	if len(shots) != KeptScreenshots || shots[0].ID != taken[len(taken)-1].ID {
		t.Fatalf("kept %d, newest %v; want %d, newest %s", len(shots), shots[0], KeptScreenshots, taken[len(taken)-1].ID)
	}
	if _, err := d.ScreenshotFile("d", taken[0].ID); err == nil {
		t.Error("the oldest screenshot is still kept")
	}
	if p, err := d.ScreenshotFile("d", shots[0].ID); err != nil || filepath.Dir(p) != filepath.Join(d.Dir, "id-u1") {
		t.Errorf("the newest screenshot: %q %v", p, err)
	}
	for _, id := range []string{"../id-u1/" + shots[0].ID, "x", ""} {
		if _, err := d.ScreenshotFile("d", id); err == nil {
			t.Errorf("screenshot %q was found", id)
		}
	}
	if _, err := d.Screenshots("nobox"); err == nil {
		t.Error("the gallery of a box that is not there")
	}
	forget := c.forget["screenshots"]
	if forget == nil {
		t.Fatal("the desktop does not say that its gallery goes with a box")
	}
	forget(store.Tombstone{Name: "d", UID: "u1"}, nil)
	if _, err := os.Stat(filepath.Join(d.Dir, "id-u1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the removed box's gallery: %v", err)
	}
}
