package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/broker"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Brokered secrets (package broker). A box of this server gets, in the
// environment of every command paddockd starts in it (exec, jobs,
// prompts, terminals), PADDOCK_BROKER (the broker's address) and, for
// each brokered secret its owner has, the secret's name set to the box's
// stand-in. A prompt also gets its agent's base-URL variables pointed at
// the broker. A box on another server gets none of this: the broker
// serves the boxes of the server paddockd runs on.

// brokerOn says whether box b can use the broker.
func (s *Service) brokerOn(b store.Box) bool {
	return s.BrokerURL != "" && len(s.BrokerKey) > 0 && b.Node == ""
}

// noBroker says why box b cannot use the broker.
func (s *Service) noBroker(b store.Box) string {
	if b.Node != "" {
		return fmt.Sprintf("it is on server %s, and only the boxes of the server paddockd runs on have one yet", b.Node)
	}
	return "the broker is off on this server (broker_port = 0)"
}

// checkBroker reads a SecretBroker into the store's form.
func checkBroker(p *api.SecretBroker) (store.Broker, error) {
	if p == nil || len(p.Hosts) == 0 {
		if p != nil && (p.Header != "" || p.Limit != "") {
			return store.Broker{}, api.Invalid("broker", "a header or limit without hosts: give the host(s) the secret may be sent to")
		}
		return store.Broker{}, nil
	}
	hosts := make([]string, 0, len(p.Hosts))
	for _, h := range p.Hosts {
		for _, one := range strings.Split(h, ",") {
			if one = strings.TrimSpace(one); one != "" && !slices.Contains(hosts, one) {
				hosts = append(hosts, one)
			}
		}
	}
	if err := broker.CheckHosts(hosts); err != nil {
		return store.Broker{}, api.Invalid("broker", "%v", err)
	}
	spec := p.Header
	if spec == "" {
		spec = "bearer"
	}
	h, err := broker.ParseHeader(spec)
	if err != nil {
		return store.Broker{}, api.Invalid("header", "%v", err)
	}
	l, err := broker.ParseLimit(p.Limit)
	if err != nil {
		return store.Broker{}, api.Invalid("limit", "%v", err)
	}
	return store.Broker{Hosts: hosts, Header: h.String(), Limit: l.String()}, nil
}

func apiBroker(b store.Broker) *api.SecretBroker {
	if len(b.Hosts) == 0 {
		return nil
	}
	return &api.SecretBroker{Hosts: b.Hosts, Header: b.Header, Limit: b.Limit}
}

// SetSecretBroker changes how a secret of the user of ctx is brokered
// (nil or no hosts: not brokered), keeping its value. Boxes that run with
// its stand-in keep it; those that had the value keep that until their
// commands end.
func (s *Service) SetSecretBroker(ctx context.Context, name string, p *api.SecretBroker) error {
	b, err := checkBroker(p)
	if err != nil {
		return err
	}
	if err := s.Store.SetSecretBroker(caller.OwnerID(ctx), name, b); errors.Is(err, store.ErrNotFound) {
		return api.NotFound("secret", name)
	} else if err != nil {
		return err
	}
	return nil
}

// standIns are the stand-ins of box b, by secret: one for each brokered
// secret its owner has (their own, or one shared).
func (s *Service) standIns(b store.Box) (map[string]string, error) {
	if !s.brokerOn(b) {
		return nil, nil
	}
	infos, err := s.Store.Secrets(b.Owner)
	if err != nil {
		return nil, err
	}
	wins := map[string]store.SecretInfo{} // the owner's own over a shared one
	for _, i := range infos {
		if w, ok := wins[i.Name]; (i.Owner == b.Owner || i.Shared) && (!ok || w.Owner != b.Owner) {
			wins[i.Name] = i
		}
	}
	out := map[string]string{}
	for n, i := range wins {
		if len(i.Broker.Hosts) > 0 {
			out[n] = broker.StandIn(s.BrokerKey, b.UID, i.Owner, n, i.Updated)
		}
	}
	return out, nil
}

// brokerEnv is what every command in box b gets of the broker: its
// address and the box's stand-ins. A variable the box or the request
// sets wins.
func (s *Service) brokerEnv(b store.Box, env []string) ([]string, error) {
	ins, err := s.standIns(b)
	if err != nil || ins == nil {
		return env, err
	}
	set := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	add := func(k, v string) {
		if !set[k] {
			env = append(env, k+"="+v)
		}
	}
	add("PADDOCK_BROKER", s.BrokerURL)
	names := make([]string, 0, len(ins))
	for n := range ins {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		add(n, ins[n])
	}
	return env, nil
}

// brokerBase is the broker's address for a secret's first host.
func (s *Service) brokerBase(row store.SecretRow) string {
	return s.BrokerURL + "/" + row.Broker.Hosts[0]
}

// BrokerGrant says what the box at addr may do with the secret called
// name, for the broker: the box owner's (user 0), or, for a stand-in that
// names another user (a prompt they asked for in a box shared with them),
// that user's while they may still work in the box. A refusal when the
// Address is no box of this server, the box is not running (stopped, or
// being stopped), the user has no such access, or there is no such
// brokered secret.
func (s *Service) BrokerGrant(ctx context.Context, addr netip.Addr, name string, user int64) (broker.Grant, error) {
	b, err := s.Store.BoxAt(addr.String())
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
		u, err := s.Store.GetUser(user)
		if err == nil {
			var a string
			if a, err = s.BoxAccess(u, b); err == nil && caller.AccessRank(a) < caller.AccessRank(caller.AccessMember) {
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
	row, err := s.Store.SecretFor(via, name)
	if errors.Is(err, store.ErrNotFound) || (err == nil && len(row.Broker.Hosts) == 0) {
		return broker.Grant{Box: b.Name, User: whose}, &broker.Refusal{Status: http.StatusForbidden, Reason: fmt.Sprintf("box %s has no brokered secret %s", b.Name, name)}
	} else if err != nil {
		return broker.Grant{}, err
	}
	v, err := s.Sealer.Open(row.Name, row.Sealed)
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
		Box: b.Name, User: whose, StandIn: s.standIn(b, via, row),
		Value: v, Header: h, Hosts: row.Broker.Hosts, Limit: l,
	}, nil
}

// standIn is box b's stand-in for row, a brokered secret of user via's
// (their own, or one shared with them): the box's owner's, or another
// user's who asked for a prompt in it (broker.UserStandIn).
func (s *Service) standIn(b store.Box, via int64, row store.SecretRow) string {
	if via == b.Owner {
		return broker.StandIn(s.BrokerKey, b.UID, row.Owner, row.Name, row.Updated)
	}
	return broker.UserStandIn(s.BrokerKey, b.UID, via, row.Owner, row.Name, row.Updated)
}

// BrokerDone counts a request the broker answered against its box and
// secret, and writes a refusal to the audit log (a box's rate only the
// first time in its window).
func (s *Service) BrokerDone(d broker.Done) {
	if d.User != "" {
		// Another user's secret, spent in the box: counted as theirs.
		d.Secret += "@" + d.User
	}
	if d.Box != "" && d.Secret != "" {
		if err := s.Store.AddBrokerUse(d.Box, d.Secret, d.Status, d.Refused != "", d.Up, d.Down, s.now()); err != nil {
			s.Log.Error("counting a brokered request", "box", d.Box, "secret", d.Secret, "err", err)
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
	s.Record(e)
}

// BrokerUses is what box sent through the broker, by secret.
func (s *Service) BrokerUses(box string) ([]api.BrokerUse, error) {
	us, err := s.Store.BrokerUses(box)
	if err != nil || len(us) == 0 {
		return nil, err
	}
	out := make([]api.BrokerUse, 0, len(us))
	for _, u := range us {
		a := api.BrokerUse{Secret: u.Secret, Requests: u.Requests, Refused: u.Refused, BytesUp: u.BytesUp, BytesDown: u.BytesDown, LastStatus: u.LastStatus}
		for k, n := range map[string]int64{"2xx": u.S2, "4xx": u.S4, "5xx": u.S5} {
			if n > 0 {
				if a.Status == nil {
					a.Status = map[string]int64{}
				}
				a.Status[k] = n
			}
		}
		if !u.Last.IsZero() {
			t := u.Last
			a.Last = &t
		}
		out = append(out, a)
	}
	return out, nil
}

// agentBaseURLs are the variables an agent reads its API's address from,
// for those of its secrets (user via's) that are brokered for box b.
func (s *Service) agentBaseURLs(b store.Box, via int64, urls map[string]string) (map[string]string, error) {
	if !s.brokerOn(b) || len(urls) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for v, templ := range urls {
		ok := true
		val := os.Expand(templ, func(sec string) string {
			row, err := s.Store.SecretFor(via, sec)
			if err != nil || len(row.Broker.Hosts) == 0 {
				ok = false
				return ""
			}
			return s.brokerBase(row)
		})
		if ok {
			out[v] = val
		}
	}
	return out, nil
}
