package broker

import (
	"slices"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
)

// Check reads a secret's broker settings as the API gives them into
// their kept form: hosts (split at commas, each once), the header and the
// limit, each checked and written as this package writes them. No hosts:
// not brokered (the zero value).
func Check(p *api.SecretBroker) (api.SecretBroker, error) {
	if p == nil || len(p.Hosts) == 0 {
		if p != nil && (p.Header != "" || p.Limit != "") {
			return api.SecretBroker{}, api.Invalid("broker", "a header or limit without hosts: give the host(s) the secret may be sent to")
		}
		return api.SecretBroker{}, nil
	}
	hosts := make([]string, 0, len(p.Hosts))
	for _, h := range p.Hosts {
		for _, one := range strings.Split(h, ",") {
			if one = strings.TrimSpace(one); one != "" && !slices.Contains(hosts, one) {
				hosts = append(hosts, one)
			}
		}
	}
	if err := CheckHosts(hosts); err != nil {
		return api.SecretBroker{}, api.Invalid("broker", "%v", err)
	}
	spec := p.Header
	if spec == "" {
		spec = "bearer"
	}
	h, err := ParseHeader(spec)
	if err != nil {
		return api.SecretBroker{}, api.Invalid("header", "%v", err)
	}
	l, err := ParseLimit(p.Limit)
	if err != nil {
		return api.SecretBroker{}, api.Invalid("limit", "%v", err)
	}
	return api.SecretBroker{Hosts: hosts, Header: h.String(), Limit: l.String()}, nil
}
