package load

import (
	"context"
	"time"

	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/server"
)

// HeavyPacer returns a wait that lets a test's heavy requests (box
// creation, pushes, pulls: server.Heavy's routes) go at half the pace the
// server allows one token, with half its burst. A load paced so is well
// within the bounds a user is promised however late each request reaches
// the server after it left, so that every request of it must succeed,
// on a machine of any speed. The wait ends early with ctx.
func HeavyPacer() func(ctx context.Context) {
	l := &auth.Limiter{Every: 2 * server.HeavyEvery, Burst: server.HeavyBurst / 2}
	return func(ctx context.Context) {
		for ctx.Err() == nil {
			ok, wait := l.Allow("")
			if ok {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
	}
}
