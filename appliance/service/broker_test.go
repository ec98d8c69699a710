package service

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/broker"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// What a box gets of brokered secrets, and what the broker is granted
// for it: its stand-in (not the value) in every command's environment,
// the same stand-in granted with the value; a member's box the owner's
// only once shared, and not over their own secret of that name; nothing
// once the box is stopped or the secret is not brokered; an agent's base
// URL pointed at the broker.
func TestBrokerGrants(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	var err error
	if s.Sealer, err = auth.LoadSealer(filepath.Join(t.TempDir(), "k")); err != nil {
		t.Fatal(err)
	}
	s.Net.Subnet = netip.MustParsePrefix("10.9.0.0/24")
	s.BrokerURL, s.BrokerKey = "http://10.9.0.1:4480", []byte("0123456789abcdef0123456789abcdef")
	boss, _ := s.Store.CreateUser(store.User{Name: "boss", Role: store.RoleOwner, Created: time.Now()})
	mia, _ := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	asBoss, asMia := caller.With(ctx, boss), caller.With(ctx, mia)
	brk := &api.SecretBroker{Hosts: []string{"api.anthropic.com"}, Header: "x-api-key", Limit: "10/min"}
	if err := secretsOf(s).Set(asBoss, "ANTHROPIC_API_KEY", []byte("sk-real"), false, brk); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		ctx  context.Context
		name string
	}{{asBoss, "a"}, {asMia, "m"}} {
		if _, err := s.CreateBox(b.ctx, api.BoxPost{Name: b.name}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AssignMissingIPs(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rec.Run(ctx); err != nil {
		t.Fatal(err)
	}
	env := func(box string) map[string]string {
		t.Helper()
		spec, err := s.CheckExec(box, api.ExecPost{Cmd: []string{"true"}, Env: map[string]string{"MINE": "1"}})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, kv := range spec.Env {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		return m
	}
	grant := func(box, secret string) (broker.Grant, error) {
		b, err := s.Store.GetBox(box)
		if err != nil {
			t.Fatal(err)
		}
		return secretsOf(s).Grant(ctx, netip.MustParseAddr(b.IP), secret, 0)
	}
	refused := func(err error, reason string) bool {
		var r *broker.Refusal
		return errors.As(err, &r) && strings.Contains(r.Reason, reason)
	}

	e := env("a")
	if !strings.HasPrefix(e["ANTHROPIC_API_KEY"], "pdk-ANTHROPIC_API_KEY-") || e["PADDOCK_BROKER"] != s.BrokerURL || e["MINE"] != "1" {
		t.Fatalf("box a's environment: %v", e)
	}
	g, err := grant("a", "ANTHROPIC_API_KEY")
	if err != nil || g.StandIn != e["ANTHROPIC_API_KEY"] || string(g.Value) != "sk-real" || g.Box != "a" ||
		!slices.Equal(g.Hosts, brk.Hosts) || g.Header.Name != "X-Api-Key" || g.Limit.N != 10 {
		t.Fatalf("box a's grant: %+v %v", g, err)
	}
	urls, err := s.AgentBaseURLs(mustBox(t, s, "a"), mustBox(t, s, "a").Owner, s.Cfg.Agents["claude"].BaseURLs)
	if err != nil || urls["ANTHROPIC_BASE_URL"] != s.BrokerURL+"/api.anthropic.com" {
		t.Fatalf("claude's base URL: %v %v", urls, err)
	}
	if urls, _ := s.AgentBaseURLs(mustBox(t, s, "a"), mustBox(t, s, "a").Owner, s.Cfg.Agents["codex"].BaseURLs); len(urls) != 0 {
		t.Fatalf("codex's base URL without a brokered OPENAI_API_KEY: %v", urls)
	}

	// A member's box: not the owner's secret until it is shared; then
	// its own stand-in; not once the member sets their own, unbrokered.
	if e := env("m"); e["ANTHROPIC_API_KEY"] != "" || e["PADDOCK_BROKER"] != s.BrokerURL {
		t.Fatalf("the member's box: %v", e)
	}
	if _, err := grant("m", "ANTHROPIC_API_KEY"); !refused(err, "box m has no brokered secret") {
		t.Fatalf("the member's box, unshared: %v", err)
	}
	if err := secretsOf(s).Set(asBoss, "ANTHROPIC_API_KEY", []byte("sk-real"), true, brk); err != nil {
		t.Fatal(err)
	}
	me := env("m")["ANTHROPIC_API_KEY"]
	if g, err := grant("m", "ANTHROPIC_API_KEY"); err != nil || g.StandIn != me || me == env("a")["ANTHROPIC_API_KEY"] {
		t.Fatalf("the member's box, shared: %q %+v %v", me, g, err)
	}
	if err := secretsOf(s).Set(asMia, "ANTHROPIC_API_KEY", []byte("sk-mia"), false, nil); err != nil {
		t.Fatal(err)
	}
	if e := env("m"); e["ANTHROPIC_API_KEY"] != "" {
		t.Fatalf("the member's own unbrokered secret gave a stand-in: %v", e)
	}
	if _, err := grant("m", "ANTHROPIC_API_KEY"); !refused(err, "no brokered secret") {
		t.Fatalf("the member's own unbrokered secret was granted: %v", err)
	}

	// Setting the secret again changes the stand-in; not brokering it
	// any more, or stopping the box, ends the grant.
	old := env("a")["ANTHROPIC_API_KEY"]
	time.Sleep(2 * time.Millisecond)
	if err := secretsOf(s).Set(asBoss, "ANTHROPIC_API_KEY", []byte("sk-new"), true, brk); err != nil {
		t.Fatal(err)
	}
	if now := env("a")["ANTHROPIC_API_KEY"]; now == old {
		t.Fatal("a new value kept the stand-in")
	}
	if _, err := s.StopBox(asBoss, "a", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := grant("a", "ANTHROPIC_API_KEY"); !refused(err, "box a is not running") {
		t.Fatalf("a stopped box: %v", err)
	}
	if err := secretsOf(s).SetBroker(asBoss, "ANTHROPIC_API_KEY", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := grant("m", "ANTHROPIC_API_KEY"); !refused(err, "no brokered secret") {
		t.Fatalf("unbrokered: %v", err)
	}
	if _, err := secretsOf(s).Grant(ctx, netip.MustParseAddr("10.9.0.200"), "ANTHROPIC_API_KEY", 0); !refused(err, "is no box of this server") {
		t.Fatalf("no box: %v", err)
	}
	// A stand-in that names a user (a prompt of theirs in a box shared
	// with them) gets their brokered secret while they may work in the
	// box, and nothing once they may not.
	if err := secretsOf(s).SetBroker(asBoss, "ANTHROPIC_API_KEY", brk); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartBox(asBoss, "a"); err != nil {
		t.Fatal(err)
	}
	if err := secretsOf(s).Set(asMia, "ANTHROPIC_API_KEY", []byte("sk-mia"), false, brk); err != nil {
		t.Fatal(err)
	}
	userGrant := func() (broker.Grant, error) {
		return secretsOf(s).Grant(ctx, netip.MustParseAddr(mustBox(t, s, "a").IP), "ANTHROPIC_API_KEY", mia.ID)
	}
	if _, err := userGrant(); !refused(err, "names a user who may not work in box a") {
		t.Fatalf("a user the box is not shared with: %v", err)
	}
	if _, err := sharesOf(s).Share(asBoss, "a", "mia", caller.AccessViewer); err != nil {
		t.Fatal(err)
	}
	if _, err := userGrant(); !refused(err, "names a user who may not work in box a") {
		t.Fatalf("a viewer of the box: %v", err)
	}
	if _, err := sharesOf(s).Share(asBoss, "a", "mia", caller.AccessMember); err != nil {
		t.Fatal(err)
	}
	g, err = userGrant()
	if err != nil || string(g.Value) != "sk-mia" || g.User != "mia" || g.StandIn == env("a")["ANTHROPIC_API_KEY"] || !strings.HasPrefix(g.StandIn, fmt.Sprintf("pdk-ANTHROPIC_API_KEY-u%d-", mia.ID)) {
		t.Fatalf("a member's grant: %+v %v", g, err)
	}
	if err := sharesOf(s).Unshare(asBoss, "a", "mia"); err != nil {
		t.Fatal(err)
	}
	if _, err := userGrant(); !refused(err, "names a user who may not work in box a") {
		t.Fatalf("once unshared: %v", err)
	}

	// Where there is no broker, a prompt goes without the brokered
	// secret rather than with its value.
	if err := secretsOf(s).SetBroker(asBoss, "ANTHROPIC_API_KEY", brk); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBox(asBoss, api.BoxPost{Name: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AssignMissingIPs(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rec.Run(ctx); err != nil {
		t.Fatal(err)
	}
	s.BrokerURL = ""
	if _, err := agentsOf(s).Prompt(ctx, "c", api.PromptPost{Agent: "claude", Task: "x"}); err == nil || !strings.Contains(err.Error(), "secret ANTHROPIC_API_KEY is brokered, so its value never enters a box, and box c has no broker: the broker is off") {
		t.Fatalf("a prompt with no broker: %v", err)
	}
	if e := env("c"); e["ANTHROPIC_API_KEY"] != "" || e["PADDOCK_BROKER"] != "" {
		t.Fatalf("no broker, yet: %v", e)
	}
	for _, bad := range []*api.SecretBroker{{Hosts: []string{"1.2.3.4"}}, {Hosts: []string{"a.b"}, Header: "x y"}, {Hosts: []string{"a.b"}, Limit: "5"}, {Header: "bearer"}} {
		if err := secretsOf(s).Set(asBoss, "X", []byte("v"), false, bad); err == nil {
			t.Errorf("%+v was taken", bad)
		}
	}
}
