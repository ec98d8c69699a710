package store

import "github.com/paddock-dev/paddock/appliance/store/auditlog"

// AuditFilter picks audit entries (package auditlog); zero fields pick all.
type AuditFilter = auditlog.Filter
