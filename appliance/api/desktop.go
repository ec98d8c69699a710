package api

import (
	"time"
)

// DesktopTicket opens a box's desktop in a browser once.
type DesktopTicket struct {
	Ticket string `json:"ticket"`
	// Path is the page's path on the server, with the ticket in its fragment.
	Path    string    `json:"path"`
	Expires time.Time `json:"expires"`
	// ViewOnly says the desktop is seen, not used: the box is shared with
	// the caller as a viewer, and the server drops their input.
	ViewOnly bool `json:"view_only,omitempty"`
}

// DesktopAction is one action on a box's desktop, in the vocabulary and
// with the argument names of Anthropic's computer-use tool, so that an
// agent loop can forward its tool calls as they are. Coordinates are
// pixels of the screenshots the caller sees: with a scale, they are
// scaled back to the screen's.
type DesktopAction struct {
	// Action is key, type, mouse_move, left_click, right_click,
	// middle_click, double_click, triple_click, left_click_drag,
	// left_mouse_down, left_mouse_up, scroll, hold_key, wait,
	// cursor_position, screenshot or zoom; or, beyond that tool's,
	// windows, launch or wait_idle.
	Action string `json:"action"`
	// Coordinate is [x, y]: where the mouse goes first (mouse_move, the
	// clicks, scroll; the end of left_click_drag).
	Coordinate []int `json:"coordinate,omitempty"`
	// StartCoordinate is where left_click_drag starts (default: where the
	// mouse is).
	StartCoordinate []int `json:"start_coordinate,omitempty"`
	// Text is what type types (any Unicode; a newline is Return), the
	// keys of key and hold_key in xdotool's names ("ctrl+s", "Return";
	// several separated by spaces), or the modifier keys held during a
	// click or scroll ("shift", "ctrl+alt").
	Text string `json:"text,omitempty"`
	// ScrollDirection is up, down, left or right; ScrollAmount the
	// wheel's clicks (default 3).
	ScrollDirection string `json:"scroll_direction,omitempty"`
	ScrollAmount    int    `json:"scroll_amount,omitempty"`
	// Duration is seconds: how long hold_key holds and wait waits, the
	// bound of wait_idle (default 5) and of launch's wait for a new
	// window (default 10). At most 60.
	Duration float64 `json:"duration,omitempty"`
	// Region is zoom's [x0, y0, x1, y1]: that part of the screen at the
	// screen's own resolution.
	Region []int `json:"region,omitempty"`
	// Target is what launch opens: a URL, a file in the box, or a command
	// line (an application: "mousepad notes.txt").
	Target string `json:"target,omitempty"`
}

// DesktopActionNames are the actions a DesktopAction may name: the
// computer-use tool's, then Paddock's own.
var DesktopActionNames = []string{"key", "type", "mouse_move", "left_click", "right_click", "middle_click", "double_click",
	"triple_click", "left_click_drag", "left_mouse_down", "left_mouse_up", "scroll", "hold_key", "wait", "cursor_position",
	"screenshot", "zoom", "windows", "launch", "wait_idle"}

// DesktopActionsPost is a step of an agent on a box's desktop: its
// actions, run in order, and what to answer with.
type DesktopActionsPost struct {
	Actions []DesktopAction `json:"actions"`
	// Screenshot asks for a screenshot once the actions are done.
	Screenshot bool `json:"screenshot,omitempty"`
	// Scale (0 < scale <= 1, default 1) shrinks screenshots; coordinates
	// in the actions and in the answer are in the shrunk pixels.
	Scale float64 `json:"scale,omitempty"`
}

// DesktopWindow is an open window of a desktop: its title and where it
// is (its contents, without the frame the window manager adds).
type DesktopWindow struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	X      int    `json:"x"`
	Y      int    `json:"y"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Active bool   `json:"active,omitempty"`
}

// DesktopActionResult is what one action gave.
type DesktopActionResult struct {
	Action string `json:"action"`
	// Coordinate is where the mouse is (cursor_position).
	Coordinate []int `json:"coordinate,omitempty"`
	// Image is a PNG, base64 (screenshot, zoom).
	Image string `json:"image,omitempty"`
	// Windows are the open windows (windows), or the one launch saw open.
	Windows []DesktopWindow `json:"windows,omitempty"`
	// Idle says whether wait_idle saw the screen stop changing within
	// its bound.
	Idle *bool `json:"idle,omitempty"`
}

// DesktopActionsResult answers a DesktopActionsPost.
type DesktopActionsResult struct {
	Results []DesktopActionResult `json:"results"`
	// Screenshot is the PNG asked for, base64.
	Screenshot string `json:"screenshot,omitempty"`
	// Width and Height are the screenshots' size (the screen's, scaled).
	Width  int `json:"width"`
	Height int `json:"height"`
}
