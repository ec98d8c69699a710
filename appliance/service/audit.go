package service

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/caller"
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
	if u, ok := caller.From(ctx); ok && !u.SeesAll() {
		f.Member, f.MemberSince = u.Name, u.Created
	}
	es, err := s.Store.Audit(f)
	if es == nil {
		es = []audit.Entry{}
	}
	return es, err
}

// VerifyAudit checks the whole log's chain (the owner's): the first
// place it breaks, if any. A chain that holds may still have lost its end
// (entries cut off, or the whole log wiped, by someone who has the state
// folder): it is also held against the witnesses outside it, seen (the
// head a client kept from its last check, when it sends one) and the last
// entry of the export (audit_file), and what they have that it has not is
// named. The log's head is in the answer, for the client to keep.
func (s *Service) VerifyAudit(ctx context.Context, seen *api.AuditMark) (api.AuditCheck, error) {
	if err := caller.RequireAdmin(ctx, "verify the audit log"); err != nil {
		return api.AuditCheck{}, err
	}
	if s.Audit == nil {
		return api.AuditCheck{}, api.Conflict("this server keeps no audit log")
	}
	seq, hash, seal, err := s.Store.AuditAnchor()
	if err != nil {
		return api.AuditCheck{}, err
	}
	witnesses := map[string]*api.AuditMark{}
	if seen != nil {
		witnesses["client"] = seen
	}
	exp, again, err := s.exportHead()
	if err != nil {
		return api.AuditCheck{}, err
	} else if exp != nil {
		witnesses["export"] = exp
	}
	v := audit.Verifier{Key: s.Audit.Key}
	out := api.AuditCheck{First: seq + 1, Last: seq}
	head := &api.AuditMark{Seq: seq, Hash: hash}
	at := map[int64]string{} // the hashes of the entries the witnesses name
	for _, w := range witnesses {
		at[w.Seq] = ""
	}
	check := v.Start(seq, hash, seal)
	if check == nil {
		check = s.Store.WalkAudit(func(e audit.Entry) error {
			if err := v.Next(e); err != nil {
				return err
			}
			out.Entries++
			out.Last = e.Seq
			head = &api.AuditMark{Seq: e.Seq, Hash: e.Hash}
			if _, ok := at[e.Seq]; ok {
				at[e.Seq] = e.Hash
			}
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
	if head.Seq > 0 {
		out.Head = head
	}
	if again > seq && out.Broken == nil {
		out.Broken = &api.AuditBreak{Seq: again, Reason: fmt.Sprintf("the export (audit_file) has entries from %d on twice: the log was cut back to entry %d and written again", again, again)}
	}
	for _, name := range slices.Sorted(maps.Keys(witnesses)) {
		out.Witnesses = append(out.Witnesses, name)
		if out.Broken != nil {
			continue
		}
		w := witnesses[name]
		who := map[string]string{"client": "this client saw it at its last check", "export": "the export (audit_file) has it"}[name]
		switch {
		case w.Seq <= seq:
			// Pruned since: nothing to hold it against.
		case w.Seq > out.Last && out.Entries == 0:
			out.Broken = &api.AuditBreak{Seq: seq + 1, Reason: fmt.Sprintf("the log has no entries, yet entry %d was in it (%s): %s missing", w.Seq, who, entries(seq+1, w.Seq))}
		case w.Seq > out.Last:
			out.Broken = &api.AuditBreak{Seq: out.Last + 1, Reason: fmt.Sprintf("the log ends at entry %d, yet entry %d was in it (%s): %s missing, cut off its end", out.Last, w.Seq, who, entries(out.Last+1, w.Seq))}
		case at[w.Seq] != w.Hash:
			out.Broken = &api.AuditBreak{Seq: w.Seq, Reason: fmt.Sprintf("entry %d is not the one that was there (%s): the log was cut and written again from there or before", w.Seq, who)}
		}
	}
	out.OK = out.Broken == nil
	return out, nil
}

// entries names the entries from to through.
func entries(from, through int64) string {
	if from == through {
		return fmt.Sprintf("entry %d is", from)
	}
	return fmt.Sprintf("entries %d to %d are", from, through)
}

// exportHead reads the export (audit_file), if there is one, whole: its
// last entry, and the first entry whose number it has had before (the log
// was cut back to it and written again; 0: none).
func (s *Service) exportHead() (last *api.AuditMark, again int64, err error) {
	if s.Cfg.AuditFile == "" {
		return nil, 0, nil
	}
	f, err := os.Open(s.Cfg.AuditFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	} else if err != nil {
		return nil, 0, fmt.Errorf("audit_file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e struct {
			Seq  int64  `json:"seq"`
			Hash string `json:"hash"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Seq == 0 {
			continue
		}
		if last != nil && e.Seq <= last.Seq && again == 0 {
			again = e.Seq
		}
		last = &api.AuditMark{Seq: e.Seq, Hash: e.Hash}
	}
	return last, again, sc.Err()
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
