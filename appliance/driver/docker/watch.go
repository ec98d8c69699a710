package docker

import (
	"context"
	"time"

	"github.com/moby/moby/client"
)

// Watch calls changed a second after one of the instance's box
// containers started, died (stopped, killed, crashed) or was removed, and
// each time it reaches the engine again after losing it
// (an engine restart changes what runs), until ctx ends. Between losing
// the engine and reaching it again it retries, backing off to 10 s.
func (d *Driver) Watch(ctx context.Context, changed func()) {
	wait := 500 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		sub, cancel := context.WithCancel(ctx)
		res := d.c.Events(sub, client.EventsListOptions{Filters: d.filter("box").
			Add("type", "container").Add("event", "start", "die", "destroy")})
		// The stream is open once the engine answered; the ping says so
		// before any message would.
		if _, err := d.c.Ping(sub, client.PingOptions{}); err == nil {
			if !first {
				changed()
			}
			first = false
			wait = 500 * time.Millisecond
		}
		// A change is told once the events have been quiet for a second
		// and the stream still stands: when the engine shuts down, its
		// boxes die just before the stream breaks, and a reconcile then
		// would start them against a dying engine (which can leave a
		// container that no start can run again). Reaching the engine
		// again tells it instead.
		var quiet <-chan time.Time
	read:
		for {
			select {
			case <-ctx.Done():
				cancel()
				return
			case _, ok := <-res.Messages:
				if !ok {
					break read
				}
				quiet = time.After(time.Second)
			case <-quiet:
				quiet = nil
				changed()
			case <-res.Err:
				break read
			}
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, 10*time.Second)
	}
}
