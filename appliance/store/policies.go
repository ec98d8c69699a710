package store

import (
	"encoding/json"
)

// Policy is a declared egress policy: domains and IPv4 CIDRs a box may
// reach. Boxes name it in their Policy field.
type Policy struct {
	Name         string
	Project      string
	AllowDomains []string
	AllowCIDRs   []string
	Owner        int64
}

// PutPolicy creates or replaces a policy.
func (t *Tx) PutPolicy(p Policy) error {
	if p.AllowDomains == nil {
		p.AllowDomains = []string{}
	}
	if p.AllowCIDRs == nil {
		p.AllowCIDRs = []string{}
	}
	_, err := t.tx.Exec(`INSERT INTO policies (name, project, allow_domains, allow_cidrs, owner) VALUES (?,?,?,?,?)
		ON CONFLICT(name) DO UPDATE SET project=excluded.project, allow_domains=excluded.allow_domains, allow_cidrs=excluded.allow_cidrs`,
		p.Name, p.Project, mustJSON(p.AllowDomains), mustJSON(p.AllowCIDRs), p.Owner)
	return err
}

// DeletePolicy removes a policy.
func (t *Tx) DeletePolicy(name string) error {
	res, err := t.tx.Exec(`DELETE FROM policies WHERE name=?`, name)
	if err != nil {
		return err
	}
	return oneRow(res)
}

const listPoliciesQ = `SELECT name, project, allow_domains, allow_cidrs, owner FROM policies ORDER BY name`

func scanPolicy(r scanner) (Policy, error) {
	var p Policy
	var d, c string
	if err := r.Scan(&p.Name, &p.Project, &d, &c, &p.Owner); err != nil {
		return p, err
	}
	if err := json.Unmarshal([]byte(d), &p.AllowDomains); err != nil {
		return p, err
	}
	return p, json.Unmarshal([]byte(c), &p.AllowCIDRs)
}

// ListPolicies lists policies by name.
func (t *Tx) ListPolicies() ([]Policy, error) { return listAll(t.tx, listPoliciesQ, scanPolicy) }

// ListPolicies lists policies by name.
func (s *Store) ListPolicies() ([]Policy, error) { return listAll(s.q, listPoliciesQ, scanPolicy) }

// Serial reads the serial inside the transaction (before its own bump).
func (t *Tx) Serial() (int64, error) {
	var n int64
	err := t.tx.QueryRow(`SELECT v FROM meta WHERE k='serial'`).Scan(&n)
	return n, err
}
