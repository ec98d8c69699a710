package service

import (
	"encoding/json"
	"os"
	"sync"

	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Auditor writes the audit log (package audit): sealed into the store,
// and as a JSON line to the export file when there is one.
type Auditor struct {
	Key audit.Key
	// Export, when set, gets each entry as a line (audit_file).
	Export *os.File

	mu sync.Mutex // one line at a time
}

// Record writes e to the audit log, now. A box named without its owner
// gets the owner it has (none, for a box that does not exist). It is
// logged, not returned, when the log cannot be written: the action it
// records has happened.
func (s *Service) Record(e audit.Entry) {
	a := s.Audit
	if a == nil {
		return
	}
	e.At = s.now()
	if e.Box != "" && e.Owner == "" {
		e.Owner = s.BoxOwnerName(e.Box)
	}
	e, err := s.Store.AppendAudit(e, a.Key.Seal)
	if err != nil {
		s.Log.Error("the audit log could not be written", "action", e.Action, "user", e.User, "box", e.Box, "err", err)
		return
	}
	if a.Export != nil {
		b, _ := json.Marshal(e)
		a.mu.Lock()
		_, err = a.Export.Write(append(b, '\n'))
		a.mu.Unlock()
		if err != nil {
			s.Log.Error("the audit export could not be written", "seq", e.Seq, "err", err)
		}
	}
}

// BoxOwnerName is the name of box's owner ("" when it has none or is
// not there): a record made before the box changes hands or goes keeps
// it.
func (s *Service) BoxOwnerName(box string) string {
	b, err := s.Store.GetBox(box)
	if err != nil {
		return ""
	}
	return s.OwnerName(b)
}

// OwnerName is the name of box b's owner ("" when it has none).
func (s *Service) OwnerName(b store.Box) string {
	if b.Owner == 0 {
		return ""
	}
	u, err := s.Store.GetUser(b.Owner)
	if err != nil {
		return ""
	}
	return u.Name
}

// AuditKey is the key the audit log is sealed with (nil: no log is
// kept).
func (s *Service) AuditKey() *audit.Key {
	if s.Audit == nil {
		return nil
	}
	return &s.Audit.Key
}
