package api

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// AuditCheck is what checking the audit log's chain found.
type AuditCheck struct {
	OK      bool        `json:"ok"`
	Entries int64       `json:"entries"`          // entries that chain, from First on
	First   int64       `json:"first"`            // the first entry kept (those before were pruned)
	Last    int64       `json:"last"`             // the last entry that chains
	Broken  *AuditBreak `json:"broken,omitempty"` // where it breaks, or what a witness says is missing
	// Head is the log's last entry: what a client keeps, as a witness
	// outside the server, and sends with its next check (seen).
	Head *AuditMark `json:"head,omitempty"`
	// Witnesses are what the log was held against: "client" (seen), and
	// "export" (the last entry of audit_file).
	Witnesses []string `json:"witnesses,omitempty"`
}

// AuditMark names one entry of the audit log: its number and hash.
type AuditMark struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// String is the mark as the verify route's seen parameter takes it.
func (m AuditMark) String() string { return fmt.Sprintf("%d:%s", m.Seq, m.Hash) }

// ParseAuditMark reads SEQ:HASH.
func ParseAuditMark(s string) (AuditMark, error) {
	seq, hash, ok := strings.Cut(s, ":")
	n, err := strconv.ParseInt(seq, 10, 64)
	if !ok || err != nil || n < 1 || len(hash) != 64 || strings.Trim(hash, "0123456789abcdef") != "" {
		return AuditMark{}, &Error{Code: CodeInvalid, Field: "seen", Message: "seen is SEQ:HASH, an entry's number and hash as the last check's head gave them"}
	}
	return AuditMark{Seq: n, Hash: hash}, nil
}

// AuditEntry is one entry of the audit log (see package audit).
type AuditEntry struct {
	Seq    int64           `json:"seq"`
	At     time.Time       `json:"at"`
	User   string          `json:"user,omitempty"` // empty: nobody signed in (a failed sign-in names whom it tried in Detail)
	Via    string          `json:"via,omitempty"`  // "token NAME", "session", "ssh key NAME", "link"
	Addr   string          `json:"addr,omitempty"`
	Agent  string          `json:"agent,omitempty"`
	Action string          `json:"action"`
	Box    string          `json:"box,omitempty"`
	Owner  string          `json:"box_owner,omitempty"` // the box's owner then: a member sees entries about their boxes
	Object string          `json:"object,omitempty"`    // another object, as KIND/NAME: "drives/cache"
	Detail json.RawMessage `json:"detail,omitempty"`
	Result string          `json:"result"` // "ok", or what went wrong
	Prev   string          `json:"prev"`
	Hash   string          `json:"hash"`
}

// AuditBreak is where the audit log stops chaining.
type AuditBreak struct {
	Seq    int64  `json:"seq"`
	Reason string `json:"reason"`
}

func (b *AuditBreak) Error() string { return fmt.Sprintf("entry %d: %s", b.Seq, b.Reason) }
