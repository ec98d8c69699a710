package caller

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/paddock-dev/paddock/appliance/store"
)

// A request's address is its peer's; behind the front door (a unix
// socket, no peer address) it is the last X-Forwarded-For hop, the one
// the front door added, never one the client wrote before it.
func TestAddrTrustsOnlyTheFrontDoorsHop(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "127.0.0.9:4000"
	r.Header.Set("X-Forwarded-For", "198.18.0.1")
	if got := Addr(r); got != "127.0.0.9" {
		t.Errorf("with a peer: %q, want the peer's", got)
	}
	r.RemoteAddr = "@"
	r.Header.Set("X-Forwarded-For", "198.18.0.1, 198.18.0.2")
	if got := Addr(r); got != "198.18.0.2" {
		t.Errorf("behind the front door: %q, want its hop", got)
	}
	r.Header.Del("X-Forwarded-For")
	if got := Addr(r); got != "unix" {
		t.Errorf("no peer, no hop: %q", got)
	}
}

// The daemon's own work sees all; a user sees what is theirs, and an
// owner or admin everything.
func TestVisible(t *testing.T) {
	ctx := context.Background()
	if !Visible(ctx, 7) {
		t.Error("the daemon does not see a user's object")
	}
	member := With(ctx, store.User{ID: 3, Role: store.RoleMember})
	if Visible(member, 7) || !Visible(member, 3) {
		t.Error("a member sees another's object, or not their own")
	}
	admin := With(ctx, store.User{ID: 1, Role: store.RoleAdmin})
	if !Visible(admin, 7) {
		t.Error("an admin does not see a member's object")
	}
	if AccessRank(AccessViewer) >= AccessRank(AccessMember) || AccessRank(AccessMember) >= AccessRank(AccessAll) || AccessRank(AccessNone) != 0 {
		t.Error("access levels out of order")
	}
}
