package server

import (
	"context"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
)

// TestExecReadsItsBoxOnce: an attached exec reads its box from the store
// once, at its route (the audit's about), and the route's access check,
// the sleeping check, the use, the command's check and the engine name
// it runs in all use that read (each read is a query: six an exec were
// 15.6% of paddockd's time under the bench's full load). The command
// runs in the box's engine name, with its declared environment.
func TestExecReadsItsBoxOnce(t *testing.T) {
	ts, svc, _ := newBare(t)
	tok := addOwner(t, svc)
	if code, e := call(t, ts, tok, "POST", "/v1/boxes", `{"name":"web","env":{"FROM_BOX":"1"}}`); code != 201 {
		t.Fatalf("create: %d %+v", code, e)
	}
	var ran []string
	var env []string
	svc.Driver.(*fake.Driver).ExecFunc = func(box string, spec driver.ExecSpec) (int, error) {
		ran, env = append(ran, box), spec.Env
		return 3, nil
	}
	c, err := client.New(ts.URL, tok)
	if err != nil {
		t.Fatal(err)
	}
	before := svc.Store.BoxReads()
	code, err := c.Exec(context.Background(), "web", api.ExecPost{Cmd: []string{"true"}}, client.ExecIO{})
	reads := svc.Store.BoxReads() - before
	if err != nil || code != 3 {
		t.Fatalf("exec: %d %v", code, err)
	}
	if reads != 1 {
		t.Fatalf("an exec read its box %d times, not once", reads)
	}
	b, err := svc.Store.GetBox("web")
	if err != nil {
		t.Fatal(err)
	}
	if len(ran) != 1 || ran[0] != b.Key() {
		t.Fatalf("the command ran in %q, not in the box's engine name %q", ran, b.Key())
	}
	found := false
	for _, kv := range env {
		found = found || kv == "FROM_BOX=1"
	}
	if !found {
		t.Fatalf("the command's environment lacks the box's: %q", env)
	}

	// A box that does not run is still refused, before the upgrade.
	if code, e := call(t, ts, tok, "POST", "/v1/boxes/web/stop", ""); code >= 300 {
		t.Fatalf("stop: %d %+v", code, e)
	}
	if _, err := c.Exec(context.Background(), "web", api.ExecPost{Cmd: []string{"true"}}, client.ExecIO{}); err == nil || len(ran) != 1 {
		t.Fatalf("an exec into a stopped box: %v (ran %d)", err, len(ran))
	}
}
