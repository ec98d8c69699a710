package api

import (
	"time"
)

// PolicyPut sets a box's policy.
type PolicyPut struct {
	Policy string `json:"policy"`
}

// PolicyPost creates a named policy outside any Boxfile.
type PolicyPost = PolicySpec

// Policy is a named policy.
type Policy struct {
	PolicySpec
	Project string   `json:"project,omitempty"`
	UsedBy  []string `json:"used_by,omitempty"`
}

// PolicyReport is what a box's firewall did.
type PolicyReport struct {
	Box    string            `json:"box"`
	Policy string            `json:"policy"`
	Drops  map[string]uint64 `json:"drops"`
	DNS    []DNSDecision     `json:"dns"`
}

// DNSDecision is one answer of the boxes' resolver.
type DNSDecision struct {
	Time    time.Time `json:"time"`
	Name    string    `json:"name"`
	Allowed bool      `json:"allowed"`
	Reason  string    `json:"reason"`
}
