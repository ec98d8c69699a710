package access

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// AuditLog lists the entries the caller may see: owners and admins, all;
// a member, their own actions and those about their boxes.
func (a *Access) AuditLog(ctx context.Context, f store.AuditFilter) ([]audit.Entry, error) {
	if u, ok := caller.From(ctx); ok && !u.SeesAll() {
		f.Member, f.MemberSince = u.Name, u.Created
	}
	es, err := a.store.Audit(f)
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
func (a *Access) VerifyAudit(ctx context.Context, seen *api.AuditMark) (api.AuditCheck, error) {
	if err := caller.RequireAdmin(ctx, "verify the audit log"); err != nil {
		return api.AuditCheck{}, err
	}
	if a.core.AuditKey() == nil {
		return api.AuditCheck{}, api.Conflict("this server keeps no audit log")
	}
	seq, hash, seal, err := a.store.AuditAnchor()
	if err != nil {
		return api.AuditCheck{}, err
	}
	witnesses := map[string]*api.AuditMark{}
	if seen != nil {
		witnesses["client"] = seen
	}
	exp, again, err := a.exportHead()
	if err != nil {
		return api.AuditCheck{}, err
	} else if exp != nil {
		witnesses["export"] = exp
	}
	v := audit.Verifier{Key: *a.core.AuditKey()}
	out := api.AuditCheck{First: seq + 1, Last: seq}
	head := &api.AuditMark{Seq: seq, Hash: hash}
	at := map[int64]string{} // the hashes of the entries the witnesses name
	for _, w := range witnesses {
		at[w.Seq] = ""
	}
	check := v.Start(seq, hash, seal)
	if check == nil {
		check = a.store.WalkAudit(func(e audit.Entry) error {
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
func (a *Access) exportHead() (last *api.AuditMark, again int64, err error) {
	if a.cfg.AuditFile == "" {
		return nil, 0, nil
	}
	f, err := os.Open(a.cfg.AuditFile)
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
func (a *Access) PruneAudit() {
	if a.core.AuditKey() == nil || a.cfg.AuditDays <= 0 {
		return
	}
	before := a.core.Time().Add(-time.Duration(a.cfg.AuditDays) * 24 * time.Hour)
	n, err := a.store.PruneAudit(before, a.core.AuditKey().Anchor)
	if err != nil {
		a.log.Error("pruning the audit log", "err", err)
	} else if n > 0 {
		a.log.Info("audit log pruned", "entries", n, "older than", before)
	}
}
