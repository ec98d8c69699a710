package store

import (
	"database/sql"
	"errors"
	"strings"
	"time"
)

// SecretInfo is what may be told of a secret: never its value.
type SecretInfo struct {
	Owner   int64
	Name    string
	Updated time.Time
	// Shared: an owner's secret that members' boxes use too when they have
	// none of that name (readable in those boxes, so by those members).
	Shared bool
	Broker Broker
}

// Broker is how a brokered secret is used (package broker): the hosts it
// may be sent to (none: it is not brokered), the header it goes in, and a
// rate per box ("" for none).
type Broker struct {
	Hosts  []string
	Header string
	Limit  string
}

// SecretRow is the secret a box of a user gets under a name.
type SecretRow struct {
	SecretInfo
	Sealed []byte
}

func hostsText(h []string) string { return strings.Join(h, ",") }

func hostsOf(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// PutSecret stores a user's sealed (encrypted) secret and how it is
// brokered.
func (s *Store) PutSecret(owner int64, name string, sealed []byte, shared bool, b Broker, at time.Time) error {
	_, err := s.q.Exec(`INSERT INTO user_secrets (owner, name, sealed, updated, shared, broker_hosts, broker_header, broker_limit) VALUES (?,?,?,?,?,?,?,?)
		ON CONFLICT(owner, name) DO UPDATE SET sealed=excluded.sealed, updated=excluded.updated, shared=excluded.shared,
		broker_hosts=excluded.broker_hosts, broker_header=excluded.broker_header, broker_limit=excluded.broker_limit`,
		owner, name, sealed, unix(at), shared, hostsText(b.Hosts), b.Header, b.Limit)
	return err
}

// SetSecretBroker changes how a user's secret is brokered, keeping its
// value (and so its boxes' stand-ins).
func (s *Store) SetSecretBroker(owner int64, name string, b Broker) error {
	return setSecretBroker(s.q.Exec, owner, name, b)
}

func setSecretBroker(exec func(string, ...any) (sql.Result, error), owner int64, name string, b Broker) error {
	res, err := exec(`UPDATE user_secrets SET broker_hosts=?, broker_header=?, broker_limit=? WHERE owner=? AND name=?`,
		hostsText(b.Hosts), b.Header, b.Limit, owner, name)
	if err != nil {
		return err
	}
	return oneRow(res)
}

// Secret returns the sealed secret a box of owner gets under name: the
// owner's own, or else one an owner of the server shared.
func (s *Store) Secret(owner int64, name string) ([]byte, error) {
	r, err := s.SecretFor(owner, name)
	return r.Sealed, err
}

// SecretFor returns the whole secret a box of owner gets under name.
func (s *Store) SecretFor(owner int64, name string) (SecretRow, error) {
	var r SecretRow
	var u int64
	var hosts string
	err := s.q.QueryRow(`SELECT owner, name, updated, shared, broker_hosts, broker_header, broker_limit, sealed FROM user_secrets
		WHERE name=? AND (owner=? OR shared=1) ORDER BY owner=? DESC LIMIT 1`, name, owner, owner).
		Scan(&r.Owner, &r.Name, &u, &r.Shared, &hosts, &r.Broker.Header, &r.Broker.Limit, &r.Sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return r, ErrNotFound
	}
	r.Updated, r.Broker.Hosts = fromUnix(u), hostsOf(hosts)
	return r, err
}

const ownSecretsQ = `SELECT owner, name, updated, shared, broker_hosts, broker_header, broker_limit FROM user_secrets WHERE owner=? ORDER BY name`

// OwnSecrets lists a user's own secrets (names and times only), inside
// a transaction.
func (t *Tx) OwnSecrets(owner int64) ([]SecretInfo, error) {
	return listAll(t.tx, ownSecretsQ, scanSecretInfo, owner)
}

// OwnSecrets lists a user's own secrets (names and times only).
func (s *Store) OwnSecrets(owner int64) ([]SecretInfo, error) {
	return listAll(s.q, ownSecretsQ, scanSecretInfo, owner)
}

// SetSecretBroker changes how a user's secret is brokered, inside a
// transaction.
func (t *Tx) SetSecretBroker(owner int64, name string, b Broker) error {
	return setSecretBroker(t.tx.Exec, owner, name, b)
}

func scanSecretInfo(r scanner) (SecretInfo, error) {
	var i SecretInfo
	var u int64
	var hosts string
	err := r.Scan(&i.Owner, &i.Name, &u, &i.Shared, &hosts, &i.Broker.Header, &i.Broker.Limit)
	i.Updated, i.Broker.Hosts = fromUnix(u), hostsOf(hosts)
	return i, err
}

// Secrets lists a user's secrets and the shared ones (names and times only).
func (s *Store) Secrets(owner int64) ([]SecretInfo, error) {
	return listAll(s.q, `SELECT owner, name, updated, shared, broker_hosts, broker_header, broker_limit FROM user_secrets WHERE owner=? OR shared=1 ORDER BY name, owner`,
		scanSecretInfo, owner)
}

// DeleteSecret removes a user's secret.
func (s *Store) DeleteSecret(owner int64, name string) error {
	res, err := s.q.Exec(`DELETE FROM user_secrets WHERE owner=? AND name=?`, owner, name)
	if err != nil {
		return err
	}
	return oneRow(res)
}

// BrokerUse is what one box sent through the broker with one secret.
type BrokerUse struct {
	Box, Secret       string
	Requests, Refused int64
	BytesUp           int64
	BytesDown         int64
	// S2, S4 and S5 count the API's answers by class (2xx, 4xx, 5xx).
	S2, S4, S5 int64
	LastStatus int
	Last       time.Time
}

// AddBrokerUse adds one request to a box's count for a secret.
func (s *Store) AddBrokerUse(box, secret string, status int, refused bool, up, down int64, at time.Time) error {
	class := func(c int) int {
		if status/100 == c && !refused {
			return 1
		}
		return 0
	}
	ref := 0
	if refused {
		ref = 1
	}
	_, err := s.q.Exec(`INSERT INTO broker_use (box, secret, requests, refused, bytes_up, bytes_down, s2, s4, s5, last_status, last_at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(box, secret) DO UPDATE SET requests=requests+excluded.requests, refused=refused+excluded.refused,
		bytes_up=bytes_up+excluded.bytes_up, bytes_down=bytes_down+excluded.bytes_down,
		s2=s2+excluded.s2, s4=s4+excluded.s4, s5=s5+excluded.s5,
		last_status=excluded.last_status, last_at=max(last_at, excluded.last_at)`,
		box, secret, 1-ref, ref, up, down, class(2), class(4), class(5), status, unix(at))
	return err
}

// BrokerUses lists a box's counts, by secret.
func (s *Store) BrokerUses(box string) ([]BrokerUse, error) {
	return listAll(s.q, `SELECT box, secret, requests, refused, bytes_up, bytes_down, s2, s4, s5, last_status, last_at FROM broker_use WHERE box=? ORDER BY secret`,
		func(r scanner) (BrokerUse, error) {
			var u BrokerUse
			var at int64
			err := r.Scan(&u.Box, &u.Secret, &u.Requests, &u.Refused, &u.BytesUp, &u.BytesDown, &u.S2, &u.S4, &u.S5, &u.LastStatus, &at)
			u.Last = fromUnix(at)
			return u, err
		}, box)
}
