package service

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Entries recorded while a write is under way are written together, in
// one transaction, by the first of them to wait; each Record returns once
// its entry is written; the log still chains entry by entry, and the
// export file has every entry once, in the log's order.
func TestAuditWritesWhatWaitedTogether(t *testing.T) {
	s, _ := newService(t)
	exp, err := os.Create(filepath.Join(t.TempDir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Close()
	a := &Auditor{Key: audit.Key("a key of thirty-two bytes, for t"), Export: exp}
	s.Audit = a

	// The store's one connection held: the first Record's write waits
	// for it, and the others queue behind that write.
	held, release := make(chan struct{}), make(chan struct{})
	readDone := make(chan error)
	go func() {
		readDone <- s.Store.Read(func(*store.Tx) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	const n = 50
	var wg sync.WaitGroup
	var written sync.Map // user -> whether the entry was in the log when its Record returned
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := fmt.Sprintf("u%d", i)
			s.Record(audit.Entry{User: user, Via: "token", Action: "box.exec", Result: audit.OK})
			es, err := s.Store.Audit(store.AuditFilter{User: user})
			written.Store(user, err == nil && len(es) == 1)
		}()
	}
	waited := func() int {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.queue)
	}
	for deadline := time.Now().Add(time.Minute); waited() < n-1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d Records waiting after a minute", waited(), n-1)
		}
	}
	close(release)
	if err := <-readDone; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if a.batches != 2 {
		t.Fatalf("%d entries, one written while the others waited, took %d transactions; want 2 (the first alone, then all that waited)", n, a.batches)
	}
	for i := range n {
		if ok, _ := written.Load(fmt.Sprintf("u%d", i)); ok != true {
			t.Fatalf("u%d's Record returned before its entry was in the log", i)
		}
	}

	// Nothing under way: a Record writes its own entry at once.
	s.Record(audit.Entry{User: "alone", Action: "box.exec", Result: audit.OK})
	if a.batches != 3 {
		t.Fatalf("a lone entry: %d transactions in all, want 3", a.batches)
	}

	es, err := s.Store.Audit(store.AuditFilter{})
	if err != nil || len(es) != n+1 {
		t.Fatalf("the log: %d entries, %v; want %d", len(es), err, n+1)
	}
	v := audit.Verifier{Key: a.Key}
	if err := v.Start(0, "", ""); err != nil {
		t.Fatal(err)
	}
	users := map[string]bool{}
	for _, e := range es {
		if err := v.Next(e); err != nil {
			t.Fatalf("the log does not chain: %v", err)
		}
		users[e.User] = true
	}
	if len(users) != n+1 || !users["alone"] {
		t.Fatalf("the log has %d distinct users, want %d", len(users), n+1)
	}
	if last := es[len(es)-1]; last.User != "alone" {
		t.Fatalf("the last entry is %s's, want the one recorded last", last.User)
	}

	f, err := os.Open(exp.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var lines int
	for sc.Scan() {
		var e audit.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("export line %d: %v", lines+1, err)
		}
		if lines >= len(es) || e.Seq != es[lines].Seq || e.Hash != es[lines].Hash {
			t.Fatalf("export line %d is entry %d, want %d as in the log", lines+1, e.Seq, lines+1)
		}
		lines++
	}
	if lines != len(es) {
		t.Fatalf("the export file has %d lines, the log %d entries", lines, len(es))
	}
}
