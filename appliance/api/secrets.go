package api

import (
	"time"
)

// Secret is a secret's name; its value is never sent back.
type Secret struct {
	Name    string    `json:"name"`
	Updated time.Time `json:"updated"`
	// Shared: set by an owner for every user's boxes that have no secret
	// of this name; those boxes' users can read it there.
	Shared bool `json:"shared"`
	// Mine: the caller's own (else an owner's shared one).
	Mine bool `json:"mine"`
	// Broker, when set, says the secret is brokered: boxes get a
	// stand-in, and the value goes only to these hosts, through the
	// broker.
	Broker *SecretBroker `json:"broker,omitempty"`
}

// SecretBroker is how a secret is brokered: the hosts it may be sent to,
// the header it goes in ("x-api-key", "bearer", "token", a header's name,
// or "NAME: PREFIX"), and how many requests a box may send with it
// ("60/min", "1000/day"; "" for no limit).
type SecretBroker struct {
	Hosts  []string `json:"hosts"`
	Header string   `json:"header"`
	Limit  string   `json:"limit,omitempty"`
}

// BrokerUse is what a box sent through the broker with one secret.
type BrokerUse struct {
	Secret   string `json:"secret"`
	Requests int64  `json:"requests"`
	// Refused counts requests the broker turned away (another box's
	// stand-in, a host the secret is not for, past the limit, ...).
	Refused   int64 `json:"refused"`
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
	// Status counts the API's answers by class: "2xx", "4xx", "5xx".
	Status     map[string]int64 `json:"status,omitempty"`
	LastStatus int              `json:"last_status,omitempty"`
	Last       *time.Time       `json:"last,omitempty"`
}
