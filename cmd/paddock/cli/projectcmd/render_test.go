package projectcmd

import (
	"bytes"
	"testing"

	"github.com/paddock-dev/paddock/testbed/golden"

	"github.com/paddock-dev/paddock/appliance/api"
)

func TestRenderPlanGolden(t *testing.T) {
	plans := map[string]api.Plan{
		"create": {Project: "demo", Changes: []api.Change{
			{Address: "policy.registries", Action: api.ActionCreate, Attrs: []api.AttrChange{
				{Name: "allow_domains", After: `["*.github.com"]`}, {Name: "allow_cidrs", After: `["140.82.112.0/20"]`}}},
			{Address: "drive.cache", Action: api.ActionCreate},
			{Address: "box.web", Action: api.ActionCreate, Attrs: []api.AttrChange{
				{Name: "type", After: `"small"`}, {Name: "image", After: `"paddock/box:latest"`},
				{Name: "policy", After: "policy.registries"}, {Name: "mount.cache", After: `"/mnt/cache"`}}},
		}},
		"update": {Project: "demo", Changes: []api.Change{
			{Address: "box.web", Action: api.ActionUpdate, Attrs: []api.AttrChange{
				{Name: "ttl", Before: `"1h"`, After: `"2h"`}, {Name: "env", Before: `{ A = "1" }`, After: ""}}},
			{Address: "box.api", Action: api.ActionUpdate, Reasons: []string{"the container is exited (stopped outside Paddock); apply starts it"}},
		}},
		"replace": {Project: "demo", Changes: []api.Change{
			{Address: "box.web", Action: api.ActionReplace, Reasons: []string{"image forces replacement"}, Attrs: []api.AttrChange{
				{Name: "image", Before: `"a:1"`, After: `"a:2"`, Forces: true}, {Name: "ttl", Before: `"1h"`, After: `"2h"`}}},
		}},
		"destroy": {Project: "demo", Changes: []api.Change{
			{Address: "box.web", Action: api.ActionDelete, Attrs: []api.AttrChange{{Name: "type", Before: `"small"`}}},
			{Address: "drive.cache", Action: api.ActionDelete, Reasons: []string{"its data is deleted"}},
		}},
		"noop": {Project: "demo", Changes: []api.Change{}, Notes: []string{"drive.old is no longer declared; its data is kept (plan with -drives to delete it)"}},
	}
	for name, p := range plans {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			renderPlan(&b, p)
			golden.Check(t, "testdata/plan_"+name+".golden", b.Bytes())
		})
	}
}

func TestLongDash(t *testing.T) {
	got := longDash([]string{"-var", "a=1", "-var-file=x", "-f", "dir", "-auto-approve", "--", "-var"}, boxfileFlagNames...)
	want := []string{"--var", "a=1", "--var-file=x", "-f", "dir", "--auto-approve", "--", "-var"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %q", got)
		}
	}
}
