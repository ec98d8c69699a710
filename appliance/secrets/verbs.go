package secrets

import (
	"context"
	"errors"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/broker"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Set stores a secret of the user of ctx, encrypted; it is never
// shown back. It goes into that user's boxes only; an owner may share it,
// and then members' boxes that have no secret of that name get it too
// (where their members can read it).
//
// With a broker (hosts to send it to), boxes get a stand-in instead of
// the value, and the value goes only to those hosts, through the broker.
func (sc *Secrets) Set(ctx context.Context, name string, value []byte, shared bool, brk *api.SecretBroker) error {
	if !api.SecretName(name) {
		return api.Invalid("name", "bad secret name %q: use an environment variable name (letters, digits, _)", name)
	}
	if len(value) == 0 || len(value) > 64<<10 {
		return api.Invalid("value", "a secret must have 1 byte to 64 KiB")
	}
	if shared {
		if err := caller.RequireOwner(ctx, "share secrets"); err != nil {
			return err
		}
	}
	b, err := broker.Check(brk)
	if err != nil {
		return err
	}
	sealed, err := sc.core.SealSecret(name, value)
	if err != nil {
		return err
	}
	return sc.store.PutSecret(caller.OwnerID(ctx), name, sealed, shared, store.Broker(b), sc.core.Time())
}

// List lists the names (never the values) of the secrets of the user of
// ctx and of those shared with everyone.
func (sc *Secrets) List(ctx context.Context) ([]api.Secret, error) {
	me := caller.OwnerID(ctx)
	infos, err := sc.store.Secrets(me)
	if err != nil {
		return nil, err
	}
	out := []api.Secret{}
	for _, i := range infos {
		out = append(out, api.Secret{Name: i.Name, Updated: i.Updated, Shared: i.Shared, Mine: i.Owner == me, Broker: apiBroker(i.Broker)})
	}
	return out, nil
}

// Remove removes a secret of the user of ctx.
func (sc *Secrets) Remove(ctx context.Context, name string) error {
	if err := sc.store.DeleteSecret(caller.OwnerID(ctx), name); errors.Is(err, store.ErrNotFound) {
		return api.NotFound("secret", name)
	} else if err != nil {
		return err
	}
	return nil
}

func apiBroker(b store.Broker) *api.SecretBroker {
	if len(b.Hosts) == 0 {
		return nil
	}
	return &api.SecretBroker{Hosts: b.Hosts, Header: b.Header, Limit: b.Limit}
}

// SetBroker changes how a secret of the user of ctx is brokered
// (nil or no hosts: not brokered), keeping its value. Boxes that run with
// its stand-in keep it; those that had the value keep that until their
// commands end.
func (sc *Secrets) SetBroker(ctx context.Context, name string, p *api.SecretBroker) error {
	b, err := broker.Check(p)
	if err != nil {
		return err
	}
	if err := sc.store.SetSecretBroker(caller.OwnerID(ctx), name, store.Broker(b)); errors.Is(err, store.ErrNotFound) {
		return api.NotFound("secret", name)
	} else if err != nil {
		return err
	}
	return nil
}
