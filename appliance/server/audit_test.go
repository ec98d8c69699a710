package server

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Every route of the real table that changes something (any method but
// GET) is recorded, and so are the reads that reach into a box; each,
// called, writes an entry of its action whatever it answered, with the
// caller's name when a token said who it was; and no other route writes
// one.
func TestEveryChangeIsRecorded(t *testing.T) {
	ts, srv, svc := wired(t)
	owner := addOwner(t, svc)
	miaBrowser := invite(t, ts.URL, owner, "mia")
	mia := deviceLogin(t, ts.URL, miaBrowser)

	inTable := map[string]bool{}
	for _, r := range srv.Routes() {
		inTable[r.Pattern] = true
		method, _, ok := strings.Cut(r.Pattern, " ")
		if ok && method != "GET" && auditActions[r.Pattern] == "" {
			t.Errorf("%s changes something and is not recorded: give it an action in auditActions", r.Pattern)
		}
	}
	for p := range auditActions {
		if !inTable[p] {
			t.Errorf("auditActions names %q, which is no route", p)
		}
	}

	last := func() int64 {
		es, err := svc.Store.Audit(store.AuditFilter{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			return 0
		}
		return es[0].Seq
	}
	// A box of mia's with a desktop, for the routes a ticket opens.
	if code, e := call(t, ts, mia, "POST", "/v1/boxes", `{"name":"deskbox","desktop":true}`); code != 201 {
		t.Fatalf("mia's desktop box: %d %+v", code, e)
	}
	recorded := 0
	// The logouts last: they end mia's token and session.
	routes := slices.Clone(srv.Routes())
	slices.SortStableFunc(routes, func(a, b route.Route) int {
		out := func(r route.Route) bool { return strings.HasSuffix(r.Pattern, "/logout") }
		switch {
		case out(a) && !out(b):
			return 1
		case out(b) && !out(a):
			return -1
		}
		return 0
	})
	for _, r := range routes {
		fill, query := func(string, string) string { return "x" }, ""
		if r.Access == route.Ticket {
			req, _ := http.NewRequest("POST", ts.URL+"/v1/boxes/deskbox/desktop", nil)
			req.Header.Set("Authorization", "Bearer "+mia)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var tk api.DesktopTicket
			json.NewDecoder(resp.Body).Decode(&tk)
			resp.Body.Close()
			if tk.Ticket == "" {
				t.Fatalf("no desktop ticket for %s: %d", r.Pattern, resp.StatusCode)
			}
			fill, query = func(string, string) string { return "deskbox" }, "ticket="+tk.Ticket
		}
		before := last()
		req := request(t, ts.URL, r, fill)
		req.URL.RawQuery = query
		switch r.Access {
		case route.Session:
			for _, c := range miaBrowser.Jar.Cookies(req.URL) {
				req.AddCookie(c)
			}
			req.Header.Set("Origin", ts.URL)
		case route.Token:
			req.Header.Set("Authorization", "Bearer "+mia)
		}
		// A stream (events, a followed log) answers, then goes on: one of
		// the routes not recorded is cut after a while, as its reader
		// would; a recorded one is waited for, however long it takes.
		ctx, cancel := context.WithCancel(context.Background())
		if auditActions[r.Pattern] == "" {
			ctx, cancel = context.WithTimeout(context.Background(), 3*time.Second)
		}
		code, body, _ := do(t, req.WithContext(ctx))
		cancel()
		// Without credentials, a route that needs them writes nothing:
		// no one is known, and a flood of such requests must not fill
		// the log.
		if r.Access != route.Public {
			anon := request(t, ts.URL, r, func(string, string) string { return "x" })
			anon.Header.Set("Origin", ts.URL)
			do(t, anon)
		}
		es, err := svc.Store.Audit(store.AuditFilter{After: before})
		if err != nil {
			t.Fatal(err)
		}
		action := auditActions[r.Pattern]
		if action == "" {
			if len(es) > 0 {
				t.Errorf("%s (not recorded) wrote %+v", r.Pattern, es)
			}
			continue
		}
		recorded++
		i := slices.IndexFunc(es, func(e audit.Entry) bool { return e.Action == action || e.Action == action+".end" })
		if i < 0 {
			t.Errorf("%s (%d %.100s) wrote no %q entry: %+v", r.Pattern, code, body, action, es)
			continue
		}
		e := es[i]
		if (r.Access == route.Token || r.Access == route.Ticket) && e.User != "mia" {
			t.Errorf("%s: the entry says the user was %q, not mia", r.Pattern, e.User)
		}
		if r.Access != route.Public && slices.ContainsFunc(es, func(e audit.Entry) bool { return e.User == "" }) {
			t.Errorf("%s: a request without credentials was recorded: %+v", r.Pattern, es)
		}
		if code >= 400 && e.Result == audit.OK {
			t.Errorf("%s answered %d and the entry says %q", r.Pattern, code, e.Result)
		}
		if e.Addr == "" {
			t.Errorf("%s: the entry says not where the request came from", r.Pattern)
		}
	}
	if recorded < 50 {
		t.Fatalf("only %d routes recorded: the table looks short", recorded)
	}
}

// The owner reads the whole log; a member, their own actions and those
// about their boxes; the details say what was done (an exec's argv);
// the chain verifies, and a row edited in the database is found at its
// place.
func TestAuditLogReadsAndVerifies(t *testing.T) {
	ts, _, svc := wired(t)
	owner := addOwner(t, svc)
	mia := deviceLogin(t, ts.URL, invite(t, ts.URL, owner, "mia"))
	must := func(tok, method, path, body string) {
		t.Helper()
		if code, e := call(t, ts, tok, method, path, body); code >= 300 {
			t.Fatalf("%s %s: %d %+v", method, path, code, e)
		}
	}
	must(owner, "POST", "/v1/boxes", `{"name":"bossbox"}`)
	must(mia, "POST", "/v1/boxes", `{"name":"miabox"}`)
	must(mia, "POST", "/v1/boxes/miabox/jobs", `{"cmd":["make","test"]}`)
	must(owner, "POST", "/v1/boxes/miabox/stop", ``)

	read := func(tok, query string) []api.AuditEntry {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+"/v1/audit"+query, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var es []api.AuditEntry
		if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&es) != nil {
			t.Fatalf("GET /v1/audit%s: %d", query, resp.StatusCode)
		}
		return es
	}
	has := func(es []api.AuditEntry, user, action, box string) bool {
		return slices.ContainsFunc(es, func(e api.AuditEntry) bool { return e.User == user && e.Action == action && e.Box == box })
	}
	all := read(owner, "")
	for _, w := range [][3]string{{"boss", "box.create", "bossbox"}, {"mia", "box.create", "miabox"}, {"boss", "box.stop", "miabox"}, {"mia", "job.start", "miabox"}} {
		if !has(all, w[0], w[1], w[2]) {
			t.Errorf("the owner does not see %v", w)
		}
	}
	miaSees := read(mia, "")
	if has(miaSees, "boss", "box.create", "bossbox") {
		t.Error("a member sees the owner's action on the owner's box")
	}
	if !has(miaSees, "boss", "box.stop", "miabox") || !has(miaSees, "mia", "box.create", "miabox") {
		t.Error("a member does not see what was done to their box, or what they did")
	}
	if es := read(owner, "?box=miabox&action=job"); len(es) != 1 || string(es[0].Detail) != `{"argv":["make","test"]}` {
		t.Errorf("the job's entry: %+v", es)
	}
	if code, _ := call(t, ts, mia, "GET", "/v1/audit/verify", ""); code != http.StatusForbidden {
		t.Errorf("a member verified the log: %d", code)
	}

	verify := func() api.AuditCheck {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+"/v1/audit/verify", nil)
		req.Header.Set("Authorization", "Bearer "+owner)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var c api.AuditCheck
		json.NewDecoder(resp.Body).Decode(&c)
		return c
	}
	if c := verify(); !c.OK || c.Entries < 8 {
		t.Fatalf("the log as written: %+v", c)
	}
	// Pruned (as retention does), the rest chains to the anchor.
	cut := read(owner, "")
	pruned, err := svc.Store.PruneAudit(cut[len(cut)-1].At.Add(time.Millisecond), svc.Audit.Key.Anchor)
	if err != nil || pruned != int64(len(cut)) {
		t.Fatalf("pruned %d of %d: %v", pruned, len(cut), err)
	}
	must(mia, "POST", "/v1/boxes/miabox/start", "")
	must(mia, "POST", "/v1/boxes/miabox/jobs", `{"cmd":["make","test"]}`)
	if c := verify(); !c.OK || c.First != cut[len(cut)-1].Seq+1 {
		t.Fatalf("after the prune: %+v", c)
	}
	// Someone with the database edits the job's argv (past the trigger
	// that refuses updates).
	jobs := read(owner, "?action=job.start")
	job := jobs[len(jobs)-1]
	if job.Seq <= cut[len(cut)-1].Seq {
		t.Fatalf("the job's entry %d was pruned", job.Seq)
	}
	db, err := sql.Open("sqlite", filepath.Join(svc.Cfg.StateDir, "paddock.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE audit SET detail = '{"argv":["true"]}' WHERE seq = ?`, job.Seq); err == nil {
		t.Fatal("the database took an update of the audit log")
	}
	if _, err := db.Exec(`DROP TRIGGER audit_append_only`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE audit SET detail = '{"argv":["true"]}' WHERE seq = ?`, job.Seq); err != nil {
		t.Fatal(err)
	}
	if c := verify(); c.OK || c.Broken == nil || c.Broken.Seq != job.Seq || !strings.Contains(c.Broken.Reason, "edited") {
		t.Fatalf("an edited entry %d: %+v", job.Seq, c)
	}
	// The first entry left taken out by hand: the anchor no longer leads
	// to what is left.
	first := cut[len(cut)-1].Seq + 1
	if _, err := db.Exec(`DELETE FROM audit WHERE seq = ?`, first); err != nil {
		t.Fatal(err)
	}
	if c := verify(); c.OK || c.Broken == nil || c.Broken.Seq != first || !strings.Contains(c.Broken.Reason, "missing") {
		t.Fatalf("entry %d taken out: %+v", first, c)
	}
}
