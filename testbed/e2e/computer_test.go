package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image/png"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
)

// A program uses a box's desktop as a person would, through
// POST /v1/boxes/NAME/desktop/actions on the real box image (XFCE,
// Mousepad, xmessage): it opens a text editor, types two lines with
// letters beyond ASCII and saves them under a typed name, which exec
// reads back; it clicks a button of a small window, whose program says
// which button it was; it drags a window by its title bar and reads its
// new place; screenshots come scaled, and zoom cuts a region.
func TestComputerUse(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := d.Client()
	yes := true
	if _, err := c.CreateBox(ctx, api.BoxPost{Name: "desk", Desktop: &yes}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateBox(ctx, api.BoxPost{Name: "plain"}); err != nil {
		t.Fatal(err)
	}
	do := func(acts ...api.DesktopAction) api.DesktopActionsResult {
		t.Helper()
		r, err := c.DesktopActions(ctx, "desk", api.DesktopActionsPost{Actions: acts})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Results) != len(acts) {
			t.Fatalf("%d actions, %d results", len(acts), len(r.Results))
		}
		return r
	}
	// The XFCE session is up once its panel has a window. A window is
	// found by its title; one that must have the focus is waited for
	// until it has it (a window manager maps a window before it gives
	// it the focus).
	windowAs := func(title string, within time.Duration, active bool) api.DesktopWindow {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			r, err := c.DesktopActions(ctx, "desk", api.DesktopActionsPost{Actions: []api.DesktopAction{{Action: "windows"}}})
			if err == nil {
				for _, w := range r.Results[0].Windows {
					if strings.Contains(w.Title, title) && (w.Active || !active) {
						return w
					}
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no window titled %q (active: %v) within %s: %v, %+v", title, active, within, err, r)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	window := func(title string, within time.Duration) api.DesktopWindow {
		t.Helper()
		return windowAs(title, within, false)
	}
	exec := func(script string) string {
		t.Helper()
		var out, errb bytes.Buffer
		code, err := c.Exec(ctx, "desk", api.ExecPost{Cmd: []string{"sh", "-c", script}}, client.ExecIO{Stdout: &out, Stderr: &errb})
		if err != nil || code != 0 {
			t.Fatalf("%s: %d %v %s", script, code, err, errb.String())
		}
		return out.String()
	}
	window("xfce4-panel", 2*time.Minute)

	// The editor: launch answers with the window it opened. Its save
	// dialog opens in the home folder, /config.
	r := do(api.DesktopAction{Action: "launch", Target: "mousepad"}, api.DesktopAction{Action: "wait_idle"})
	if len(r.Results[0].Windows) != 1 || !strings.Contains(r.Results[0].Windows[0].Title, "Mousepad") {
		t.Fatalf("launch mousepad opened %+v", r.Results[0].Windows)
	}
	const text = "first line\nsecond: héllo wörld ✓ €"
	do(api.DesktopAction{Action: "type", Text: text}, api.DesktopAction{Action: "key", Text: "ctrl+s"})
	windowAs("Save As", 30*time.Second, true) // the save dialog has the focus
	// As a person would: the name, then Return until the dialog goes (the
	// dialog's completion of the name may take the first Return).
	do(api.DesktopAction{Action: "wait_idle"}, api.DesktopAction{Action: "type", Text: "notes.txt"})
	for i := 0; ; i++ {
		if _, open := findWindow(t, c, "desk", "Save As"); !open {
			break
		}
		if i == 10 {
			t.Fatalf("the save dialog stays after 10 Returns (the screen: %s)", keepScreen(t, c, "desk"))
		}
		do(api.DesktopAction{Action: "key", Text: "Return"}, api.DesktopAction{Action: "wait_idle"})
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		got := exec("cat /config/notes.txt 2>/dev/null || true")
		if got == text || got == text+"\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/config/notes.txt holds %q, want %q (the screen now: %s)", got, text, keepScreen(t, c, "desk"))
		}
	}
	ed := window("notes.txt - Mousepad", 10*time.Second)

	// A button: xmessage exits with the code of the one clicked (Press 7,
	// Other 8), its buttons in a row under its text.
	job, err := c.StartJob(ctx, "desk", api.ExecPost{Cmd: []string{"xmessage", "-buttons", "Press:7,Other:8", "-geometry", "300x120+400+300", "hello"}, Desktop: true})
	if err != nil {
		t.Fatal(err)
	}
	xm := window("xmessage", 30*time.Second)
	do(api.DesktopAction{Action: "left_click", Coordinate: []int{xm.X + 23, xm.Y + xm.Height - 14}})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		j, err := c.Job(ctx, "desk", job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != "running" {
			if j.ExitCode == nil || *j.ExitCode != 7 {
				t.Fatalf("xmessage ended %s %v, want code 7 (its Press button)", j.State, j.ExitCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("xmessage still runs after its button was clicked")
		}
	}

	// A window dragged by its title bar, 14 px above its contents.
	do(api.DesktopAction{Action: "left_click_drag", StartCoordinate: []int{ed.X + 100, ed.Y - 14}, Coordinate: []int{ed.X + 300, ed.Y + 86}})
	moved := window("notes.txt - Mousepad", 10*time.Second)
	if dx, dy := moved.X-ed.X, moved.Y-ed.Y; dx < 198 || dx > 202 || dy < 98 || dy > 102 {
		t.Fatalf("the editor went from (%d,%d) to (%d,%d), want 200 right and 100 down", ed.X, ed.Y, moved.X, moved.Y)
	}

	// Coordinates in a scaled screenshot's pixels, in and out.
	sr, err := c.DesktopActions(ctx, "desk", api.DesktopActionsPost{Scale: 0.5, Screenshot: true, Actions: []api.DesktopAction{
		{Action: "mouse_move", Coordinate: []int{100, 50}}, {Action: "cursor_position"}, {Action: "zoom", Region: []int{10, 20, 110, 70}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := sr.Results[1].Coordinate; len(got) != 2 || got[0] != 100 || got[1] != 50 {
		t.Fatalf("cursor_position at scale 0.5: %v, want [100 50]", got)
	}
	if got := exec("DISPLAY=:1 xdotool getmouselocation"); !strings.HasPrefix(got, "x:200 y:100 ") {
		t.Fatalf("the X server's mouse is at %q, want 200,100 (100,50 at scale 0.5)", got)
	}
	size := func(b64 string) (int, int) {
		t.Helper()
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return img.Bounds().Dx(), img.Bounds().Dy()
	}
	if w, h := size(sr.Screenshot); w != 640 || h != 400 || sr.Width != 640 || sr.Height != 400 {
		t.Fatalf("screenshot at scale 0.5: %dx%d (said %dx%d), want 640x400", w, h, sr.Width, sr.Height)
	}
	// zoom: the region at the screen's own resolution.
	if w, h := size(sr.Results[2].Image); w != 200 || h != 100 {
		t.Fatalf("zoom of 100x50 at scale 0.5: %dx%d, want 200x100", w, h)
	}

	// What cannot be done says why. A request found bad before it runs
	// does nothing of it: its first action, a move to 5,5, is not made.
	before := exec("DISPLAY=:1 xdotool getmouselocation")
	for i, bad := range []struct {
		box  string
		post api.DesktopActionsPost
		code string
		says string
	}{
		{"desk", api.DesktopActionsPost{Actions: []api.DesktopAction{{Action: "mouse_move", Coordinate: []int{5, 5}}, {Action: "fly"}}}, api.CodeInvalid, `action 1: unknown action "fly"`},
		{"desk", api.DesktopActionsPost{Actions: []api.DesktopAction{{Action: "left_click", Coordinate: []int{5}}}}, api.CodeInvalid, "give two numbers"},
		{"desk", api.DesktopActionsPost{Actions: []api.DesktopAction{{Action: "scroll", ScrollDirection: "sideways"}}}, api.CodeInvalid, "give up, down, left or right"},
		{"desk", api.DesktopActionsPost{Actions: []api.DesktopAction{{Action: "wait", Duration: 3600}}}, api.CodeInvalid, "give 0 to 60 seconds"},
		{"desk", api.DesktopActionsPost{Actions: []api.DesktopAction{{Action: "mouse_move", Coordinate: []int{5, 5}}, {Action: "mouse_move", Coordinate: []int{1280, 5}}}}, api.CodeInvalid, "action 1 (mouse_move): coordinate [1280, 5] is off the screen (1280x800) (the 1 before it were done)"},
		{"desk", api.DesktopActionsPost{Actions: []api.DesktopAction{{Action: "launch", Target: "no-such-program"}}}, api.CodeInvalid, "no program 'no-such-program' in the box"},
		{"plain", api.DesktopActionsPost{Actions: []api.DesktopAction{{Action: "cursor_position"}}}, api.CodeConflict, `box "plain" has no desktop`},
	} {
		_, err := c.DesktopActions(ctx, bad.box, bad.post)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != bad.code || !strings.Contains(ae.Message, bad.says) {
			t.Errorf("%+v: %v, want %s saying %q", bad.post, err, bad.code, bad.says)
		}
		if i == 3 {
			if got := exec("DISPLAY=:1 xdotool getmouselocation"); got != before {
				t.Fatalf("requests refused before they ran moved the mouse from %q to %q", before, got)
			}
		}
	}
}

// keepScreen writes a screenshot of a box's desktop where a failed test
// can be looked into, and says where.
func keepScreen(t *testing.T, c *client.Client, box string) string {
	png, err := c.Screenshot(context.Background(), box)
	if err != nil {
		return "no screenshot: " + err.Error()
	}
	f, err := os.CreateTemp("", "paddock-"+box+"-*.png")
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	f.Write(png)
	return f.Name()
}

// findWindow is the window of a box's desktop whose title has title in it.
func findWindow(t *testing.T, c *client.Client, box, title string) (api.DesktopWindow, bool) {
	t.Helper()
	r, err := c.DesktopActions(context.Background(), box, api.DesktopActionsPost{Actions: []api.DesktopAction{{Action: "windows"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range r.Results[0].Windows {
		if strings.Contains(w.Title, title) {
			return w, true
		}
	}
	return api.DesktopWindow{}, false
}
