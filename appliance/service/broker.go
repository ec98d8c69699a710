package service

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/broker"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Brokered secrets (package broker). A box of this server gets, in the
// environment of every command paddockd starts in it (exec, jobs,
// prompts, terminals), PADDOCK_BROKER (the broker's address) and, for
// each brokered secret its owner has, the secret's name set to the box's
// stand-in. A prompt also gets its agent's base-URL variables pointed at
// the broker. A box on another server gets none of this: the broker
// serves the boxes of the server paddockd runs on.

// BrokerOn says whether box b can use the broker.
func (s *Service) BrokerOn(b store.Box) bool {
	return s.BrokerURL != "" && len(s.BrokerKey) > 0 && b.Node == ""
}

// NoBroker says why box b cannot use the broker.
func (s *Service) NoBroker(b store.Box) string {
	if b.Node != "" {
		return fmt.Sprintf("it is on server %s, and only the boxes of the server paddockd runs on have one yet", b.Node)
	}
	return "the broker is off on this server (broker_port = 0)"
}

// standIns are the stand-ins of box b, by secret: one for each brokered
// secret its owner has (their own, or one shared).
func (s *Service) standIns(b store.Box) (map[string]string, error) {
	if !s.BrokerOn(b) {
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

// AgentBaseURLs are the variables an agent reads its API's address from,
// for those of its secrets (user via's) that are brokered for box b.
func (s *Service) AgentBaseURLs(b store.Box, via int64, urls map[string]string) (map[string]string, error) {
	if !s.BrokerOn(b) || len(urls) == 0 {
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

// StandIn is box b's stand-in for row, a brokered secret of user via's
// (their own, or one shared with them): the box's owner's, or another
// user's who asked for a prompt in it (broker.UserStandIn).
func (s *Service) StandIn(b store.Box, via int64, row store.SecretRow) string {
	if via == b.Owner {
		return broker.StandIn(s.BrokerKey, b.UID, row.Owner, row.Name, row.Updated)
	}
	return broker.UserStandIn(s.BrokerKey, b.UID, via, row.Owner, row.Name, row.Updated)
}

// SealSecret seals a secret's value for the store.
func (s *Service) SealSecret(name string, value []byte) ([]byte, error) {
	if s.Sealer == nil {
		return nil, errors.New("secrets are not configured on this server")
	}
	return s.Sealer.Seal(name, value), nil
}

// OpenSecret opens a sealed secret's value.
func (s *Service) OpenSecret(name string, sealed []byte) ([]byte, error) {
	if s.Sealer == nil {
		return nil, errors.New("secrets are not configured on this server")
	}
	return s.Sealer.Open(name, sealed)
}
