package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

// 50 writers at once on a real engine: 20 new boxes, 10 removals and 20
// policy changes, all in parallel. None answers 5xx, and afterwards every
// declaration is as its call said: the new boxes run, the removed are
// gone, the changed policies hold in the store and the policy report.
func TestConcurrentWriters(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	c := d.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t0 := time.Now()
	for i := 0; i < 10; i++ {
		if _, err := c.CreateBox(ctx, api.BoxPost{Name: fmt.Sprintf("rm%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 20; i++ {
		if _, err := c.CreateBox(ctx, api.BoxPost{Name: fmt.Sprintf("pol%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("30 boxes made one after another in %v", time.Since(t0).Round(time.Millisecond))

	var wg sync.WaitGroup
	errs := make(chan error, 50)
	start := make(chan struct{})
	call := func(what string, fn func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := fn(); err != nil {
				errs <- fmt.Errorf("%s: %w", what, err)
			}
		}()
	}
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("new%d", i)
		call("new "+name, func() error { _, err := d.Client().CreateBox(ctx, api.BoxPost{Name: name}); return err })
	}
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("rm%d", i)
		call("rm "+name, func() error { return d.Client().RemoveBox(ctx, name) })
	}
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("pol%d", i)
		call("policy set "+name, func() error { _, err := d.Client().SetPolicy(ctx, name, api.PolicyDenyAll); return err })
	}
	t1 := time.Now()
	close(start)
	wg.Wait()
	close(errs)
	t.Logf("figure: 50 concurrent writes (20 new, 10 rm, 20 policy set) took %v", time.Since(t1).Round(time.Millisecond))
	for err := range errs {
		var ae *api.Error
		if errors.As(err, &ae) && ae.Code != api.CodeInternal {
			t.Errorf("%v (a refusal, not a 5xx; still, none was expected)", err)
			continue
		}
		t.Errorf("%v", err)
	}

	boxes, err := c.Boxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]api.Box{}
	for _, b := range boxes {
		have[b.Name] = b
	}
	for i := 0; i < 20; i++ {
		if b, ok := have[fmt.Sprintf("new%d", i)]; !ok || b.Status != "running" {
			t.Errorf("new%d: %+v (listed %v)", i, b, ok)
		}
		name := fmt.Sprintf("pol%d", i)
		if have[name].Policy != api.PolicyDenyAll {
			t.Errorf("%s: policy %q in the store", name, have[name].Policy)
		}
		if rep, err := c.PolicyReport(ctx, name); err != nil || rep.Policy != api.PolicyDenyAll {
			t.Errorf("%s: the policy report says %+v %v", name, rep, err)
		}
	}
	for i := 0; i < 10; i++ {
		if _, ok := have[fmt.Sprintf("rm%d", i)]; ok {
			t.Errorf("rm%d is still listed", i)
		}
	}
	if len(have) != 40 {
		t.Errorf("%d boxes listed, want 40", len(have))
	}
}
