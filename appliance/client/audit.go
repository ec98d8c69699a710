package client

import (
	"context"
	"github.com/paddock-dev/paddock/appliance/api"
	"net/url"
	"strconv"
)

// AuditQuery picks audit log entries; zero fields pick all.
type AuditQuery struct {
	Box, User, Action, Since string
	After                    int64
	Limit                    int
}

// Audit lists the audit log entries the caller may see, oldest first.
func (c *Client) Audit(ctx context.Context, q AuditQuery) ([]api.AuditEntry, error) {
	v := url.Values{}
	for k, s := range map[string]string{"box": q.Box, "user": q.User, "action": q.Action, "since": q.Since} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.After > 0 {
		v.Set("after", strconv.FormatInt(q.After, 10))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var es []api.AuditEntry
	return es, c.do(ctx, "GET", "/audit?"+v.Encode(), nil, &es)
}

// VerifyAudit checks the audit log's chain (the owner or an admin).
func (c *Client) VerifyAudit(ctx context.Context, seen *api.AuditMark) (api.AuditCheck, error) {
	var r api.AuditCheck
	q := ""
	if seen != nil {
		q = "?seen=" + url.QueryEscape(seen.String())
	}
	return r, c.do(ctx, "GET", "/audit/verify"+q, nil, &r)
}
