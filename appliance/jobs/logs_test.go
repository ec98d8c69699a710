package jobs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/store"
)

// A job that prints far more than the bound keeps only the tail on disk,
// marked with how much was dropped; a reader gets the tail, and one that
// followed from the start read on across the moves without error.
func TestJobLogKeepsTheTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j1.log")
	const bound = 4 << 10
	w, err := newJobLogWriter(path, bound)
	if err != nil {
		t.Fatal(err)
	}
	follower, err := openJobLog(path)
	if err != nil {
		t.Fatal(err)
	}
	var followed bytes.Buffer
	var all strings.Builder
	for i := 0; i < 2000; i++ {
		line := fmt.Sprintf("line %05d\n", i)
		all.WriteString(line)
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			io.Copy(&followed, follower) // a follower reading as it goes
		}
	}
	w.Close()
	io.Copy(&followed, follower)
	follower.Close()

	var onDisk int64
	for _, p := range []string{path, path + ".1"} {
		if fi, err := os.Stat(p); err == nil {
			onDisk += fi.Size()
		}
	}
	if onDisk > bound+200 {
		t.Fatalf("%d bytes on disk for a bound of %d", onDisk, bound)
	}
	r, err := openJobLog(path)
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := io.ReadAll(r)
	r.Close()
	if !strings.HasSuffix(string(kept), "line 01999\n") || !strings.Contains(string(kept), "bytes of earlier output dropped") {
		t.Fatalf("kept %d bytes: %.200s ... %s", len(kept), kept, kept[max(0, len(kept)-40):])
	}
	if !strings.HasPrefix(followed.String(), "line 00000\n") || !strings.HasSuffix(followed.String(), "line 01999\n") {
		t.Fatalf("the follower read %d bytes: %.100s ... ", followed.Len(), followed.String())
	}
	if len(all.String()) < 5*bound {
		t.Fatal("the test wrote too little to pass the bound")
	}
}

// A user's job logs are kept within job_logs_per_user_mib: the logs of
// their oldest ended jobs are replaced by a note until the rest fit;
// newer logs, running jobs' logs and other users' logs stay.
func TestJobLogsPerUserBound(t *testing.T) {
	jb, s, _ := withCore(t)
	s.Cfg.JobLogsPerUserMiB = 1
	mia, _ := s.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	bob, _ := s.Store.CreateUser(store.User{Name: "bob", Role: store.RoleMember, Created: time.Now()})
	for _, b := range []struct {
		name string
		u    store.User
	}{{"mbox", mia}, {"bbox", bob}} {
		if _, err := s.CreateBox(caller.With(context.Background(), b.u), api.BoxPost{Name: b.name}); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(jb.jobsDir(), 0o700)
	t0 := time.Now().Add(-time.Hour)
	add := func(id, box string, ended int, kib int) {
		t.Helper()
		j := store.Job{ID: id, Box: box, Cmd: []string{"x"}, State: "running", Started: t0}
		if err := s.Store.AddJob(j); err != nil {
			t.Fatal(err)
		}
		if ended >= 0 {
			code := 0
			if err := s.Store.EndJob(id, "exited", &code, t0.Add(time.Duration(ended)*time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(jb.jobLog(id), bytes.Repeat([]byte("x"), kib<<10), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// mia: 4 ended jobs of 300 KiB and a running one of 300 KiB (1.5 MiB);
	// bob: one old ended job of 900 KiB (under the bound alone).
	add("jm1", "mbox", 1, 300)
	add("jm2", "mbox", 2, 300)
	add("jm3", "mbox", 3, 300)
	add("jm4", "mbox", 4, 300)
	add("jmrun", "mbox", -1, 300)
	add("jb1", "bbox", 0, 900)
	jb.pruneJobLogs(mia.ID)
	size := func(id string) int64 {
		fi, err := os.Stat(jb.jobLog(id))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	for id, kept := range map[string]bool{"jm1": false, "jm2": false, "jm3": true, "jm4": true, "jmrun": true, "jb1": true} {
		if got := size(id) > 100<<10; got != kept {
			t.Errorf("%s kept: %v, want %v (%d bytes)", id, got, kept, size(id))
		}
	}
	b, _ := os.ReadFile(jb.jobLog("jm1"))
	if !strings.Contains(string(b), "job_logs_per_user_mib = 1") {
		t.Errorf("a pruned log says: %q", b)
	}
	var total int64
	for _, id := range []string{"jm1", "jm2", "jm3", "jm4", "jmrun"} {
		total += size(id)
	}
	if total > 1<<20 {
		t.Errorf("mia keeps %d bytes of logs, over 1 MiB", total)
	}
}
