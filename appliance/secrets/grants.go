package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"

	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/broker"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Grant says what the box at addr may do with the secret called
// name, for the broker: the box owner's (user 0), or, for a stand-in that
// names another user (a prompt they asked for in a box shared with them),
// that user's while they may still work in the box. A refusal when the
// Address is no box of this server, the box is not running (stopped, or
// being stopped), the user has no such access, or there is no such
// brokered secret.
func (sc *Secrets) Grant(ctx context.Context, addr netip.Addr, name string, user int64) (broker.Grant, error) {
	b, err := sc.store.BoxAt(addr.String())
	if errors.Is(err, store.ErrNotFound) {
		return broker.Grant{}, &broker.Refusal{Status: http.StatusForbidden, Reason: fmt.Sprintf("%s is no box of this server", addr)}
	} else if err != nil {
		return broker.Grant{}, err
	}
	if b.Desired != "running" || b.Observed != "running" {
		return broker.Grant{Box: b.Name}, &broker.Refusal{Status: http.StatusForbidden, Reason: fmt.Sprintf("box %s is not running", b.Name)}
	}
	via, whose := b.Owner, ""
	if user != 0 && user != b.Owner {
		u, err := sc.store.GetUser(user)
		if err == nil {
			var a string
			if a, err = sc.core.BoxAccess(u, b); err == nil && caller.AccessRank(a) < caller.AccessRank(caller.AccessMember) {
				err = store.ErrNotFound
			}
		}
		if errors.Is(err, store.ErrNotFound) {
			return broker.Grant{Box: b.Name}, &broker.Refusal{Status: http.StatusForbidden, Reason: fmt.Sprintf("this stand-in for %s names a user who may not work in box %s", name, b.Name)}
		} else if err != nil {
			return broker.Grant{}, err
		}
		via, whose = user, u.Name
	}
	row, err := sc.store.SecretFor(via, name)
	if errors.Is(err, store.ErrNotFound) || (err == nil && len(row.Broker.Hosts) == 0) {
		return broker.Grant{Box: b.Name, User: whose}, &broker.Refusal{Status: http.StatusForbidden, Reason: fmt.Sprintf("box %s has no brokered secret %s", b.Name, name)}
	} else if err != nil {
		return broker.Grant{}, err
	}
	v, err := sc.core.OpenSecret(row.Name, row.Sealed)
	if err != nil {
		return broker.Grant{}, fmt.Errorf("secret %s cannot be opened: %w", name, err)
	}
	h, err := broker.ParseHeader(row.Broker.Header)
	if err != nil {
		return broker.Grant{}, err
	}
	l, err := broker.ParseLimit(row.Broker.Limit)
	if err != nil {
		return broker.Grant{}, err
	}
	return broker.Grant{
		Box: b.Name, User: whose, StandIn: sc.core.StandIn(b, via, row),
		Value: v, Header: h, Hosts: row.Broker.Hosts, Limit: l,
	}, nil
}

// Done counts a request the broker answered against its box and
// secret, and writes a refusal to the audit log (a box's rate only the
// first time in its window).
func (sc *Secrets) Done(d broker.Done) {
	if d.User != "" {
		// Another user's secret, spent in the box: counted as theirs.
		d.Secret += "@" + d.User
	}
	if d.Box != "" && d.Secret != "" {
		if err := sc.store.AddBrokerUse(d.Box, d.Secret, d.Status, d.Refused != "", d.Up, d.Down, sc.core.Time()); err != nil {
			sc.log.Error("counting a brokered request", "box", d.Box, "secret", d.Secret, "err", err)
		}
	}
	if d.Refused == "" || (d.Status == http.StatusTooManyRequests && !d.FirstLimited) {
		return
	}
	detail, _ := json.Marshal(map[string]any{"host": d.Host, "status": d.Status})
	e := audit.Entry{Action: "broker.refused", Via: "broker", Addr: d.Addr, Box: d.Box, User: d.User, Detail: detail, Result: d.Refused}
	if d.Secret != "" {
		e.Object = "secrets/" + d.Secret
	}
	sc.core.Record(e)
}
