package service

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
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

// AuditLog lists the entries the caller may see: owners and admins, all;
// a member, their own actions and those about their boxes.
func (s *Service) AuditLog(ctx context.Context, f store.AuditFilter) ([]audit.Entry, error) {
	if u, ok := UserFrom(ctx); ok && !u.SeesAll() {
		f.Member, f.MemberSince = u.Name, u.Created
	}
	es, err := s.Store.Audit(f)
	if es == nil {
		es = []audit.Entry{}
	}
	return es, err
}

// VerifyAudit checks the whole log's chain (the owner's): the first
// place it breaks, if any.
func (s *Service) VerifyAudit(ctx context.Context) (api.AuditCheck, error) {
	if err := requireAdmin(ctx, "verify the audit log"); err != nil {
		return api.AuditCheck{}, err
	}
	if s.Audit == nil {
		return api.AuditCheck{}, conflict("this server keeps no audit log")
	}
	seq, hash, seal, err := s.Store.AuditAnchor()
	if err != nil {
		return api.AuditCheck{}, err
	}
	v := audit.Verifier{Key: s.Audit.Key}
	out := api.AuditCheck{First: seq + 1}
	check := v.Start(seq, hash, seal)
	if check == nil {
		check = s.Store.WalkAudit(func(e audit.Entry) error {
			if err := v.Next(e); err != nil {
				return err
			}
			out.Entries++
			out.Last = e.Seq
			return nil
		})
	}
	var b *audit.Break
	switch {
	case errors.As(check, &b):
		out.Broken = b
	case check != nil:
		return out, check
	}
	out.OK = out.Broken == nil
	return out, nil
}

// PruneAudit removes the entries older than audit_days (none when 0).
func (s *Service) PruneAudit() {
	if s.Audit == nil || s.Cfg.AuditDays <= 0 {
		return
	}
	before := s.now().Add(-time.Duration(s.Cfg.AuditDays) * 24 * time.Hour)
	n, err := s.Store.PruneAudit(before, s.Audit.Key.Anchor)
	if err != nil {
		s.Log.Error("pruning the audit log", "err", err)
	} else if n > 0 {
		s.Log.Info("audit log pruned", "entries", n, "older than", before)
	}
}
