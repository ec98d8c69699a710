// Package audit is Paddock's record of who did what: every request that
// changes something or reaches into a box, every sign-in (and failed
// one), every terminal, desktop and SSH session's opening and closing.
//
// An entry says who (the user, and the token, session or key they used),
// from where (address, user agent), what (an action such as
// "box.create"), about which box or object, with what details (an exec's
// argv, a prompt's task, a push's path and size; never a secret's value
// nor a command's output), when, and the result ("ok", or the error).
//
// The log is append-only and tamper-evident: each entry carries a
// keyed hash (HMAC-SHA256, with a key kept in the state folder beside the
// database, not in it) over its own fields and the previous entry's
// hash. An entry edited in the database, one taken out of the middle, or
// a run of them taken off the front without the server's own pruning, no
// longer chains, and Verify names the first place it breaks. Someone who
// can read the key file can forge a whole new chain, and entries cut off
// the end leave no gap: the log's end is held against witnesses outside
// the server (the head each client kept from its last check, and the
// JSON-lines export; see the service's VerifyAudit).
//
// Old entries go after the retention period (Prune in package store): the
// last one pruned is kept as the anchor, sealed with the same key, that
// the first remaining entry must chain to.
package audit

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

// Entry is one recorded action.
type Entry = api.AuditEntry

// OK is the result of an action that succeeded.
const OK = "ok"

// Key seals entries.
type Key []byte

// Seal is the hash of e, chained to prev: over every field but Hash,
// with e.Prev taken as prev.
func (k Key) Seal(e Entry, prev string) string {
	m := hmac.New(sha256.New, k)
	for _, f := range []string{
		strconv.FormatInt(e.Seq, 10), e.At.UTC().Format(time.RFC3339Nano), e.User, e.Via, e.Addr, e.Agent,
		e.Action, e.Box, e.Owner, e.Object, string(e.Detail), e.Result, prev,
	} {
		// Each field with its length, so that no two entries' fields
		// run together the same way.
		fmt.Fprintf(m, "%d:%s;", len(f), f)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// Anchor seals the place a pruned log starts from: the last pruned
// entry's sequence number and hash.
func (k Key) Anchor(seq int64, hash string) string {
	return k.Seal(Entry{Seq: seq, Action: "audit.anchor", Result: hash}, "")
}

// Break is where a log stops chaining.
type Break = api.AuditBreak

// Verifier checks a log entry by entry, in order.
type Verifier struct {
	Key      Key
	prev     string
	prevSeq  int64
	started  bool
	anchored bool
}

// Start sets where the log starts: after the anchor (seq, hash, and its
// seal) when it was pruned; seq 0 when it never was.
func (v *Verifier) Start(seq int64, hash, seal string) error {
	v.started = true
	v.prevSeq, v.prev = seq, hash
	if seq == 0 {
		return nil
	}
	if !hmac.Equal([]byte(seal), []byte(v.Key.Anchor(seq, hash))) {
		return &Break{Seq: seq + 1, Reason: "the anchor the log starts from is not the server's own: entries before it were taken out by hand"}
	}
	return nil
}

// Next checks the next entry; the first error is where the log breaks.
func (v *Verifier) Next(e Entry) error {
	if !v.started {
		v.started = true
	}
	switch {
	case e.Seq != v.prevSeq+1:
		return &Break{Seq: v.prevSeq + 1, Reason: fmt.Sprintf("missing: the next entry is %d", e.Seq)}
	case e.Prev != v.prev:
		return &Break{Seq: e.Seq, Reason: "it does not chain to the entry before it"}
	case !hmac.Equal([]byte(e.Hash), []byte(v.Key.Seal(e, e.Prev))):
		return &Break{Seq: e.Seq, Reason: "its contents are not what was recorded (edited after the fact)"}
	}
	v.prevSeq, v.prev = e.Seq, e.Hash
	return nil
}

// Record is the entry a request is building: the server starts it, the
// code that learns who and what fills it in, and the server writes it
// when the request ends. A session that goes on past its start (an
// exec, a terminal, a desktop) writes its opening at Open, and the entry
// at its end is then its close (action ACTION.end).
type Record struct {
	mu     sync.Mutex
	e      Entry
	detail map[string]any
	skip   bool
	opened bool
	write  func(Entry)
}

type recordKey struct{}

// With puts r in ctx.
func With(ctx context.Context, r *Record) context.Context {
	return context.WithValue(ctx, recordKey{}, r)
}

// From is the record of ctx's request (nil: none; every method of a nil
// record does nothing).
func From(ctx context.Context) *Record {
	r, _ := ctx.Value(recordKey{}).(*Record)
	return r
}

// NewRecord starts the record of action, which write will write.
func NewRecord(action string, write func(Entry)) *Record {
	return &Record{e: Entry{Action: action, Result: OK}, write: write}
}

func (r *Record) set(f func()) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

// Who says who acted and how they proved it.
func (r *Record) Who(user, via string) { r.set(func() { r.e.User, r.e.Via = user, via }) }

// Where says where the request came from.
func (r *Record) Where(addr, agent string) { r.set(func() { r.e.Addr, r.e.Agent = addr, agent }) }

// About names the box the action is about (and its owner's name, when
// known: else the writer looks it up).
func (r *Record) About(box, owner string) { r.set(func() { r.e.Box, r.e.Owner = box, owner }) }

// Object names another object the action is about, as KIND/NAME.
func (r *Record) Object(kind, name string) { r.set(func() { r.e.Object = kind + "/" + name }) }

// Note adds a detail.
func (r *Record) Note(key string, v any) {
	r.set(func() {
		if r.detail == nil {
			r.detail = map[string]any{}
		}
		r.detail[key] = v
	})
}

// Result sets the result (OK unless said).
func (r *Record) Result(s string) { r.set(func() { r.e.Result = s }) }

// Fail sets the result to s unless another than OK was said.
func (r *Record) Fail(s string) {
	r.set(func() {
		if r.e.Result == OK {
			r.e.Result = s
		}
	})
}

// Skip leaves this request out of the log: a device login's poll while it
// waits (it is polled every few seconds).
func (r *Record) Skip() { r.set(func() { r.skip = true }) }

// Box is the box named so far.
func (r *Record) Box() (name string) {
	r.set(func() { name = r.e.Box })
	return name
}

func (r *Record) entry() Entry {
	e := r.e
	if len(r.detail) > 0 {
		e.Detail, _ = json.Marshal(r.detail)
	}
	return e
}

// Open writes the session's opening now (result "opened").
func (r *Record) Open() {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.opened || r.skip {
		r.mu.Unlock()
		return
	}
	r.opened = true
	e := r.entry()
	e.Result = "opened"
	r.mu.Unlock()
	r.write(e)
}

// Finish writes the entry, as it stands, once.
func (r *Record) Finish() {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.skip {
		r.mu.Unlock()
		return
	}
	r.skip = true
	e := r.entry()
	if r.opened {
		e.Action += ".end"
	}
	r.mu.Unlock()
	r.write(e)
}
