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
//
// Entries recorded at the same time are written together: one
// transaction for all of them (an exec writes two entries, and a busy
// server's requests queued behind each other's transactions on the
// store's one connection). A Record that finds no write under way writes
// its own entry at once; one that finds a write under way waits for it,
// and the first to wait then writes every entry that waited, its own
// among them. Each Record returns once its entry is written, as when
// each wrote its own; the entries keep the order in which they were
// recorded, in the log and in the export file.
type Auditor struct {
	Key audit.Key
	// Export, when set, gets each entry as a line (audit_file).
	Export *os.File

	mu      sync.Mutex
	writing bool        // a Record is writing a batch
	queue   []*auditing // waiting for the next batch, in order
	batches int         // transactions written (for tests)
}

// auditing is one entry waiting to be written: its Record waits on ch,
// which says true once it is written and false when that Record is to
// write the next batch.
type auditing struct {
	e  audit.Entry
	ch chan bool
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
	me := &auditing{e: e, ch: make(chan bool, 1)}
	a.mu.Lock()
	a.queue = append(a.queue, me)
	if a.writing {
		a.mu.Unlock()
		if <-me.ch {
			return // written in another's batch
		}
		a.mu.Lock() // this one's turn: the queue starts with it
	}
	a.writing = true
	batch := a.queue
	a.queue = nil
	a.batches++
	a.mu.Unlock()

	defer func() {
		// Even if the write panicked: no Record waits for ever.
		for _, w := range batch[1:] {
			w.ch <- true
		}
		a.mu.Lock()
		if len(a.queue) > 0 {
			a.queue[0].ch <- false // the first that waited writes the rest
		} else {
			a.writing = false
		}
		a.mu.Unlock()
	}()
	s.writeAudit(batch)
}

// writeAudit writes a batch in one transaction, then its export lines.
func (s *Service) writeAudit(batch []*auditing) {
	a := s.Audit
	es := make([]audit.Entry, len(batch))
	for i, w := range batch {
		es[i] = w.e
	}
	es, err := s.Store.AppendAudits(es, a.Key.Seal)
	if err != nil {
		for _, e := range es {
			s.Log.Error("the audit log could not be written", "action", e.Action, "user", e.User, "box", e.Box, "err", err)
		}
		return
	}
	if a.Export != nil {
		var lines []byte
		for _, e := range es {
			b, _ := json.Marshal(e)
			lines = append(append(lines, b...), '\n')
		}
		if _, err := a.Export.Write(lines); err != nil {
			s.Log.Error("the audit export could not be written", "seq", es[0].Seq, "entries", len(es), "err", err)
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
		f.Member = u.Name
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
