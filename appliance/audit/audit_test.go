package audit

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// chain makes n sealed entries, as the store would.
func chain(k Key, n int) []Entry {
	var es []Entry
	prev := ""
	for i := 1; i <= n; i++ {
		e := Entry{Seq: int64(i), At: time.Date(2026, 12, 3, 10, 0, i, 0, time.UTC), User: "mia", Via: "token laptop",
			Action: "exec", Box: "web", Owner: "mia", Detail: json.RawMessage(`{"argv":["make","test"]}`), Result: OK}
		e.Prev = prev
		e.Hash = k.Seal(e, prev)
		prev = e.Hash
		es = append(es, e)
	}
	return es
}

// verify runs a Verifier over es from the start (or an anchor).
func verify(k Key, es []Entry, anchorSeq int64, anchorHash, seal string) error {
	v := Verifier{Key: k}
	if err := v.Start(anchorSeq, anchorHash, seal); err != nil {
		return err
	}
	for _, e := range es {
		if err := v.Next(e); err != nil {
			return err
		}
	}
	return nil
}

func breaksAt(t *testing.T, err error, seq int64, why string) {
	t.Helper()
	var b *Break
	if !errors.As(err, &b) || b.Seq != seq || !strings.Contains(b.Reason, why) {
		t.Fatalf("got %v, want a break at entry %d (%s)", err, seq, why)
	}
}

// A log as written verifies; any field of any entry edited afterwards,
// an entry taken out, or entries reordered, is found, at its place.
func TestChainFindsEdits(t *testing.T) {
	k := Key("0123456789abcdef0123456789abcdef")
	if err := verify(k, chain(k, 5), 0, "", ""); err != nil {
		t.Fatalf("the log as written: %v", err)
	}
	edits := map[string]func(*Entry){
		"user":   func(e *Entry) { e.User = "boss" },
		"action": func(e *Entry) { e.Action = "pull" },
		"box":    func(e *Entry) { e.Box = "other" },
		"detail": func(e *Entry) { e.Detail = json.RawMessage(`{"argv":["true"]}`) },
		"result": func(e *Entry) { e.Result = "exit 0" },
		"time":   func(e *Entry) { e.At = e.At.Add(time.Hour) },
		"addr":   func(e *Entry) { e.Addr = "10.0.0.9" },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			es := chain(k, 5)
			edit(&es[2])
			breaksAt(t, verify(k, es, 0, "", ""), 3, "edited")
		})
	}
	es := chain(k, 5)
	breaksAt(t, verify(k, append(es[:2:2], es[3:]...), 0, "", ""), 3, "missing")
	es = chain(k, 5)
	es[1], es[2] = es[2], es[1]
	breaksAt(t, verify(k, es, 0, "", ""), 2, "missing")
	// A new chain made without the key does not pass for the server's.
	breaksAt(t, verify(k, chain(Key("another key, 32 bytes long......"), 5), 0, "", ""), 1, "edited")
}

// A pruned log starts from its sealed anchor: the rest verifies; entries
// taken off its front by hand, with an anchor made up to match, do not.
func TestAnchor(t *testing.T) {
	k := Key("0123456789abcdef0123456789abcdef")
	es := chain(k, 6)
	if err := verify(k, es[3:], 3, es[2].Hash, k.Anchor(3, es[2].Hash)); err != nil {
		t.Fatalf("pruned through 3: %v", err)
	}
	// Two more taken off, the anchor's place moved without its seal.
	breaksAt(t, verify(k, es[5:], 5, es[4].Hash, k.Anchor(3, es[2].Hash)), 6, "anchor")
	// Taken off with the old anchor left: entry 4 is missing.
	breaksAt(t, verify(k, es[5:], 3, es[2].Hash, k.Anchor(3, es[2].Hash)), 4, "missing")
}

// A record builds its entry from what each part learns; a session's
// record writes its opening and then its end.
func TestRecordOpensAndEnds(t *testing.T) {
	var got []Entry
	r := NewRecord("terminal", func(e Entry) { got = append(got, e) })
	r.Who("mia", "session")
	r.About("web", "mia")
	r.Note("rows", 40)
	r.Open()
	r.Open()
	r.Fail("101 Switching Protocols")
	r.Finish()
	r.Finish()
	if len(got) != 2 || got[0].Action != "terminal" || got[0].Result != "opened" || got[1].Action != "terminal.end" || got[1].Result != "101 Switching Protocols" ||
		got[1].User != "mia" || string(got[1].Detail) != `{"rows":40}` {
		t.Fatalf("entries %+v", got)
	}
	var none *Record
	none.Who("x", "y") // a request with no record: nothing happens
	none.Finish()
}
