package computer

import (
	"errors"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
)

// A request of desktop actions is checked whole before any of it runs:
// each bad one names the action by its place and says what is wrong.
func TestCheck(t *testing.T) {
	act := func(a ...api.DesktopAction) api.DesktopActionsPost { return api.DesktopActionsPost{Actions: a} }
	many := make([]api.DesktopAction, MaxActions+1)
	for i := range many {
		many[i] = api.DesktopAction{Action: "cursor_position"}
	}
	for _, c := range []struct {
		post  api.DesktopActionsPost
		field string
		says  string
	}{
		{api.DesktopActionsPost{}, "actions", "no actions given"},
		{api.DesktopActionsPost{Actions: many}, "actions", "101 actions in one request: at most 100"},
		{api.DesktopActionsPost{Actions: many[:1], Scale: 1.5}, "scale", "scale 1.5"},
		{act(api.DesktopAction{Action: "cursor_position"}, api.DesktopAction{Action: "fly"}), "actions[1]", `action 1: unknown action "fly"`},
		{act(api.DesktopAction{Action: "mouse_move"}), "actions[0]", "give a coordinate [x, y]"},
		{act(api.DesktopAction{Action: "left_click", Coordinate: []int{1, 2, 3}}), "actions[0]", "give two numbers"},
		{act(api.DesktopAction{Action: "left_click", Coordinate: []int{-1, 2}}), "actions[0]", "negative"},
		{act(api.DesktopAction{Action: "key"}), "actions[0]", "give the keys in text"},
		{act(api.DesktopAction{Action: "type"}), "actions[0]", "give the text to type"},
		{act(api.DesktopAction{Action: "type", Text: strings.Repeat("é", maxText+1)}), "actions[0]", "text of 10001 characters"},
		{act(api.DesktopAction{Action: "type", Text: "a\x00b"}), "actions[0]", "not valid UTF-8 text"},
		{act(api.DesktopAction{Action: "wait"}), "actions[0]", "give a duration in seconds"},
		{act(api.DesktopAction{Action: "wait", Duration: 61}), "actions[0]", "give 0 to 60 seconds"},
		{act(api.DesktopAction{Action: "hold_key", Text: "shift"}), "actions[0]", "give a duration in seconds"},
		{act(api.DesktopAction{Action: "scroll", ScrollDirection: "in"}), "actions[0]", "give up, down, left or right"},
		{act(api.DesktopAction{Action: "scroll", ScrollDirection: "up", ScrollAmount: 1000}), "actions[0]", "give 1 to 100"},
		{act(api.DesktopAction{Action: "zoom", Region: []int{10, 10, 5, 20}}), "actions[0]", "x0 < x1"},
		{act(api.DesktopAction{Action: "launch"}), "actions[0]", "give a target"},
		{act(api.DesktopAction{Action: "windows", Coordinate: []int{1, 1}}), "actions[0]", "takes no coordinate"},
		{act(api.DesktopAction{Action: "left_click", StartCoordinate: []int{1, 1}}), "actions[0]", "only left_click_drag takes a start_coordinate"},
		{act(api.DesktopAction{Action: "screenshot", Region: []int{0, 0, 1, 1}}), "actions[0]", "only zoom takes a region"},
		{act(api.DesktopAction{Action: "type", Text: "x", Target: "y"}), "actions[0]", "only launch takes a target"},
	} {
		err := Check(c.post)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeInvalid || ae.Field != c.field || !strings.Contains(ae.Message, c.says) {
			t.Errorf("%+v: %v (field %q), want %s saying %q", c.post, err, fieldOf(ae), c.field, c.says)
		}
	}
	// Every action of the vocabulary, well formed, passes.
	ok := act(
		api.DesktopAction{Action: "key", Text: "ctrl+s"}, api.DesktopAction{Action: "type", Text: "héllo\n"},
		api.DesktopAction{Action: "mouse_move", Coordinate: []int{1, 2}}, api.DesktopAction{Action: "left_click"},
		api.DesktopAction{Action: "right_click", Coordinate: []int{1, 2}}, api.DesktopAction{Action: "middle_click"},
		api.DesktopAction{Action: "double_click"}, api.DesktopAction{Action: "triple_click", Text: "shift"},
		api.DesktopAction{Action: "left_click_drag", StartCoordinate: []int{1, 2}, Coordinate: []int{3, 4}},
		api.DesktopAction{Action: "left_mouse_down"}, api.DesktopAction{Action: "left_mouse_up"},
		api.DesktopAction{Action: "scroll", Coordinate: []int{1, 2}, ScrollDirection: "down", ScrollAmount: 5},
		api.DesktopAction{Action: "hold_key", Text: "shift", Duration: 0.5}, api.DesktopAction{Action: "wait", Duration: 1},
		api.DesktopAction{Action: "cursor_position"}, api.DesktopAction{Action: "screenshot"},
		api.DesktopAction{Action: "zoom", Region: []int{0, 0, 10, 10}}, api.DesktopAction{Action: "windows"},
		api.DesktopAction{Action: "launch", Target: "mousepad"}, api.DesktopAction{Action: "wait_idle", Duration: 2},
	)
	if len(ok.Actions) != len(actionNames) {
		t.Fatalf("the well-formed request has %d actions; the vocabulary %d", len(ok.Actions), len(actionNames))
	}
	if err := Check(ok); err != nil {
		t.Fatal(err)
	}
}

func fieldOf(e *api.Error) string {
	if e == nil {
		return ""
	}
	return e.Field
}
