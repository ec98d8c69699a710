package client

import (
	"context"
	"github.com/paddock-dev/paddock/appliance/api"
)

// DesktopActions runs actions on a box's desktop, in order, and returns
// each one's result and, when asked, a screenshot.
func (c *Client) DesktopActions(ctx context.Context, box string, p api.DesktopActionsPost) (api.DesktopActionsResult, error) {
	var r api.DesktopActionsResult
	return r, c.do(ctx, "POST", "/boxes/"+esc(box)+"/desktop/actions", p, &r)
}

// DesktopTicket asks for a single-use ticket to a box's desktop page.
func (c *Client) DesktopTicket(ctx context.Context, box string) (api.DesktopTicket, error) {
	var t api.DesktopTicket
	return t, c.do(ctx, "POST", "/boxes/"+esc(box)+"/desktop", nil, &t)
}
