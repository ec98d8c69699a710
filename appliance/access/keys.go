package access

import (
	"context"
	"errors"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
	"golang.org/x/crypto/ssh"
)

// AddKey registers a public key (authorized_keys form) for SSH to boxes.
// The name defaults to the key's comment.
func (a *Access) AddKey(ctx context.Context, p api.KeyPost) (api.Key, error) {
	pub, comment, _, _, err := ssh.ParseAuthorizedKey([]byte(p.Key))
	if err != nil {
		return api.Key{}, api.Invalid("key", "not a public key in authorized_keys form: %v", err)
	}
	name := p.Name
	if name == "" {
		name = comment
	}
	if name == "" {
		name = ssh.FingerprintSHA256(pub)
	}
	k := store.SSHKey{Fingerprint: ssh.FingerprintSHA256(pub), Name: name,
		Key: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))), Created: a.core.Time(), Owner: caller.OwnerID(ctx)}
	if err := a.store.AddSSHKey(k); errors.Is(err, store.ErrConflict) {
		return api.Key{}, api.Conflict("this key, or a key named %q, is already registered", name)
	} else if err != nil {
		return api.Key{}, err
	}
	return api.Key{Name: k.Name, Fingerprint: k.Fingerprint, Type: pub.Type(), Created: k.Created}, nil
}

// Keys lists the user's registered keys.
func (a *Access) Keys(ctx context.Context) ([]api.Key, error) {
	ks, err := a.store.SSHKeys(caller.OwnerID(ctx))
	if err != nil {
		return nil, err
	}
	out := []api.Key{}
	for _, k := range ks {
		typ, _, _ := strings.Cut(k.Key, " ")
		out = append(out, api.Key{Name: k.Name, Fingerprint: k.Fingerprint, Type: typ, Created: k.Created})
	}
	return out, nil
}

// RemoveKey removes one of the user's keys by name or fingerprint.
func (a *Access) RemoveKey(ctx context.Context, nameOrFingerprint string) error {
	if err := a.store.DeleteSSHKey(caller.OwnerID(ctx), nameOrFingerprint); errors.Is(err, store.ErrNotFound) {
		return api.NotFound("key", nameOrFingerprint)
	} else if err != nil {
		return err
	}
	return nil
}
