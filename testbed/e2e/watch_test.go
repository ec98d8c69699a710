package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
)

// A file watch on the real engine: what exec does in the box arrives as
// events (a rename as one), folders made later are watched too, a path
// the box user cannot read is refused; 10,000 files made at once while
// the client does not read neither stall paddockd nor go unreported;
// a closed watch leaves no watcher in the box.
func TestFileWatch(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := d.Client()
	if _, err := c.CreateBox(ctx, api.BoxPost{Name: "fw"}); err != nil {
		t.Fatal(err)
	}
	sh := func(script string) string {
		t.Helper()
		var out, errb bytes.Buffer
		code, err := c.Exec(ctx, "fw", api.ExecPost{Cmd: []string{"sh", "-c", script}}, client.ExecIO{Stdout: &out, Stderr: &errb})
		if err != nil || code != 0 {
			t.Fatalf("%s: %d %v %s", script, code, err, errb.String())
		}
		return out.String()
	}
	sh("mkdir -p /config/w")
	s, err := c.WatchDir(ctx, "fw", "/config/w", true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// next is the next event (a read bounded by the test's context).
	next := func() api.WatchEvent {
		t.Helper()
		_, data, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		var e api.WatchEvent
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	if e := next(); e.Type != "ready" || e.Path != "/config/w" || e.Watches != 1 {
		t.Fatalf("the first event: %+v", e)
	}
	sh("printf hello >/config/w/a.txt")
	wrote := time.Now()
	e := next()
	t.Logf("a write arrived %s after its exec returned", time.Since(wrote).Round(time.Millisecond))
	if e.Type != "created" || e.Path != "/config/w/a.txt" || e.Kind != "file" {
		t.Fatalf("a new file: %+v", e)
	}
	if e = next(); e.Type != "modified" || e.Path != "/config/w/a.txt" || e.Size == nil || *e.Size != 5 {
		t.Fatalf("its contents: %+v", e)
	}
	// A write whose close comes after the watch read the write: still
	// one event (CI's busy machine split printf's write and close into
	// two reads and two events).
	sh(`python3 -c "
import os, time
f = open('/config/w/a.txt', 'a')
f.write('!')
f.flush()
time.sleep(1)
f.close()
os.mkdir('/config/w/mark')
"`)
	if e = next(); e.Type != "modified" || e.Path != "/config/w/a.txt" || e.Size == nil || *e.Size != 6 {
		t.Fatalf("a write held open: %+v", e)
	}
	if e = next(); e.Type != "created" || e.Path != "/config/w/mark" || e.Kind != "dir" {
		t.Fatalf("after a write held open, its close: %+v", e)
	}
	sh("rmdir /config/w/mark")
	if e = next(); e.Type != "removed" || e.Path != "/config/w/mark" {
		t.Fatalf("a removal: %+v", e)
	}
	sh("mv /config/w/a.txt /config/w/b.txt")
	if e = next(); e.Type != "renamed" || e.From != "/config/w/a.txt" || e.Path != "/config/w/b.txt" || *e.Size != 6 {
		t.Fatalf("a rename: %+v", e)
	}
	sh("mkdir /config/w/sub && sleep 0.5 && printf 12 >/config/w/sub/c")
	if e = next(); e.Type != "created" || e.Path != "/config/w/sub" || e.Kind != "dir" {
		t.Fatalf("a new folder: %+v", e)
	}
	if e = next(); e.Type != "created" || e.Path != "/config/w/sub/c" {
		t.Fatalf("a file in the new folder: %+v", e)
	}
	if e = next(); e.Type != "modified" || e.Path != "/config/w/sub/c" {
		t.Fatalf("its contents: %+v", e)
	}
	sh("rm /config/w/b.txt")
	if e = next(); e.Type != "removed" || e.Path != "/config/w/b.txt" {
		t.Fatalf("a removal: %+v", e)
	}

	// 10,000 files at once, the client reading nothing meanwhile:
	// paddockd answers other calls, and every event is either delivered
	// or counted as lost.
	sh(`mkdir /config/w/many && cd /config/w/many && python3 -c "
for i in range(10000):
    open('f%d' % i, 'w').close()
"`)
	if _, err := c.Box(ctx, "fw"); err != nil {
		t.Fatalf("paddockd during the flood: %v", err)
	}
	sh("printf end >/config/w/last")
	created, dropped, overflow := 0, int64(0), false
	for {
		e := next()
		switch {
		case e.Type == "created" && strings.HasPrefix(e.Path, "/config/w/many/f"):
			created++
		case e.Type == "dropped":
			dropped += e.Count
		case e.Type == "overflow":
			overflow = true
		}
		if e.Path == "/config/w/last" && e.Type == "modified" {
			break
		}
	}
	t.Logf("10,000 files: %d created events delivered, %d dropped by paddockd, kernel overflow %v", created, dropped, overflow)
	if !overflow && int64(created)+dropped < 10000 {
		t.Fatalf("10,000 files made: %d events delivered and %d said dropped, and no overflow said", created, dropped)
	}
	if created == 10000 && dropped == 0 && !overflow {
		t.Log("(every event was delivered: this client kept up)")
	}

	// Refused: what the box user may not read, what is not there.
	for _, bad := range []struct {
		path, code, says string
	}{
		{"/root", api.CodeForbidden, "box fw's user may not read /root"},
		{"/config/nosuch", api.CodeNotFound, "no /config/nosuch in box fw"},
		{"config", api.CodeInvalid, "must be absolute"},
	} {
		_, err := c.WatchDir(ctx, "fw", bad.path, false)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != bad.code || !strings.Contains(ae.Message, bad.says) {
			t.Errorf("a watch on %s: %v, want %s saying %q", bad.path, err, bad.code, bad.says)
		}
	}

	// A box has at most 8 watches; a closed one leaves no watcher.
	var more []*client.EventStream
	for i := 0; i < 7; i++ {
		w, err := c.WatchDir(ctx, "fw", "/config", false)
		if err != nil {
			t.Fatalf("watch %d: %v", i+2, err)
		}
		more = append(more, w)
	}
	if _, err := c.WatchDir(ctx, "fw", "/config", false); err == nil || !strings.Contains(err.Error(), "has 8 file watches, the most it may") {
		t.Fatalf("a ninth watch: %v", err)
	}
	watchers := func() string {
		return strings.TrimSpace(sh(`pgrep -fc '^python3 -c # paddock: file watc[h]' || true`))
	}
	if n := watchers(); n != "8" {
		t.Fatalf("%s watchers in the box for 8 watches", n)
	}
	s.Close()
	for _, w := range more {
		w.Close()
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		n := watchers()
		if n == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s watchers left in the box after their streams closed", n)
		}
	}
	if w, err := c.WatchDir(ctx, "fw", "/config", false); err != nil {
		t.Fatalf("a watch once the others closed: %v", err)
	} else {
		w.Close()
	}
}
